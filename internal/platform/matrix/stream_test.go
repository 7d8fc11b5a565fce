package matrix

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"maunium.net/go/mautrix/id"

	"github.com/baton-agent/baton/internal/platform"
	"github.com/baton-agent/baton/internal/platform/platformtest"
)

// A file sent or read streams through the adapter: what it allocates per
// file is a fraction of the file.
func TestFilesStream(t *testing.T) {
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.HasPrefix(r.URL.Path, "/_matrix/media/v3/upload"):
			_, _ = io.Copy(io.Discard, r.Body)
			_, _ = io.WriteString(w, `{"content_uri":"mxc://localhost/abc"}`)
		case strings.HasPrefix(r.URL.Path, "/_matrix/client/v1/media/download/"):
			z := platformtest.Zeros(t, platformtest.StreamSize)
			defer z.Close()
			_, _ = io.Copy(w, z)
		default:
			_, _ = io.WriteString(w, `{"event_id":"$ev"}`)
		}
	}))
	defer hs.Close()
	a, err := New(Config{HomeserverURL: hs.URL, AccessToken: "tok"})
	if err != nil {
		t.Fatal(err)
	}
	to := platform.Address{Platform: Name, Kind: platform.Group, Chat: "!r:localhost"}
	platformtest.CheckStreams(t, platformtest.StreamSize, platformtest.StreamSize, func(tb testing.TB, f platform.File) error {
		_, err := a.SendFile(context.Background(), to, f)
		return err
	}, func(tb testing.TB) (io.ReadCloser, error) {
		return a.download(context.Background(), id.ContentURI{Homeserver: "localhost", FileID: "abc"}, platformtest.StreamSize, "big.bin")
	})
}

// A spoken answer goes as an m.audio voice message, as Element marks its
// own.
func TestSpokenAnswerIsAVoiceMessage(t *testing.T) {
	var mu sync.Mutex
	var sent map[string]any
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.HasPrefix(r.URL.Path, "/_matrix/media/v3/upload"):
			_, _ = io.Copy(io.Discard, r.Body)
			_, _ = io.WriteString(w, `{"content_uri":"mxc://localhost/voice"}`)
		default:
			mu.Lock()
			_ = json.NewDecoder(r.Body).Decode(&sent)
			mu.Unlock()
			_, _ = io.WriteString(w, `{"event_id":"$ev"}`)
		}
	}))
	defer hs.Close()
	a, err := New(Config{HomeserverURL: hs.URL, AccessToken: "tok"})
	if err != nil {
		t.Fatal(err)
	}
	ogg := []byte("OggS voice")
	f := platform.File{Name: "answer.ogg", MediaType: "audio/ogg", Size: int64(len(ogg)), Voice: true,
		Open: func(context.Context) (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(ogg)), nil }}
	if _, err := a.SendFile(context.Background(), platform.Address{Platform: Name, Kind: platform.Group, Chat: "!r:localhost"}, f); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	_, voice := sent["org.matrix.msc3245.voice"]
	if sent["msgtype"] != "m.audio" || !voice || sent["url"] != "mxc://localhost/voice" {
		t.Errorf("sent %v", sent)
	}
}
