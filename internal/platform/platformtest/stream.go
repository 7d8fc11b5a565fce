package platformtest

import (
	"context"
	"io"
	"os"
	"testing"

	"github.com/baton-agent/baton/internal/platform"
)

// StreamSize is the file CheckStreams moves unless told otherwise: large
// enough that holding it whole would show.
const StreamSize = 16 << 20

// Zeros reads n zero bytes without holding them: the body of a large file
// a fake serves, or a large file to send.
func Zeros(tb testing.TB, n int64) io.ReadCloser {
	f, err := os.Open("/dev/zero")
	if err != nil {
		tb.Fatal(err)
	}
	return struct {
		io.Reader
		io.Closer
	}{io.LimitReader(f, n), f}
}

// ZeroFile is a platform.File of n zero bytes, read with Zeros.
func ZeroFile(tb testing.TB, n int64) platform.File {
	return platform.File{Name: "big.bin", MediaType: "application/octet-stream", Size: n,
		Open: func(context.Context) (io.ReadCloser, error) { return Zeros(tb, n), nil }}
}

// CheckStreams checks that an adapter streams files both ways: send
// sends a file of sendSize bytes (ZeroFile), read opens one of readSize
// the fake serves; what each allocates per file must stay under an eighth
// of it. Either may be nil for a direction not checked.
func CheckStreams(t *testing.T, sendSize, readSize int64, send func(tb testing.TB, f platform.File) error, read func(tb testing.TB) (io.ReadCloser, error)) {
	t.Helper()
	runs := map[string]func(b *testing.B){}
	if send != nil {
		runs["sent"] = func(b *testing.B) {
			for range b.N {
				if err := send(b, ZeroFile(b, sendSize)); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	if read != nil {
		runs["read"] = func(b *testing.B) {
			for range b.N {
				rc, err := read(b)
				if err != nil {
					b.Fatal(err)
				}
				n, err := io.Copy(io.Discard, rc)
				rc.Close()
				if err != nil || n != readSize {
					b.Fatalf("read %d bytes of %d: %v", n, readSize, err)
				}
			}
		}
	}
	for what, run := range runs {
		size := sendSize
		if what == "read" {
			size = readSize
		}
		r := testing.Benchmark(func(b *testing.B) { b.ReportAllocs(); run(b) })
		if r.N == 0 {
			t.Fatalf("%s: no run (a failure above)", what)
		}
		t.Logf("a %d MB file %s with %d bytes allocated", size>>20, what, r.AllocedBytesPerOp())
		if got := r.AllocedBytesPerOp(); got > size/8 {
			t.Errorf("a %d-byte file %s with %d bytes allocated: held whole", size, what, got)
		}
	}
}
