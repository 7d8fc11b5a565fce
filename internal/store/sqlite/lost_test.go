package sqlite_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/store"
	"github.com/baton-agent/baton/internal/store/sqlite"
	"github.com/baton-agent/baton/internal/testutil"
)

// helperHold is a process using the store as the gateway does: it opens
// it, stores a session of three messages for each line "session" read
// from stdin, answering "ok", and stays until killed. Its store keeps
// what it stores in the log (no idle checkpoint) unless IDLE is set.
// Nothing commits after "ok" on its own: no background index, whose late
// commit would see a deleted log and copy it into the file (checkpoint.go),
// which a test deleting the log must not race.
func helperHold() int {
	ctx := context.Background()
	opts := []sqlite.Option{sqlite.WithoutBackgroundIndex()}
	if os.Getenv("IDLE") == "" {
		opts = append(opts, sqlite.WithoutIdleCheckpoints())
	}
	s, err := sqlite.Open(ctx, os.Getenv("DB"), opts...)
	if err != nil {
		fmt.Println("open:", err)
		return 1
	}
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		sess, err := s.CreateSession(ctx, store.Session{OwnerID: "u"})
		if err == nil {
			_, err = s.AppendMessages(ctx, sess.ID,
				store.Message{Role: store.RoleUser, Content: "hello from " + sess.ID},
				store.Message{Role: store.RoleAssistant, Content: "hello"},
				store.Message{Role: store.RoleUser, Content: "bye"})
		}
		if err != nil {
			fmt.Println("write:", err)
			return 1
		}
		fmt.Println("ok")
	}
	select {} // until killed, like a gateway that never gets to stop
}

// holder is a running helperHold process.
type holder struct {
	t   *testing.T
	in  io.WriteCloser
	out *bufio.Scanner
	p   *os.Process
}

func startHolder(t *testing.T, path string, env ...string) *holder {
	t.Helper()
	cmd := helper(t, "hold", append([]string{"DB=" + path}, env...)...)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	h := &holder{t: t, in: in, out: bufio.NewScanner(out), p: cmd.Process}
	t.Cleanup(func() { h.kill(); _ = cmd.Wait() })
	return h
}

// sessions has the process store n sessions and waits until they are.
func (h *holder) sessions(n int) {
	h.t.Helper()
	for range n {
		if _, err := fmt.Fprintln(h.in, "session"); err != nil {
			h.t.Fatal(err)
		}
		if !h.out.Scan() || h.out.Text() != "ok" {
			h.t.Fatalf("the holding process answered %q (%v)", h.out.Text(), h.out.Err())
		}
	}
}

// kill ends the process at once, as a power cut of baton alone would:
// no checkpoint, no close.
func (h *holder) kill() { _ = h.p.Kill(); _, _ = h.p.Wait() }

// openSessions opens the store at path and lists its sessions.
func openSessions(t *testing.T, path string) (int, error) {
	t.Helper()
	s, err := sqlite.Open(t.Context(), path)
	if err != nil {
		return 0, err
	}
	defer s.Close()
	list, err := s.ListSessions(t.Context(), store.SessionFilter{})
	return len(list), err
}

// wantRefused checks that opening the store failed with err, naming what
// happened and what to do, and left the file as it was.
func wantRefused(t *testing.T, path string, n int, err error, sentinel error, words ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("the store opened with %d sessions of the 4 it held, and no word of the rest", n)
	}
	if !errors.Is(err, sentinel) {
		t.Fatalf("error %v is not %v", err, sentinel)
	}
	for _, w := range words {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not say %q", err, w)
		}
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// Issue 24, 1: a copy of state.db alone, made while baton runs, lacks what
// the write-ahead log holds. Put back in place of the store, it is refused
// rather than taken for the store.
func TestCopyOfTheMainFileAloneIsRefused(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, sqlite.FileName)
	h := startHolder(t, path)
	h.sessions(4)
	copyFile(t, path, filepath.Join(dir, "copy.db"))
	h.kill()
	// The person puts the copy back, as it was copied: without a log.
	for _, f := range []string{path + "-wal", path + "-shm"} {
		if err := os.Remove(f); err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
	}
	if err := os.Rename(filepath.Join(dir, "copy.db"), path); err != nil {
		t.Fatal(err)
	}
	n, err := openSessions(t, path)
	wantRefused(t, path, n, err, store.ErrLost, "4 sessions", path+"-wal", "baton backup", "rm "+path+sqlite.RecordSuffix)
}

