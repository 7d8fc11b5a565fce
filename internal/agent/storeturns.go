package agent

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/baton-agent/baton/internal/store"
)

// Where a store is shared by processes on several machines (a desk's
// terminal and a server's gateway, or several gateways on one Postgres),
// a file in one home cannot mark a turn for the others. StoreTurns marks
// it in the store instead, as leases (store.Replicas):
//
//   - a running turn holds "turn:<session>" under a token of its own,
//     renewed while it runs, so a process that dies mid-turn holds the
//     session up for at most a lease;
//   - a mover asks it to stop with the lease "stop:<session>:<token>",
//     held in the name of the place the session goes;
//   - each process reads the leases once a Poll while it runs turns (one
//     read for all of them) and stops those asked to, as Ctrl-C would.
//
// Leases are the record, so nothing is lost when a process misses a
// wake-up; a Poll bounds how late a stop is seen.

// DefaultTurnLease is how long a turn's lease lasts unrenewed: how long a
// turn in a process that died holds up a move of its session.
const DefaultTurnLease = 15 * time.Second

// Lease names: a session's running turn, and a request to stop it.
const (
	turnLeasePrefix = "turn:"
	stopLeasePrefix = "stop:"
)

// ErrTurnLost, as the cause of a turn's cancellation, stops a turn whose
// lease lapsed (its process was paused past it, or the store was out of
// reach) and was taken by a turn elsewhere: two must not run at once.
var ErrTurnLost = errors.New("the session's turn was taken by another place after this one's lease lapsed")

// TurnLeases is what StoreTurns needs of the store.
type TurnLeases interface {
	TakeLease(ctx context.Context, name, holder string, ttl time.Duration) (store.Lease, error)
	ReleaseLease(ctx context.Context, name, holder string) error
	Leases(ctx context.Context) ([]store.Lease, error)
}

// StoreTurns marks running turns as leases in a shared store (see the top
// of this file). Its zero value, with Store set, is ready.
type StoreTurns struct {
	Store TurnLeases
	Lease time.Duration // 0: DefaultTurnLease
	Poll  time.Duration // 0: DefaultTurnPoll
	Log   *slog.Logger  // nil: nothing logged (a terminal's prompt stays clean)

	mu       sync.Mutex
	running  map[string]*leasedTurn // by token
	watching bool                   // the watcher runs
}

// leasedTurn is one turn running in this process.
type leasedTurn struct {
	session string
	token   string
	renewed time.Time
	cancel  context.CancelCauseFunc
}

func (s *StoreTurns) lease() time.Duration {
	if s.Lease > 0 {
		return s.Lease
	}
	return DefaultTurnLease
}

func (s *StoreTurns) poll() time.Duration {
	if s.Poll > 0 {
		return s.Poll
	}
	return DefaultTurnPoll
}

func (s *StoreTurns) log() *slog.Logger {
	if s.Log != nil {
		return s.Log
	}
	return slog.New(slog.DiscardHandler)
}

