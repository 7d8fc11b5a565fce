package agent

import "testing"

// BenchmarkTurnLock is what marking a turn costs: taking and letting go
// of the session's turn lock, once per turn.
func BenchmarkTurnLock(b *testing.B) {
	l := &TurnLocks{Dir: b.TempDir()}
	for b.Loop() {
		h, err := l.begin("s")
		if err != nil {
			b.Fatal(err)
		}
		h.end()
	}
}

// BenchmarkTurnStopLook is one look of a running turn for a request to
// stop (every DefaultTurnPoll), when there is none.
func BenchmarkTurnStopLook(b *testing.B) {
	l := &TurnLocks{Dir: b.TempDir()}
	h, err := l.begin("s")
	if err != nil {
		b.Fatal(err)
	}
	defer h.end()
	for b.Loop() {
		if _, ok := h.stopAsked(); ok {
			b.Fatal("asked to stop")
		}
	}
}
