package platform

import (
	"maps"
	"sync"
)

// Marks remember, for each place where a person last spoke to baton, the
// newest message handed over there. A service that does not replay what
// was said while baton was away for long (Discord past its session's
// resume window, Slack past its retries) is then asked, place by place,
// for what came after its mark. Where holds what the adapter needs to
// ask (a Discord guild, a Slack thread); Last is the service's message
// id, ordered by the adapter's newer.
//
// Marks are bounded: past max places, the one with the oldest mark goes.
// A person speaks to baton in a few places (a DM, the threads handoffs
// opened lately), and each costs a request or more when catching up.
type Marks[W any] struct {
	max   int
	newer func(x, y string) bool

	mu sync.Mutex
	m  map[string]Mark[W]
}

// Mark is one place's newest message handed over, and what the adapter
// needs to ask about the place.
type Mark[W any] struct {
	Last  string `json:"last"`
	Where W      `json:"where"`
}

// NewMarks keeps at most max places; newer(x, y) reports whether message
// id x came after y.
func NewMarks[W any](max int, newer func(x, y string) bool) *Marks[W] {
	return &Marks[W]{max: max, newer: newer, m: map[string]Mark[W]{}}
}

// Note marks id as handed over at place (kept only when it is newer than
// the place's mark).
func (ms *Marks[W]) Note(place string, where W, id string) {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	if cur, ok := ms.m[place]; ok && !ms.newer(id, cur.Last) {
		return
	}
	ms.m[place] = Mark[W]{Last: id, Where: where}
	for len(ms.m) > ms.max {
		oldest := ""
		for p, mk := range ms.m {
			if oldest == "" || ms.newer(ms.m[oldest].Last, mk.Last) {
				oldest = p
			}
		}
		delete(ms.m, oldest)
	}
}

// Pass moves a place's mark past id, a message that was not handed over
// (the bot's own, another bot's), so that the next catch-up starts after
// it; a place without a mark stays without.
func (ms *Marks[W]) Pass(place, id string) {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	if cur, ok := ms.m[place]; ok && ms.newer(id, cur.Last) {
		cur.Last = id
		ms.m[place] = cur
	}
}

// Get is place's mark.
func (ms *Marks[W]) Get(place string) (Mark[W], bool) {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	mk, ok := ms.m[place]
	return mk, ok
}

// Forget drops place (baton may no longer read it).
func (ms *Marks[W]) Forget(place string) {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	delete(ms.m, place)
}

// All is a copy of every mark, to keep in Memory or to catch up on.
func (ms *Marks[W]) All() map[string]Mark[W] {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	return maps.Clone(ms.m)
}

// Len is how many places are marked.
func (ms *Marks[W]) Len() int {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	return len(ms.m)
}

// Restore notes every mark of saved (marks kept in Memory by an earlier
// run), each as Note would.
func (ms *Marks[W]) Restore(saved map[string]Mark[W]) {
	for p, mk := range saved {
		ms.Note(p, mk.Where, mk.Last)
	}
}
