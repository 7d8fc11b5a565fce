package gateway

import (
	"errors"
	"sync"

	"github.com/baton-agent/baton/internal/platform"
)

// The optional capabilities the gateway does without where refused.
const (
	capThreads = "threads" // asked of the home chat a thread opens under
	capTyping  = "typing"  // asked of the address typed in
	capEdits   = "edits"   // asked of the address a streamed answer goes to
)

// maxRefusedPlaces bounds how many refused places are remembered. The
// oldest is forgotten first; a forgotten place is only asked once more.
const maxRefusedPlaces = 1024

// refusals remembers the optional capabilities services refused, so each
// is asked once rather than on every message. Services refuse per place —
// one Telegram group is a forum and another is not, a bot may open threads
// in one Discord channel and not the next — so a refusal is remembered for
// the place asked: the address, or for threads the home chat they open
// under. Only a refusal also wrapping platform.ErrNotOffered (the server
// has no such method: Telegram's 404) is remembered for the whole
// platform, which no place of it will change. It has its own lock.
type refusals struct {
	mu       sync.Mutex
	platform map[string]bool // "platform/capability" the server lacks; few
	places   map[string]bool // "capability/address key" refused there
	order    []string        // the keys of places, oldest first
	limit    int
}

func newRefusals(limit int) *refusals {
	return &refusals{platform: map[string]bool{}, places: map[string]bool{}, limit: limit}
}

// known reports whether capability was refused at place, or by its
// platform everywhere.
func (r *refusals) known(capability string, place platform.Address) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.platform[place.Platform+"/"+capability] || r.places[capability+"/"+place.Key()]
}

// note remembers that place refused capability with err, for its whole
// platform when err says the server lacks it; first is false when it was
// known already.
func (r *refusals) note(capability string, place platform.Address, err error) (everywhere, first bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if errors.Is(err, platform.ErrNotOffered) {
		key := place.Platform + "/" + capability
		first = !r.platform[key]
		r.platform[key] = true
		return true, first
	}
	key := capability + "/" + place.Key()
	if r.places[key] {
		return false, false
	}
	if len(r.order) >= r.limit {
		delete(r.places, r.order[0])
		r.order = r.order[1:]
	}
	r.places[key] = true
	r.order = append(r.order, key)
	return false, true
}
