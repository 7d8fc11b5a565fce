package platform

import "sync"

// SeenLimit is how many ids an adapter's Seen remembers by default; older
// ones are forgotten (the gateway's store dedupes by Event.ID as well).
const SeenLimit = 4096

// Seen is a bounded set of recently handled message ids, so that one a
// service hands over twice (a retried update, a mention arriving as two
// events, a catch-up overlapping the live stream) is passed on once. Past
// its limit the oldest id goes. Safe for concurrent use.
type Seen struct {
	limit int

	mu    sync.Mutex
	set   map[string]struct{}
	order []string // oldest first
}

// NewSeen remembers at most limit ids.
func NewSeen(limit int) *Seen {
	return &Seen{limit: limit, set: map[string]struct{}{}}
}

// Has reports whether id was added and not yet forgotten.
func (s *Seen) Has(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.set[id]
	return ok
}

// Add remembers id, forgetting the oldest past the limit; adding an id
// already there changes nothing.
func (s *Seen) Add(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.set[id]; ok {
		return
	}
	s.set[id] = struct{}{}
	s.order = append(s.order, id)
	if len(s.order) > s.limit {
		delete(s.set, s.order[0])
		s.order = s.order[1:]
	}
}
