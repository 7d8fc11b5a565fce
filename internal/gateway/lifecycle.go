package gateway

import (
	"context"
	"sync"
	"sync/atomic"
)

// lifecycle is where the gateway is in its run: the context turns and
// deliveries work in, whether it is stopping, and the background work Run
// waits for before it returns. It has its own lock.
type lifecycle struct {
	// workCtx outlives Run's ctx by the shutdown grace period. Set by Run
	// before any adapter starts; atomic, since a web page may connect to
	// an adapter served before Run and ask for what waits.
	workCtx  atomic.Pointer[context.Context]
	stopping atomic.Bool   // no new turns or handoffs once set
	quit     chan struct{} // closed when stopping begins

	mu             sync.Mutex
	background     sync.WaitGroup
	backgroundDone bool // Run waits for background work: start no more
}

func newLifecycle() *lifecycle { return &lifecycle{quit: make(chan struct{})} }

// work is the context of turns and deliveries, or nil before Run.
func (l *lifecycle) work() context.Context {
	if p := l.workCtx.Load(); p != nil {
		return *p
	}
	return nil
}

// working reports whether Run has started and its work context is open.
func (l *lifecycle) working() bool {
	w := l.work()
	return w != nil && w.Err() == nil
}

// stop marks the gateway as stopping.
func (l *lifecycle) stop() {
	l.stopping.Store(true)
	close(l.quit)
}

func (l *lifecycle) isStopping() bool { return l.stopping.Load() }

// goBackground runs fn in the background unless Run has stopped waiting
// for such work; it reports whether fn was started. Add happens under mu,
// so it never races waitBackground's Wait.
func (l *lifecycle) goBackground(fn func()) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.backgroundDone {
		return false
	}
	l.background.Add(1)
	go func() {
		defer l.background.Done()
		fn()
	}()
	return true
}

// waitBackground refuses new background work and waits for what runs.
func (l *lifecycle) waitBackground() {
	l.mu.Lock()
	l.backgroundDone = true // a page opened now starts nothing to wait for
	l.mu.Unlock()
	l.background.Wait()
}
