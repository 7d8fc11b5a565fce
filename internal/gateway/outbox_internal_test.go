package gateway

import (
	"testing"

	"github.com/baton-agent/baton/internal/store"
)

// The marks of what was sent where are bounded; an address whose mark was
// dropped answers "maybe sent" for ids up to the highest mark dropped, so
// its next answer is sent after reading the outbox, never twice.
func TestSentMarksAreBounded(t *testing.T) {
	g := &outbox{sentUpTo: map[string]int64{}, sentMarks: 2}
	unsent := func(key string, id int64) bool { return g.unsentHere(key, []store.Delivery{{ID: id}}) }
	g.noteSentTo("a", 10)
	g.noteSentTo("b", 20)
	g.noteSentTo("a", 11) // a kept address: no drop
	if len(g.sentUpTo) != 2 || g.sentFloor != 0 {
		t.Fatalf("marks %v, floor %d before the bound was reached", g.sentUpTo, g.sentFloor)
	}
	g.noteSentTo("c", 30)
	if len(g.sentUpTo) != 2 {
		t.Fatalf("%d marks kept, want 2", len(g.sentUpTo))
	}
	dropped := "a"
	if _, ok := g.sentUpTo["a"]; ok {
		dropped = "b"
	}
	if g.sentFloor != map[string]int64{"a": 11, "b": 20}[dropped] {
		t.Fatalf("floor %d after dropping %s", g.sentFloor, dropped)
	}
	if unsent(dropped, g.sentFloor) {
		t.Errorf("a delivery at the floor to a dropped address counts as unsent")
	}
	if !unsent(dropped, 31) || !unsent("c", 31) {
		t.Errorf("a delivery above every mark counts as sent")
	}
	if unsent("c", 30) {
		t.Errorf("the delivery just sent to c counts as unsent")
	}
}
