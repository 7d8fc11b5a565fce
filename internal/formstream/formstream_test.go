package formstream_test

import (
	"bytes"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"testing"
	"testing/iotest"

	"github.com/baton-agent/baton/internal/formstream"
)

// The form reads back as written: fields in order, an empty one left
// out, the file's bytes and header intact.
func TestFormReadsBack(t *testing.T) {
	data := bytes.Repeat([]byte("0123456789"), 50000)
	body, ct := formstream.New(formstream.Field("model", "whisper-1"), formstream.Field("language", ""),
		formstream.Part{Name: "file", Filename: `a"b.ogg`, MediaType: "audio/ogg", Body: bytes.NewReader(data)})
	defer body.Close()
	_, params, err := mime.ParseMediaType(ct)
	if err != nil {
		t.Fatal(err)
	}
	r := multipart.NewReader(body, params["boundary"])
	var got []string
	for {
		p, err := r.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(p)
		got = append(got, p.FormName())
		if p.FormName() == "file" && (!bytes.Equal(b, data) || p.FileName() != "a_b.ogg" || p.Header.Get("Content-Type") != "audio/ogg") {
			t.Errorf("file part %q %q, %d bytes", p.FileName(), p.Header.Get("Content-Type"), len(b))
		}
	}
	if len(got) != 2 || got[0] != "model" || got[1] != "file" {
		t.Errorf("parts %v", got)
	}
}

// A file that cannot be read ends the body with its error.
func TestFormFailsWithItsFile(t *testing.T) {
	boom := errors.New("disk gone")
	body, _ := formstream.New(formstream.Part{Name: "file", Filename: "x", Body: iotest.ErrReader(boom)})
	defer body.Close()
	if _, err := io.ReadAll(body); !errors.Is(err, boom) {
		t.Fatalf("read: %v", err)
	}
}
