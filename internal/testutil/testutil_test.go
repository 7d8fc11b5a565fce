package testutil

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestEventuallyWaitsForTheCondition(t *testing.T) {
	var n atomic.Int32
	go func() {
		for range 5 {
			n.Add(1)
		}
	}()
	Eventually(t, Patience, func() bool { return n.Load() == 5 }, "five increments")
	if n.Load() != 5 {
		t.Fatalf("n = %d after Eventually returned", n.Load())
	}
}

// fakeT records a fatal failure instead of ending the test.
type fakeT struct {
	testing.TB
	msg string
}

func (f *fakeT) Helper() {}
func (f *fakeT) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	panic(f) // Fatalf must not return; the caller recovers
}

func TestEventuallyFailsWithWhat(t *testing.T) {
	ft := &fakeT{TB: t}
	func() {
		defer func() {
			if r := recover(); r != nil && r != ft {
				panic(r)
			}
		}()
		Eventually(ft, 10*time.Millisecond, func() bool { return false }, "the impossible")
	}()
	if !strings.Contains(ft.msg, "the impossible") {
		t.Fatalf("failure message %q does not say what was awaited", ft.msg)
	}
}

func TestReceiveAndWaitFor(t *testing.T) {
	ch := make(chan int, 1)
	ch <- 7
	if v := Receive(t, ch, "a value"); v != 7 {
		t.Fatalf("Receive = %d", v)
	}
	done := make(chan struct{})
	close(done)
	if _, ok := WaitFor(Context(t, 0), done); !ok {
		t.Fatal("a closed channel was not seen")
	}
	ctx := Context(t, time.Millisecond)
	if _, ok := WaitFor(ctx, make(chan int)); ok {
		t.Fatal("WaitFor reported a value from a silent channel")
	}
}

func TestSyncBufferConcurrentWrites(t *testing.T) {
	var b SyncBuffer
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() { fmt.Fprint(&b, "ab") })
	}
	wg.Wait()
	if got := b.String(); got != strings.Repeat("ab", 8) {
		t.Fatalf("buffer = %q", got)
	}
}
