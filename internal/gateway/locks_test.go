package gateway

import (
	"context"
	"errors"
	"testing"
)

func TestKeyedLocks(t *testing.T) {
	var l keyedLocks
	ctx := context.Background()
	unlockA, err := l.lock(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	// Another key is free.
	unlockB, err := l.lock(ctx, "b")
	if err != nil {
		t.Fatal(err)
	}
	unlockB()
	// The same key waits, and gives up with its context.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := l.lock(cctx, "a"); !errors.Is(err, context.Canceled) {
		t.Fatalf("a held key with a cancelled context: %v", err)
	}
	got := make(chan struct{})
	go func() {
		unlock, err := l.lock(ctx, "a")
		if err == nil {
			unlock()
		}
		close(got)
	}()
	unlockA()
	<-got
	// Nothing is remembered once nobody holds or waits.
	l.mu.Lock()
	n := len(l.m)
	l.mu.Unlock()
	if n != 0 {
		t.Fatalf("%d locks remembered after all were released", n)
	}
}
