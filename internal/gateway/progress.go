package gateway

import (
	"sync"

	"github.com/baton-agent/baton/internal/gateway/control"
)

// How much the broker remembers for watchers that subscribe late.
const (
	keptHandoffs = 64
	keptSteps    = 32 // as many as a subscription's buffer holds
)

// broker fans handoff progress out to whoever watches that handoff (the
// terminal that asked for it, over the control socket). It remembers the
// steps of recent handoffs, so that a watcher that subscribes after the
// worker started (the terminal asks, then watches) still sees them all.
type broker struct {
	mu    sync.Mutex
	subs  map[int64]map[chan control.Progress]bool
	steps map[int64][]control.Progress
	order []int64 // handoffs in steps, oldest first
	// signal, when set, also sends each step to processes that share
	// only the store (a terminal on another machine); after the lock.
	signal func(control.Progress)
}

// subscribe returns a channel of the handoff's progress, starting with
// the steps published so far, and a function to stop. A slow watcher
// misses steps, never the gateway's time; the terminal state is also in
// the store, where the watcher looks first and last.
func (b *broker) subscribe(id int64) (<-chan control.Progress, func()) {
	ch := make(chan control.Progress, keptSteps)
	b.mu.Lock()
	if b.subs == nil {
		b.subs = map[int64]map[chan control.Progress]bool{}
	}
	if b.subs[id] == nil {
		b.subs[id] = map[chan control.Progress]bool{}
	}
	b.subs[id][ch] = true
	for _, p := range b.steps[id] {
		select {
		case ch <- p:
		default:
		}
	}
	b.mu.Unlock()
	return ch, func() {
		b.mu.Lock()
		delete(b.subs[id], ch)
		if len(b.subs[id]) == 0 {
			delete(b.subs, id)
		}
		b.mu.Unlock()
	}
}

func (b *broker) publish(p control.Progress) {
	b.fanOut(p)
	if b.signal != nil {
		b.signal(p)
	}
}

func (b *broker) fanOut(p control.Progress) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.steps == nil {
		b.steps = map[int64][]control.Progress{}
	}
	if _, ok := b.steps[p.HandoffID]; !ok {
		b.order = append(b.order, p.HandoffID)
		if len(b.order) > keptHandoffs {
			delete(b.steps, b.order[0])
			b.order = b.order[1:]
		}
	}
	if len(b.steps[p.HandoffID]) < keptSteps {
		b.steps[p.HandoffID] = append(b.steps[p.HandoffID], p)
	}
	for ch := range b.subs[p.HandoffID] {
		select {
		case ch <- p:
		default:
		}
	}
}
