package slack

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"

	"github.com/baton-agent/baton/internal/platform"
)

// streamSize is the file the streaming check moves: large enough that
// holding it whole would show.
const streamSize = 16 << 20

// zeros reads n zero bytes without holding them.
func zeros(t testing.TB, n int64) io.ReadCloser {
	f, err := os.Open("/dev/zero")
	if err != nil {
		t.Fatal(err)
	}
	return struct {
		io.Reader
		io.Closer
	}{io.LimitReader(f, n), f}
}

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
			z := zeros(t, streamSize)
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
	send := testing.Benchmark(func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			f := platform.File{Name: "big.bin", MediaType: "application/octet-stream", Size: streamSize,
				Open: func(context.Context) (io.ReadCloser, error) { return zeros(b, streamSize), nil }}
			if ts, err := a.SendFile(context.Background(), to, f); err != nil || ts != "1.1" {
				b.Fatalf("%q, %v", ts, err)
			}
		}
	})
	read := testing.Benchmark(func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			rc, err := a.download(context.Background(), wireFile{ID: "F2", Name: "big.bin", Size: streamSize,
				URLPrivateDownload: hs.URL + "/files-pri/T-F2/download/big.bin"}, "big.bin")
			if err != nil {
				b.Fatal(err)
			}
			n, err := io.Copy(io.Discard, rc)
			rc.Close()
			if err != nil || n != streamSize {
				b.Fatalf("read %d bytes: %v", n, err)
			}
		}
	})
	t.Logf("a %d MB file: sent with %d bytes allocated, read with %d", streamSize>>20, send.AllocedBytesPerOp(), read.AllocedBytesPerOp())
	for what, r := range map[string]testing.BenchmarkResult{"sent": send, "read": read} {
		if r.N == 0 {
			t.Fatalf("%s: no run", what)
		}
		if got := r.AllocedBytesPerOp(); got > streamSize/8 {
			t.Errorf("a %d-byte file %s with %d bytes allocated: held whole", streamSize, what, got)
		}
	}
}
