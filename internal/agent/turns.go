package agent

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// A session's turn may run in the gateway or in a terminal, two
// processes; a move of the session (a handoff completed by the gateway's
// worker or by the terminal's pick-up) must not leave it running where
// the session was, or two places run turns at once and the old turn's
// answer lands in a session another place holds. So every running turn
// holds an exclusive flock on <Dir>/<session>.turn, with a token naming
// the turn written inside: whoever moves the session sees it there. To
// stop it, the mover writes that token and where the session goes into
// <Dir>/<session>.stop; the turn looks for that file every Poll (a stat
// and a small read, no store write) and ends as a Ctrl-C ends it: the
// answer written so far is stored once, ending in InterruptedMarker. The
// mover goes on once the lock is free. The kernel drops the flock when
// a process ends, however it ends, so a crashed turn never holds a move
// up.

// DefaultTurnPoll is how often a running turn looks for a request to stop.
const DefaultTurnPoll = 250 * time.Millisecond

// TurnGuard marks the turn running in each session where every place
// that may move the session sees it, and stops it for a move. TurnLocks
// does it with files in one home (the processes of one machine),
// StoreTurns with leases in a store several machines share.
type TurnGuard interface {
	// Begin marks a turn of sessionID as running, without waiting:
	// ErrBusy when one runs elsewhere. The context it returns is ctx,
	// cancelled with a *MovedError as its cause once a mover asks the
	// turn to stop; end, called once what the turn wrote is stored,
	// unmarks it.
	Begin(ctx context.Context, sessionID string) (turn context.Context, end func(), err error)
	// Stop asks the turn running in sessionID, wherever it runs, to stop
	// because the session moves to the place to (an address key), and
	// waits until it has ended with its answer so far stored, for at
	// most wait. It reports whether a turn was running; when it still
	// runs after wait the error wraps ErrTurnStillRunning (a turn
	// waiting for a person's answer to an approval question may not stop
	// at once).
	Stop(ctx context.Context, sessionID, to string, wait time.Duration) (running bool, err error)
}

// ErrMoved, as the cause of a turn's cancellation, stops a turn because
// its session moved to another place (see TurnLocks). The error a stopped
// turn returns is a *MovedError.
var ErrMoved = errors.New("the conversation moved to another place")

// ErrTurnStillRunning is returned by TurnLocks.Stop when the turn asked
// to stop did not end within the wait.
var ErrTurnStillRunning = errors.New("the turn running in the session did not stop in time")

// MovedError is the cause of a turn stopped by a move: To is the address
// key of the place the session went to ("telegram:" when only the
// platform is known yet).
type MovedError struct{ To string }

func (e *MovedError) Error() string { return fmt.Sprintf("%s (%s)", ErrMoved, e.To) }
func (e *MovedError) Unwrap() error { return ErrMoved }

// TurnLocks mark the turns running in each session where every process
// using one home sees them (see the top of this file). A nil *TurnLocks
// marks nothing.
type TurnLocks struct {
	Dir  string        // $BATON_HOME/locks
	Poll time.Duration // 0: DefaultTurnPoll
}

func (l *TurnLocks) path(sessionID, ext string) string {
	return filepath.Join(l.Dir, sessionID+ext)
}

// heldTurn is one running turn's lock.
type heldTurn struct {
	l         *TurnLocks
	sessionID string
	f         *os.File
	path      string
	token     string
}

// Begin takes the session's turn lock and watches for a request to stop
// (TurnGuard).
func (l *TurnLocks) Begin(ctx context.Context, sessionID string) (context.Context, func(), error) {
	held, err := l.begin(sessionID)
	if err != nil {
		return ctx, nil, err
	}
	ctx, stopWatch := held.watch(ctx)
	return ctx, func() { stopWatch(); held.end() }, nil
}

// begin takes the session's turn lock without waiting: ErrBusy when a
// turn runs in it in another process.
func (l *TurnLocks) begin(sessionID string) (*heldTurn, error) {
	if l == nil || l.Dir == "" {
		return nil, nil
	}
	f, _, err := l.open(sessionID)
	if err != nil {
		return nil, err
	}
	path := l.path(sessionID, ".turn")
	if f == nil {
		return nil, fmt.Errorf("session %s, in another process: %w", sessionID, ErrBusy)
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	token := fmt.Sprintf("%d-%s", os.Getpid(), hex.EncodeToString(b[:]))
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(token+"\n"), 0)
	}
	return &heldTurn{l: l, sessionID: sessionID, f: f, path: path, token: token}, nil
}

