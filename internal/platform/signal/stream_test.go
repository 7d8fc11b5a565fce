package signal

import (
	"bytes"
	"context"
	"encoding/base64"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/baton-agent/baton/internal/platform"
	"github.com/baton-agent/baton/internal/platform/platformtest"
)

// daemon answers send by reading the request away, and getAttachment
// with platformtest.StreamSize zero bytes written as base64 as they go.
func daemon(t *testing.T) *Adapter {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		head := make([]byte, 128)
		n, _ := io.ReadFull(r.Body, head)
		if bytes.Contains(head[:n], []byte(`"method":"getAttachment"`)) {
			_, _ = io.WriteString(w, `{"jsonrpc":"2.0","result":{"data":"`)
			enc := base64.NewEncoder(base64.StdEncoding, w)
			z := platformtest.Zeros(t, platformtest.StreamSize)
			defer z.Close()
			_, _ = io.Copy(enc, z)
			_ = enc.Close()
			_, _ = io.WriteString(w, `"},"id":1}`)
			return
		}
		_, _ = io.Copy(io.Discard, r.Body)
		_, _ = io.WriteString(w, `{"jsonrpc":"2.0","result":{"timestamp":1},"id":1}`)
	}))
	t.Cleanup(srv.Close)
	a, err := New(Config{URL: srv.URL, Account: "+1"})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// A file sent or read streams through the adapter: what it allocates per
// file is a fraction of the file, not the file (nor its base64).
func TestFilesStream(t *testing.T) {
	a := daemon(t)
	to := platform.Address{Platform: Name, Kind: platform.DM, Chat: "+2"}
	platformtest.CheckStreams(t, platformtest.StreamSize, platformtest.StreamSize, func(tb testing.TB, f platform.File) error {
		_, err := a.SendFile(context.Background(), to, f)
		return err
	}, func(tb testing.TB) (io.ReadCloser, error) {
		return a.download(context.Background(), "x", map[string]any{"recipient": "+2"}, platformtest.StreamSize, "big.bin")
	})
}
