package gateway

import (
	"errors"
	"strconv"
	"testing"

	"github.com/baton-agent/baton/internal/platform"
)

// A refusal is remembered for the place asked, a method the server lacks
// for its whole platform, and no more places than the bound.
func TestRefusalsPerPlaceBounded(t *testing.T) {
	r := newRefusals(3)
	group := func(i int) platform.Address {
		return platform.Address{Platform: "telegram", Kind: platform.Group, Chat: "-100" + strconv.Itoa(i)}
	}
	refused := platform.Unsupported(errors.New("400 not a forum"))
	if everywhere, first := r.note(capThreads, group(1), refused); everywhere || !first {
		t.Fatalf("note = %v %v, want for this place, first", everywhere, first)
	}
	if _, first := r.note(capThreads, group(1), refused); first {
		t.Error("the same refusal noted as new")
	}
	if !r.known(capThreads, group(1)) || r.known(capThreads, group(2)) || r.known(capTyping, group(1)) {
		t.Error("a refusal reached beyond its place and capability")
	}
	for i := 2; i <= 4; i++ {
		r.note(capThreads, group(i), refused)
	}
	if r.known(capThreads, group(1)) || !r.known(capThreads, group(4)) || len(r.places) != 3 || len(r.order) != 3 {
		t.Errorf("over the bound: group 1 known %v, %d places, %d in order", r.known(capThreads, group(1)), len(r.places), len(r.order))
	}
	if everywhere, _ := r.note(capTyping, group(5), platform.NotOffered(errors.New("404"))); !everywhere {
		t.Error("a method the server lacks was not noted for the platform")
	}
	if !r.known(capTyping, group(9)) || r.known(capTyping, platform.Address{Platform: "slack", Kind: platform.Group, Chat: "C1"}) {
		t.Error("a method the server lacks: not known for another place of the platform, or known for another platform")
	}
}
