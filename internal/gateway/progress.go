package gateway

import (
	"sync"

	"github.com/baton-agent/baton/internal/gateway/control"
)

// broker fans handoff progress out to whoever watches that handoff (the
// terminal that asked for it, over the control socket).
type broker struct {
	mu   sync.Mutex
	subs map[int64]map[chan control.Progress]bool
}

// subscribe returns a channel of the handoff's progress and a function to
// stop. A slow watcher misses steps, never the gateway's time; the terminal
// state is also in the store, where the watcher looks first and last.
func (b *broker) subscribe(id int64) (<-chan control.Progress, func()) {
	ch := make(chan control.Progress, 32)
	b.mu.Lock()
	if b.subs == nil {
		b.subs = map[int64]map[chan control.Progress]bool{}
	}
	if b.subs[id] == nil {
		b.subs[id] = map[chan control.Progress]bool{}
	}
	b.subs[id][ch] = true
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
	b.mu.Lock()
	defer b.mu.Unlock()
	for ch := range b.subs[p.HandoffID] {
		select {
		case ch <- p:
		default:
		}
	}
}
