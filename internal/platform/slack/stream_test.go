package slack

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/baton-agent/baton/internal/platform"
	"github.com/baton-agent/baton/internal/platform/platformtest"
)

// A file sent (the external upload) or read streams through the adapter:
// what it allocates per file is a fraction of the file.
func TestFilesStream(t *testing.T) {
	var hs *httptest.Server
	hs = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/api/files.getUploadURLExternal":
			_, _ = io.WriteString(w, `{"ok":true,"file_id":"F1","upload_url":"`+hs.URL+`/upload/v1/F1"}`)
		case "/upload/v1/F1":
			_, _ = io.Copy(io.Discard, r.Body)
			w.Header().Set("Content-Type", "text/plain")
			_, _ = io.WriteString(w, "OK")
		case "/api/files.completeUploadExternal":
			_, _ = io.WriteString(w, `{"ok":true,"files":[{"id":"F1","title":"big.bin"}]}`)
		case "/api/files.info":
			_, _ = io.WriteString(w, `{"ok":true,"file":{"id":"F1","shares":{"public":{"C1":[{"ts":"1.1"}]}}}}`)
		case "/files-pri/T-F2/download/big.bin":
			w.Header().Set("Content-Type", "application/octet-stream")
			z := platformtest.Zeros(t, platformtest.StreamSize)
			defer z.Close()
			_, _ = io.Copy(w, z)
		default:
			http.NotFound(w, r)
		}
	}))
	defer hs.Close()
	a, err := New(Config{BotToken: "xoxb-1", AppToken: "xapp-1", APIURL: hs.URL + "/api/", FilesURL: hs.URL})
	if err != nil {
		t.Fatal(err)
	}
	to := platform.Address{Platform: Name, Kind: platform.Group, Chat: "C1"}
	platformtest.CheckStreams(t, platformtest.StreamSize, platformtest.StreamSize, func(tb testing.TB, f platform.File) error {
		_, err := a.SendFile(context.Background(), to, f)
		return err
	}, func(tb testing.TB) (io.ReadCloser, error) {
		return a.download(context.Background(), wireFile{ID: "F2", Name: "big.bin", Size: platformtest.StreamSize,
			URLPrivateDownload: hs.URL + "/files-pri/T-F2/download/big.bin"}, "big.bin")
	})
}
