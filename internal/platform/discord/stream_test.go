package discord

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/baton-agent/baton/internal/platform"
)

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
	const sendSize, readSize = MaxUpload - 1<<20, 16 << 20
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.HasPrefix(r.URL.Path, "/attachments/"):
			z := zeros(t, readSize)
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
	send := testing.Benchmark(func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			f := platform.File{Name: "big.bin", MediaType: "application/octet-stream", Size: sendSize,
				Open: func(context.Context) (io.ReadCloser, error) { return zeros(b, sendSize), nil }}
			if _, err := a.SendFile(context.Background(), to, f); err != nil {
				b.Fatal(err)
			}
		}
	})
	read := testing.Benchmark(func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			rc, err := a.download(context.Background(), wireAttachment{ID: "2", Filename: "big.bin", Size: readSize,
				URL: hs.URL + "/attachments/1/2/big.bin?ex=1&is=1&hm=x&"}, "big.bin")
			if err != nil {
				b.Fatal(err)
			}
			n, err := io.Copy(io.Discard, rc)
			rc.Close()
			if err != nil || n != readSize {
				b.Fatalf("read %d bytes: %v", n, err)
			}
		}
	})
	t.Logf("a %d MB file sent with %d bytes allocated; a %d MB file read with %d", sendSize>>20, send.AllocedBytesPerOp(), readSize>>20, read.AllocedBytesPerOp())
	for what, r := range map[string]testing.BenchmarkResult{"sent": send, "read": read} {
		if r.N == 0 {
			t.Fatalf("%s: no run", what)
		}
		if got := r.AllocedBytesPerOp(); got > sendSize/8 {
			t.Errorf("a file %s with %d bytes allocated: held whole", what, got)
		}
	}
}
