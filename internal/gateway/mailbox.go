package gateway

import "sync"

// mailboxes run jobs one at a time per conversation, in arrival order.
// Different conversations run in parallel, up to limit at once: runners
// take the conversations with work in the order they got it, each
// conversation's jobs until it has none, so a burst across thousands of
// conversations neither starts a goroutine per conversation nor runs
// thousands of turns against each other at once (each then slower, until
// the chats' services time out waiting), and a conversation's messages
// follow each other while its transcript is still in the store's cache. A
// conversation with no work holds nothing here.
type mailboxes struct {
	limit int // runners at most; 0: one per conversation with work

	mu      sync.Mutex
	boxes   map[string]*mailbox // conversations with work, waiting or running
	ready   []*mailbox          // conversations waiting for a runner, in order
	runners int
	wg      sync.WaitGroup
}

type mailbox struct {
	key   string
	queue []func()
}

func (m *mailboxes) push(key string, job func()) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if b, ok := m.boxes[key]; ok {
		b.queue = append(b.queue, job) // waiting, or running: its runner takes it
		return
	}
	if m.boxes == nil {
		m.boxes = map[string]*mailbox{}
	}
	b := &mailbox{key: key, queue: []func(){job}}
	m.boxes[key] = b
	m.ready = append(m.ready, b)
	if m.limit <= 0 || m.runners < m.limit {
		m.runners++
		m.wg.Add(1)
		go m.run()
	}
}

// run takes the conversation that waited longest and runs its jobs until
// it has none, then the next, until no conversation waits.
func (m *mailboxes) run() {
	defer m.wg.Done()
	m.mu.Lock()
	for len(m.ready) > 0 {
		b := m.ready[0]
		m.ready[0] = nil
		m.ready = m.ready[1:]
		for len(b.queue) > 0 {
			job := b.queue[0]
			b.queue[0] = nil
			b.queue = b.queue[1:]
			m.mu.Unlock()
			job()
			m.mu.Lock()
		}
		delete(m.boxes, b.key)
		if len(m.boxes) == 0 {
			// A map keeps the room its largest burst needed: a new one
			// gives it back.
			m.boxes, m.ready = nil, nil
		}
	}
	m.runners--
	m.mu.Unlock()
}

// wait blocks until every mailbox is empty.
func (m *mailboxes) wait() { m.wg.Wait() }
