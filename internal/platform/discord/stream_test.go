package discord

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/baton-agent/baton/internal/platform"
	"github.com/baton-agent/baton/internal/platform/platformtest"
)

// A file sent or read streams through the adapter: what it allocates per
// file is a fraction of the file.
func TestFilesStream(t *testing.T) {
	const sendSize, readSize = MaxUpload - 1<<20, 16 << 20
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.HasPrefix(r.URL.Path, "/attachments/"):
			z := platformtest.Zeros(t, readSize)
			defer z.Close()
			_, _ = io.Copy(w, z)
		default:
			_, _ = io.Copy(io.Discard, r.Body)
			_, _ = io.WriteString(w, `{"id":"1"}`)
		}
	}))
	defer hs.Close()
	a, err := New(Config{Token: "MTIz.test.token", APIURL: hs.URL + "/api/v10", CDNURL: hs.URL})
	if err != nil {
		t.Fatal(err)
	}
	to := platform.Address{Platform: Name, Kind: platform.Group, Chat: "1"}
	platformtest.CheckStreams(t, sendSize, readSize, func(tb testing.TB, f platform.File) error {
		_, err := a.SendFile(context.Background(), to, f)
		return err
	}, func(tb testing.TB) (io.ReadCloser, error) {
		return a.download(context.Background(), wireAttachment{ID: "2", Filename: "big.bin", Size: readSize,
			URL: hs.URL + "/attachments/1/2/big.bin?ex=1&is=1&hm=x&"}, "big.bin")
	})
}
