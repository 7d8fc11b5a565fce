package platform

import (
	"log/slog"
	"sync"
)

// Refusals logs each optional method a service refused (typing, edits,
// threads) the first time only: the adapter goes on without it, and the
// log is not flooded on every message. The zero value is ready to use.
type Refusals struct {
	mu   sync.Mutex
	seen map[string]bool
}

// Log records that the service refused method with err, logging it to
// log if it is the first time.
func (r *Refusals) Log(log *slog.Logger, method string, err error) {
	r.mu.Lock()
	first := !r.seen[method]
	if first {
		if r.seen == nil {
			r.seen = map[string]bool{}
		}
		r.seen[method] = true
	}
	r.mu.Unlock()
	if first && log != nil {
		log.Warn("optional method refused by the service; continuing without it", "method", method, "err", err)
	}
}
