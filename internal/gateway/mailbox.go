package gateway

import "sync"

// mailboxes run jobs one at a time per conversation, in arrival order;
// different conversations run in parallel. A mailbox's goroutine exists
// only while it has work.
type mailboxes struct {
	mu    sync.Mutex
	boxes map[string]*mailbox
	wg    sync.WaitGroup
}

type mailbox struct{ queue []func() }

func (m *mailboxes) push(key string, job func()) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.boxes == nil {
		m.boxes = map[string]*mailbox{}
	}
	if b, ok := m.boxes[key]; ok {
		b.queue = append(b.queue, job)
		return
	}
	b := &mailbox{queue: []func(){job}}
	m.boxes[key] = b
	m.wg.Add(1)
	go m.drain(key, b)
}

func (m *mailboxes) drain(key string, b *mailbox) {
	defer m.wg.Done()
	for {
		m.mu.Lock()
		if len(b.queue) == 0 {
			delete(m.boxes, key)
			m.mu.Unlock()
			return
		}
		job := b.queue[0]
		b.queue = b.queue[1:]
		m.mu.Unlock()
		job()
	}
}

// wait blocks until every mailbox is empty.
func (m *mailboxes) wait() { m.wg.Wait() }
