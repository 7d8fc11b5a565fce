package gateway

import (
	"testing"

	"github.com/baton-agent/baton/internal/store"
)

// The marks of what was sent where are bounded; an address whose mark was
// dropped answers "maybe sent" for ids up to the highest mark dropped, so
// its next answer is sent after reading the outbox, never twice.
func TestSentMarksAreBounded(t *testing.T) {
	g := newSentMarks(2)
	unsent := func(key string, id int64) bool { return g.unsent(key, []store.Delivery{{ID: id}}) }
	g.note("a", 10)
	g.note("b", 20)
	g.note("a", 11) // a kept address: no drop
	if len(g.upTo) != 2 || g.floor != 0 {
		t.Fatalf("marks %v, floor %d before the bound was reached", g.upTo, g.floor)
	}
	g.note("c", 30)
	if len(g.upTo) != 2 {
		t.Fatalf("%d marks kept, want 2", len(g.upTo))
	}
	dropped := "a"
	if _, ok := g.upTo["a"]; ok {
		dropped = "b"
	}
	if g.floor != map[string]int64{"a": 11, "b": 20}[dropped] {
		t.Fatalf("floor %d after dropping %s", g.floor, dropped)
	}
	if unsent(dropped, g.floor) {
		t.Errorf("a delivery at the floor to a dropped address counts as unsent")
	}
	if !unsent(dropped, 31) || !unsent("c", 31) {
		t.Errorf("a delivery above every mark counts as sent")
	}
	if unsent("c", 30) {
		t.Errorf("the delivery just sent to c counts as unsent")
	}
}