// Issue 24, 2: the write-ahead log deleted while baton runs, then baton
// killed before it stored anything more: what the log held is gone, and
// the store is refused.
func TestLogDeletedThenKilledIsRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), sqlite.FileName)
	h := startHolder(t, path)
	h.sessions(4)
	if err := os.Remove(path + "-wal"); err != nil {
		t.Fatal(err)
	}
	h.kill()
	n, err := openSessions(t, path)
	wantRefused(t, path, n, err, store.ErrLost, "4 sessions", path+"-wal")
}

// The log deleted while baton runs, and baton storing more before it is
// killed: the running store sees its log gone and copies it into the
// store's file with each commit, so nothing it stored is lost.
func TestLogDeletedUnderARunningStoreIsCopiedIn(t *testing.T) {
	path := filepath.Join(t.TempDir(), sqlite.FileName)
	h := startHolder(t, path)
	h.sessions(2)
	if err := os.Remove(path + "-wal"); err != nil {
		t.Fatal(err)
	}
	h.sessions(2)
	h.kill()
	if n, err := openSessions(t, path); err != nil || n != 4 {
		t.Fatalf("after the log was deleted and baton killed: %d of 4 sessions, %v", n, err)
	}
}

// Issue 24, 3: state.db emptied beside the log of a killed baton: SQLite
// would start a new database and drop the log. Refused, both files kept.
func TestEmptiedFileBesideALogIsRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), sqlite.FileName)
	h := startHolder(t, path)
	h.sessions(4)
	h.kill()
	wal, err := os.ReadFile(path + "-wal")
	if err != nil || len(wal) == 0 {
		t.Fatalf("the killed process left no log (%d bytes, %v)", len(wal), err)
	}
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	n, err := openSessions(t, path)
	wantRefused(t, path, n, err, store.ErrDamaged, "empty", path+"-wal")
	if after, _ := os.ReadFile(path + "-wal"); string(after) != string(wal) {
		t.Error("the log was changed")
	}
}

// The store's file removed while its record stays: not started afresh.
func TestRemovedFileIsNotStartedAfresh(t *testing.T) {
	path := filepath.Join(t.TempDir(), sqlite.FileName)
	h := startHolder(t, path)
	h.sessions(4)
	h.kill()
	for _, f := range []string{path, path + "-wal", path + "-shm"} {
		if err := os.Remove(f); err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
	}
	n, err := openSessions(t, path)
	wantRefused(t, path, n, err, store.ErrLost, "gone", "4 sessions")
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Error("a new store file was made")
	}
	// Removing the record, as the error says, is starting afresh on purpose.
	if err := os.Remove(path + sqlite.RecordSuffix); err != nil {
		t.Fatal(err)
	}
	if n, err := openSessions(t, path); err != nil || n != 0 {
		t.Fatalf("after the record was removed: %d sessions, %v", n, err)
	}
}

// What the store lost by a person's own hand (sessions deleted) is no
// loss: it opens, after a kill too.
func TestDeletedSessionsAreNoLoss(t *testing.T) {
	path := filepath.Join(t.TempDir(), sqlite.FileName)
	s, err := sqlite.Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for range 3 {
		sess, _ := s.CreateSession(t.Context(), store.Session{OwnerID: "u"})
		if _, err := s.AppendMessages(t.Context(), sess.ID, store.Message{Role: store.RoleUser, Content: "x"}); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, sess.ID)
	}
	for _, id := range ids {
		if err := s.DeleteSession(t.Context(), id); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if n, err := openSessions(t, path); err != nil || n != 0 {
		t.Fatalf("a store whose sessions were all deleted: %d sessions, %v", n, err)
	}
}

// A store that held nothing loses nothing: removed, it is made afresh.
func TestEmptyStoreRemovedIsMadeAfresh(t *testing.T) {
	path := filepath.Join(t.TempDir(), sqlite.FileName)
	if n, err := openSessions(t, path); err != nil || n != 0 {
		t.Fatal(n, err)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if n, err := openSessions(t, path); err != nil || n != 0 {
		t.Fatalf("a removed store that held nothing: %d sessions, %v", n, err)
	}
}

// A copy of state.db alone, made while baton runs idle, holds everything:
// the idle store's log is checkpointed into it. (Not a backup: a copy
// made mid-write or mid-checkpoint is not; `baton backup` makes one.)
func TestIdleStoreFileHoldsEverything(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, sqlite.FileName)
	h := startHolder(t, path, "IDLE=1")
	h.sessions(4)
	copied := filepath.Join(t.TempDir(), sqlite.FileName)
	testutil.Eventually(t, 30*time.Second, func() bool {
		copyFile(t, path, copied)
		n, err := openSessions(t, copied)
		for _, f := range []string{copied, copied + "-wal", copied + "-shm", copied + sqlite.RecordSuffix} {
			os.Remove(f)
		}
		return err == nil && n == 4
	}, "a copy of the idle store's file alone to hold its 4 sessions")
}
