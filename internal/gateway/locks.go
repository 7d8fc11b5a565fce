package gateway

import (
	"context"
	"sync"
)

// keyedLocks are mutexes by name that a waiter can give up on when its
// context ends, and that are forgotten when nobody holds or waits for
// them. The gateway keeps one set per session (one turn at a time across
// all chats bound to it: the agent refuses a second turn outright, the
// gateway would rather wait, and must hold the session before it records
// where a turn's approvals are asked) and one per address (sends in
// order, never two flushes posting the same delivery).
type keyedLocks struct {
	mu sync.Mutex
	m  map[string]*keyedLock
}

type keyedLock struct {
	ch    chan struct{} // holds a token while taken
	users int           // holders and waiters; the entry goes at zero
}

func (s *keyedLocks) lock(ctx context.Context, id string) (unlock func(), err error) {
	s.mu.Lock()
	if s.m == nil {
		s.m = map[string]*keyedLock{}
	}
	l, ok := s.m[id]
	if !ok {
		l = &keyedLock{ch: make(chan struct{}, 1)}
		s.m[id] = l
	}
	l.users++
	s.mu.Unlock()
	select {
	case l.ch <- struct{}{}:
		return func() { <-l.ch; s.release(id, l) }, nil
	case <-ctx.Done():
		s.release(id, l)
		return nil, ctx.Err()
	}
}

func (s *keyedLocks) release(id string, l *keyedLock) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if l.users--; l.users == 0 {
		delete(s.m, id)
	}
}
