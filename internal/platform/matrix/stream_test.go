package matrix

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
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
