package signal

import (
	"bytes"
	"context"
	"encoding/base64"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"

	"github.com/baton-agent/baton/internal/platform"
)

// streamSize is the file the streaming checks move: large enough that
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

// daemon answers send by reading the request away, and getAttachment
// with streamSize zero bytes written as base64 as they go.
func daemon(t *testing.T) *Adapter {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		head := make([]byte, 128)
		n, _ := io.ReadFull(r.Body, head)
		if bytes.Contains(head[:n], []byte(`"method":"getAttachment"`)) {
			_, _ = io.WriteString(w, `{"jsonrpc":"2.0","result":{"data":"`)
			enc := base64.NewEncoder(base64.StdEncoding, w)
			z := zeros(t, streamSize)
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
			rc, err := a.download(context.Background(), "x", map[string]any{"recipient": "+2"}, streamSize, "big.bin")
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
