// Package testutil holds the few helpers baton's tests share: waiting for
// a condition with a bound instead of hand-written sleep loops, waiting on
// channels, and a log buffer safe to write from many goroutines.
package testutil

import (
	"bytes"
	"context"
	"sync"
	"testing"
	"time"
)

// Patience is the bound the helpers use when a test gives none: long
// enough that only a hang reaches it, even on a loaded CI machine.
const Patience = 20 * time.Second

// tick is how often Eventually looks again. Conditions it is used for
// have no channel to wait on (another package's state), so it polls.
const tick = 2 * time.Millisecond

// Eventually waits until cond holds, checking it every few milliseconds,
// and fails the test with what when timeout passes first. It returns at
// once when cond already holds.
func Eventually(t testing.TB, timeout time.Duration, cond func() bool, what string) {
	t.Helper()
	if !Poll(Context(t, timeout), cond) {
		t.Fatalf("gave up after %v waiting for %s", timeout, what)
	}
}

// Poll waits until cond holds or ctx ends, and reports whether cond held.
func Poll(ctx context.Context, cond func() bool) bool {
	t := time.NewTicker(tick)
	defer t.Stop()
	for !cond() {
		select {
		case <-ctx.Done():
			return cond()
		case <-t.C:
		}
	}
	return true
}

// Context is a context ended after timeout (Patience if 0) or when the
// test ends, whichever comes first.
func Context(t testing.TB, timeout time.Duration) context.Context {
	if timeout <= 0 {
		timeout = Patience
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	t.Cleanup(cancel)
	return ctx
}

// WaitFor waits until ch yields a value or is closed, or ctx ends; it
// returns the value and whether one came.
func WaitFor[T any](ctx context.Context, ch <-chan T) (T, bool) {
	select {
	case v, ok := <-ch:
		if !ok {
			var zero T
			return zero, true
		}
		return v, true
	case <-ctx.Done():
		var zero T
		return zero, false
	}
}

// Receive waits up to Patience for a value from ch (or its closing) and
// fails the test with what otherwise.
func Receive[T any](t testing.TB, ch <-chan T, what string) T {
	t.Helper()
	v, ok := WaitFor(Context(t, Patience), ch)
	if !ok {
		t.Fatalf("gave up after %v waiting for %s", Patience, what)
	}
	return v
}

// SyncBuffer is an io.Writer many goroutines may write to at once (a
// logger's output, say) while a test reads what was written.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String is everything written so far.
func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
