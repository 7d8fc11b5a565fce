package gateway

import (
	"fmt"
	"sync"
	"testing"
)

// A burst across many conversations runs at most limit jobs at once, one
// at a time per conversation and in each one's order; once every job has
// run, nothing of the conversations is left.
func TestMailboxesBoundJobsAndForgetConversations(t *testing.T) {
	const conversations, perConversation, limit = 200, 5, 4
	m := &mailboxes{limit: limit}
	gate := make(chan struct{})
	started := make(chan struct{}, conversations*perConversation)
	var mu sync.Mutex
	running, most := 0, 0
	busy := map[string]bool{}
	ran := map[string][]int{}
	for j := range perConversation {
		for c := range conversations {
			key := fmt.Sprint("chat", c)
			m.push(key, func() {
				mu.Lock()
				if busy[key] {
					t.Errorf("two jobs of %s at once", key)
				}
				busy[key] = true
				running++
				most = max(most, running)
				ran[key] = append(ran[key], j)
				mu.Unlock()
				started <- struct{}{}
				<-gate
				mu.Lock()
				busy[key] = false
				running--
				mu.Unlock()
			})
		}
	}
	for range limit {
		<-started
	}
	close(gate)
	m.wait()
	if most > limit {
		t.Errorf("%d jobs ran at once, want at most %d", most, limit)
	}
	for c := range conversations {
		key := fmt.Sprint("chat", c)
		if got := ran[key]; len(got) != perConversation || fmt.Sprint(got) != "[0 1 2 3 4]" {
			t.Fatalf("%s ran %v, want its 5 jobs in order", key, got)
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.boxes) != 0 || len(m.ready) != 0 || m.runners != 0 {
		t.Errorf("after every job: %d mailboxes, %d waiting, %d runners, want none", len(m.boxes), len(m.ready), m.runners)
	}
}
