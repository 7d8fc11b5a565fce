package sqlite_test

import (
	"encoding/binary"
	"io"
	"runtime"
	"runtime/metrics"
	"sync"
	"testing"
	"time"
)

// generated reads n bytes made from a counter, so a 20 MB file is never
// in the benchmark's memory: what the heap holds is the store's doing.
type generated struct {
	n, at int64
	seed  uint64
}

func (g *generated) Read(p []byte) (int, error) {
	if g.at >= g.n {
		return 0, io.EOF
	}
	p = p[:min(int64(len(p)), g.n-g.at)]
	for i := 0; i+8 <= len(p); i += 8 {
		binary.LittleEndian.PutUint64(p[i:], g.seed+uint64(g.at)+uint64(i))
	}
	g.at += int64(len(p))
	return len(p), nil
}

// heapPeak samples the live heap until stopped and reports the highest.
func heapPeak() (stop func() uint64) {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	var peak uint64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			metrics.Read(sample)
			peak = max(peak, sample[0].Value.Uint64())
			select {
			case <-done:
				return
			case <-time.After(200 * time.Microsecond):
			}
		}
	})
	return func() uint64 { close(done); wg.Wait(); return peak }
}

// BenchmarkPutFile20MB keeps a 20 MB file streamed from a reader that
// cannot tell its size: bytes allocated per op and the heap's peak stay
// far below the file's size.
func BenchmarkPutFile20MB(b *testing.B) {
	s := openTemp(b)
	defer s.Close()
	const size = 20 << 20
	runtime.GC()
	stop := heapPeak()
	b.SetBytes(size)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if _, err := s.PutFile(b.Context(), &generated{n: size, seed: uint64(i) << 40}, "big.bin"); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(stop())/(1<<20), "peak-heap-MiB")
}
