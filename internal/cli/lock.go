package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// Every terminal is the same place ("cli:dm:<owner>") to the store, so
// the holder alone cannot keep two terminals from typing into one
// session. A terminal therefore takes an exclusive, non-blocking flock on
// $BATON_HOME/locks/<session>.lock while it is in a session; the kernel
// drops it when the process exits, however it exits, so a crashed
// terminal never leaves a session locked.
//
// A terminal that leaves a session removes the file while it still holds
// the lock. Another terminal may have opened that file just before and
// then gets the lock on a file no longer at the path; so whoever takes a
// lock checks that its file is still the one at the path, and opens the
// path again if not. A file left by a crash is removed by the next
// terminal to leave that session.

// LocksDir is the folder under BATON_HOME that holds the session locks.
const LocksDir = "locks"

// ErrOpenElsewhere is returned when another terminal is in the session.
var ErrOpenElsewhere = errors.New("the conversation is open in another terminal")

// OpenElsewhereError names the process that has the session open.
type OpenElsewhereError struct {
	PID int // 0 when it could not be read
}

func (e *OpenElsewhereError) Error() string {
	if e.PID == 0 {
		return ErrOpenElsewhere.Error()
	}
	return fmt.Sprintf("%s (pid %d)", ErrOpenElsewhere, e.PID)
}

func (e *OpenElsewhereError) Unwrap() error { return ErrOpenElsewhere }

// sessionLock is this process's hold on one session.
type sessionLock struct {
	sessionID string
	f         *os.File
	path      string
}

// lockSession takes the lock on sessionID without waiting. When another
// terminal has it, the error is an *OpenElsewhereError.
func lockSession(home, sessionID string) (*sessionLock, error) {
	dir := filepath.Join(home, LocksDir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("lock session %s: %w", sessionID, err)
	}
	path := filepath.Join(dir, sessionID+".lock")
	for {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			return nil, fmt.Errorf("lock session %s: %w", sessionID, err)
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			pid := lockOwner(f)
			f.Close()
			if errors.Is(err, syscall.EWOULDBLOCK) {
				return nil, &OpenElsewhereError{PID: pid}
			}
			return nil, fmt.Errorf("lock session %s: %w", sessionID, err)
		}
		if !samePath(f, path) {
			// Removed by the terminal that held it: ours is no lock.
			f.Close()
			continue
		}
		// Who has it, for the message another terminal shows.
		if err := f.Truncate(0); err == nil {
			_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
		}
		return &sessionLock{sessionID: sessionID, f: f, path: path}, nil
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

// lockOwner is the pid written into a lock file, 0 if unreadable.
func lockOwner(f *os.File) int {
	b, err := io.ReadAll(io.NewSectionReader(f, 0, 32))
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid
}

// release lets other terminals in; nil-safe.
func (l *sessionLock) release() {
	if l == nil {
		return
	}
	_ = os.Remove(l.path) // while still held: see the top of this file
	_ = syscall.Flock(int(l.f.Fd()), syscall.LOCK_UN)
	l.f.Close()
}

// openElsewhereLine is what a terminal says when another has the session.
func openElsewhereLine(err error) string {
	var oe *OpenElsewhereError
	if errors.As(err, &oe) {
		who := "another terminal"
		if oe.PID != 0 {
			who = fmt.Sprintf("another terminal (pid %d)", oe.PID)
		}
		return fmt.Sprintf("This conversation is open in %s; here it is read-only until that terminal leaves it.", who)
	}
	return "error: " + err.Error()
}

// hold makes sure this terminal has the lock on the current session,
// trading the lock on a session it left for it. A terminal kept out
// tries again at each message, so it can go on once the other leaves.
func (r *REPL) hold() error {
	if r.session.ID == "" || r.app.Home == "" {
		return nil
	}
	if r.lock != nil && r.lock.sessionID == r.session.ID {
		return nil
	}
	r.releaseLock()
	l, err := lockSession(r.app.Home, r.session.ID)
	if err != nil {
		return err
	}
	r.lock = l
	return nil
}

func (r *REPL) releaseLock() {
	r.lock.release()
	r.lock = nil
}

// mayEnd reports whether leaving the current session may end it: only
// a terminal that has it open and holds it does; elsewhere it goes on.
func (r *REPL) mayEnd(ctx context.Context) bool {
	if r.hold() != nil {
		return false
	}
	r.refresh(ctx)
	return !r.session.HeldElsewhere(r.app.TerminalKey())
}
