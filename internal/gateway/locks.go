package gateway

import (
	"context"
	"sync"
)

// sessionLocks let one turn at a time run in a session across all the
// chats bound to it, waiting in line (and giving up when the waiter's
// context ends). The agent refuses a second turn outright; the gateway
// would rather wait, and must take the session before it records where a
// turn's approvals are asked.
type sessionLocks struct {
	mu sync.Mutex
	m  map[string]*sessionLock
}

type sessionLock struct {
	ch    chan struct{} // holds a token while taken
	users int           // holders and waiters; the entry goes at zero
}

func (s *sessionLocks) lock(ctx context.Context, id string) (unlock func(), err error) {
	s.mu.Lock()
	if s.m == nil {
		s.m = map[string]*sessionLock{}
	}
	l, ok := s.m[id]
	if !ok {
		l = &sessionLock{ch: make(chan struct{}, 1)}
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

func (s *sessionLocks) release(id string, l *sessionLock) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if l.users--; l.users == 0 {
		delete(s.m, id)
	}
}
