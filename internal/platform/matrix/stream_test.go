package matrix

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"maunium.net/go/mautrix/id"

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

// A file sent or read streams through the adapter: what it allocates per
// file is a fraction of the file.
func TestFilesStream(t *testing.T) {
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.HasPrefix(r.URL.Path, "/_matrix/media/v3/upload"):
			_, _ = io.Copy(io.Discard, r.Body)
			_, _ = io.WriteString(w, `{"content_uri":"mxc://localhost/abc"}`)
		case strings.HasPrefix(r.URL.Path, "/_matrix/client/v1/media/download/"):
			z := zeros(t, streamSize)
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
	send := testing.Benchmark(func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			f := platform.File{Name: "big.bin", MediaType: "application/octet-stream", Size: streamSize,
				Open: func(context.Context) (io.ReadCloser, error) { return zeros(b, streamSize), nil }}
			if _, err := a.SendFile(context.Background(), to, f); err != nil {
				b.Fatal(err)
			}
		}
	})
	read := testing.Benchmark(func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			rc, err := a.download(context.Background(), id.ContentURI{Homeserver: "localhost", FileID: "abc"}, streamSize, "big.bin")
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