// open takes the lock on the session's turn file without waiting: f is
// nil, and token the running turn's, when another holds it. A file the
// holder removed meanwhile is no lock: the path is opened again.
func (l *TurnLocks) open(sessionID string) (f *os.File, token string, err error) {
	if err := os.MkdirAll(l.Dir, 0o700); err != nil {
		return nil, "", fmt.Errorf("turn lock of session %s: %w", sessionID, err)
	}
	path := l.path(sessionID, ".turn")
	for {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			return nil, "", fmt.Errorf("turn lock of session %s: %w", sessionID, err)
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			b, _ := io.ReadAll(io.NewSectionReader(f, 0, 64))
			f.Close()
			if errors.Is(err, syscall.EWOULDBLOCK) {
				return nil, strings.TrimSpace(string(b)), nil
			}
			return nil, "", fmt.Errorf("turn lock of session %s: %w", sessionID, err)
		}
		if samePath(f, path) {
			return f, "", nil
		}
		f.Close()
	}
}

// samePath reports whether f is the file now at path.
func samePath(f *os.File, path string) bool {
	held, err := f.Stat()
	if err != nil {
		return false
	}
	now, err := os.Stat(path)
	return err == nil && os.SameFile(held, now)
}

// unlock removes the file while still holding it (so a process that
// opened it meanwhile opens the path again) and lets it go; nil-safe.
func unlock(f *os.File, path string) {
	if f == nil {
		return
	}
	_ = os.Remove(path)
	_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	f.Close()
}

// end lets the session's next turn run; nil-safe.
func (h *heldTurn) end() {
	if h != nil {
		unlock(h.f, h.path)
	}
}

// watch is ctx, cancelled with a *MovedError as its cause once a mover
// asks this turn to stop; stop ends the watching.
func (h *heldTurn) watch(ctx context.Context) (_ context.Context, stop func()) {
	if h == nil {
		return ctx, func() {}
	}
	ctx, cancel := context.WithCancelCause(ctx)
	every := h.l.Poll
	if every <= 0 {
		every = DefaultTurnPoll
	}
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			if to, ok := h.stopAsked(); ok {
				cancel(&MovedError{To: to})
				return
			}
		}
	}()
	return ctx, func() { close(done); <-finished; cancel(nil) }
}

// stopAsked reads the session's stop file: where the session goes, when
// it names this turn.
func (h *heldTurn) stopAsked() (to string, ok bool) {
	b, err := os.ReadFile(h.l.path(h.sessionID, ".stop"))
	if err != nil {
		return "", false
	}
	token, to, _ := strings.Cut(strings.TrimSpace(string(b)), "\n")
	return to, token == h.token
}

// Stop asks the turn running in sessionID, in this process or another
// of the home, to stop (TurnGuard).
func (l *TurnLocks) Stop(ctx context.Context, sessionID, to string, wait time.Duration) (running bool, err error) {
	if l == nil || l.Dir == "" {
		return false, nil
	}
	stopPath := l.path(sessionID, ".stop")
	asked := ""
	defer func() {
		if asked != "" {
			_ = os.Remove(stopPath)
		}
	}()
	deadline := time.Now().Add(wait)
	for {
		f, token, err := l.open(sessionID)
		if err != nil {
			return running, err
		}
		if f != nil {
			unlock(f, l.path(sessionID, ".turn"))
			return running, nil
		}
		running = true
		if token != "" && token != asked {
			// Written whole under a temporary name, so the turn never
			// reads half of it.
			tmp := stopPath + ".tmp"
			if err := os.WriteFile(tmp, []byte(token+"\n"+to+"\n"), 0o600); err != nil {
				return running, fmt.Errorf("ask the turn of session %s to stop: %w", sessionID, err)
			}
			if err := os.Rename(tmp, stopPath); err != nil {
				return running, fmt.Errorf("ask the turn of session %s to stop: %w", sessionID, err)
			}
			asked = token
		}
		if time.Now().After(deadline) {
			return running, fmt.Errorf("session %s: %w", sessionID, ErrTurnStillRunning)
		}
		select {
		case <-ctx.Done():
			return running, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}
