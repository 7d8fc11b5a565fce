package blob_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/baton-agent/baton/internal/llm/blob"
)

// The body is the marshaled request with each payload's base64 where its
// token stood, of the length it says, readable again for a retry.
func TestSwapWritesEachPayloadInPlace(t *testing.T) {
	s := blob.New()
	big := bytes.Repeat([]byte{0, 1, 2, 3, 250, 251, 252}, 30000) // several chunks, not a multiple of 3
	small := []byte("hi")
	req := map[string]any{"messages": []any{
		map[string]any{"image_url": "data:image/png;base64," + s.Token(small)},
		map[string]any{"data": s.Token(big), "text": "a _ and batonblob in the words"},
	}}
	marshaled, _ := json.Marshal(req)
	if len(marshaled) > 300 {
		t.Fatalf("the marshaled request holds the payloads: %d bytes", len(marshaled))
	}
	r, _ := http.NewRequest("POST", "http://127.0.0.1/", bytes.NewReader(marshaled))
	if err := s.Swap(r); err != nil {
		t.Fatal(err)
	}
	if err := iotest.TestReader(r.Body, want(t, marshaled, s, small, big)); err != nil {
		t.Fatal(err)
	}
	body, _ := r.GetBody()
	got, _ := io.ReadAll(body)
	if int64(len(got)) != r.ContentLength {
		t.Errorf("ContentLength %d, body %d bytes", r.ContentLength, len(got))
	}
	var back struct {
		Messages []map[string]string `json:"messages"`
	}
	if err := json.Unmarshal(got, &back); err != nil {
		t.Fatalf("the body is not JSON: %v", err)
	}
	if back.Messages[0]["image_url"] != "data:image/png;base64,"+base64.StdEncoding.EncodeToString(small) {
		t.Errorf("the data URL is %q", back.Messages[0]["image_url"])
	}
	if d, _ := base64.StdEncoding.DecodeString(back.Messages[1]["data"]); !bytes.Equal(d, big) {
		t.Error("the large payload did not come back intact")
	}
	if back.Messages[1]["text"] != "a _ and batonblob in the words" {
		t.Errorf("text around the tokens changed: %q", back.Messages[1]["text"])
	}
}

func want(t *testing.T, marshaled []byte, s *blob.Set, payloads ...[]byte) []byte {
	t.Helper()
	out := string(marshaled)
	_ = s
	for _, p := range payloads {
		// Tokens are replaced in order; find the first remaining one.
		i := strings.Index(out, "batonblob")
		j := i + strings.Index(out[i+len("batonblob"):], "_") + len("batonblob") + 1
		j += strings.Index(out[j:], "_") + 1
		out = out[:i] + base64.StdEncoding.EncodeToString(p) + out[j:]
	}
	return []byte(out)
}

// A request whose body lost a token is refused, not sent without its
// payload.
func TestSwapRefusesAMissingToken(t *testing.T) {
	s := blob.New()
	s.Token([]byte("x"))
	r, _ := http.NewRequest("POST", "http://127.0.0.1/", strings.NewReader(`{"no":"token"}`))
	if err := s.Swap(r); err == nil {
		t.Fatal("a body without its token was swapped")
	}
}