// Begin takes the session's turn lease (TurnGuard).
func (s *StoreTurns) Begin(ctx context.Context, sessionID string) (context.Context, func(), error) {
	var b [8]byte
	_, _ = rand.Read(b[:])
	host, _ := os.Hostname()
	token := fmt.Sprintf("%s/%d/%s", host, os.Getpid(), hex.EncodeToString(b[:]))
	name := turnLeasePrefix + sessionID
	if _, err := s.Store.TakeLease(ctx, name, token, s.lease()); err != nil {
		if errors.Is(err, store.ErrClaimed) {
			return ctx, nil, fmt.Errorf("session %s, in another place: %w", sessionID, ErrBusy)
		}
		return ctx, nil, fmt.Errorf("mark the turn of session %s: %w", sessionID, err)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	t := &leasedTurn{session: sessionID, token: token, renewed: time.Now(), cancel: cancel}
	s.mu.Lock()
	if s.running == nil {
		s.running = map[string]*leasedTurn{}
	}
	s.running[token] = t
	if !s.watching {
		s.watching = true
		go s.watch()
	}
	s.mu.Unlock()
	return ctx, func() {
		s.mu.Lock()
		delete(s.running, token)
		s.mu.Unlock()
		cancel(nil)
		rctx, done := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer done()
		if err := s.Store.ReleaseLease(rctx, name, token); err != nil {
			// It lapses on its own within a lease.
			s.log().Warn("release a session's turn", "session", sessionID, "err", err)
		}
	}, nil
}

// watch looks, once a Poll while turns run here, for requests to stop
// them and renews their leases; it ends when none runs.
func (s *StoreTurns) watch() {
	tick := time.NewTicker(s.poll())
	defer tick.Stop()
	for range tick.C {
		s.mu.Lock()
		if len(s.running) == 0 {
			s.watching = false
			s.mu.Unlock()
			return
		}
		turns := make([]*leasedTurn, 0, len(s.running))
		for _, t := range s.running {
			turns = append(turns, t)
		}
		s.mu.Unlock()
		s.look(turns)
	}
}

// look stops the turns asked to stop and renews the leases due.
func (s *StoreTurns) look(turns []*leasedTurn) {
	ctx, cancel := context.WithTimeout(context.Background(), s.lease()/3)
	defer cancel()
	leases, err := s.Store.Leases(ctx)
	if err != nil {
		s.log().Warn("look for requests to stop a turn", "err", err)
		return
	}
	held := make(map[string]store.Lease, len(leases))
	for _, l := range leases {
		held[l.Name] = l
	}
	for _, t := range turns {
		if l, ok := held[stopLeasePrefix+t.session+":"+t.token]; ok {
			t.cancel(&MovedError{To: l.Holder})
			continue
		}
		if l, ok := held[turnLeasePrefix+t.session]; ok && l.Holder != t.token {
			t.cancel(ErrTurnLost)
			continue
		}
		if time.Since(t.renewed) < s.lease()/3 {
			continue
		}
		_, err := s.Store.TakeLease(ctx, turnLeasePrefix+t.session, t.token, s.lease())
		switch {
		case err == nil:
			t.renewed = time.Now()
		case errors.Is(err, store.ErrClaimed):
			t.cancel(ErrTurnLost)
		default:
			s.log().Warn("renew a session's turn", "session", t.session, "err", err)
		}
	}
}

// Stop asks the turn running in sessionID, wherever it runs, to stop
// (TurnGuard).
func (s *StoreTurns) Stop(ctx context.Context, sessionID, to string, wait time.Duration) (running bool, err error) {
	var asked string // the stop lease taken
	defer func() {
		if asked != "" {
			rctx, done := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			defer done()
			_ = s.Store.ReleaseLease(rctx, asked, to)
		}
	}()
	deadline := time.Now().Add(wait)
	for pause := 20 * time.Millisecond; ; pause = min(2*pause, s.poll()) {
		leases, err := s.Store.Leases(ctx)
		if err != nil {
			return running, fmt.Errorf("look for the turn of session %s: %w", sessionID, err)
		}
		var turn store.Lease
		for _, l := range leases {
			if l.Name == turnLeasePrefix+sessionID {
				turn = l
			}
		}
		if turn.Holder == "" {
			return running, nil
		}
		running = true
		if name := stopLeasePrefix + sessionID + ":" + turn.Holder; name != asked {
			// Held past the wait, so a turn slow to look still sees it;
			// another mover's request for the same turn serves as well.
			_, err := s.Store.TakeLease(ctx, name, to, wait+s.lease())
			if err != nil && !errors.Is(err, store.ErrClaimed) {
				return running, fmt.Errorf("ask the turn of session %s to stop: %w", sessionID, err)
			}
			if asked != "" {
				_ = s.Store.ReleaseLease(ctx, asked, to)
			}
			asked = ""
			if err == nil {
				asked = name
			}
		}
		if time.Now().After(deadline) {
			return running, fmt.Errorf("session %s: %w", sessionID, ErrTurnStillRunning)
		}
		select {
		case <-ctx.Done():
			return running, ctx.Err()
		case <-time.After(pause):
		}
	}
}
