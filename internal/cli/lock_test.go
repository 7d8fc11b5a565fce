package cli

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/baton-agent/baton/internal/llm/llmtest"
	"github.com/baton-agent/baton/internal/testutil"
)

// Two terminals on one session: the second is told the first has it
// open (with its pid), runs no turn and ends nothing; once the first
// leaves, a terminal can type into it again.
func TestSecondTerminalIsReadOnly(t *testing.T) {
	srv := llmtest.Start(t)
	app := testApp(t, srv)
	ctx := t.Context()
	s, err := app.NewSession(ctx)
	if err != nil {
		t.Fatal(err)
	}

	// The first terminal enters the session, has a turn and stays at its
	// prompt, reading from a pipe the test writes to.
	typed, keys := io.Pipe()
	firstOut := &syncBuffer{}
	first, err := New(Config{App: app, Out: firstOut, SessionID: s.ID, Reader: NewScriptReader(typed, firstOut), Interrupts: make(chan os.Signal)})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- first.Run(ctx) }()
	t.Cleanup(func() { keys.Close() })
	fmt.Fprintln(keys, "hello from the first")
	testutil.Eventually(t, testutil.Patience, func() bool { return strings.Contains(firstOut.String(), "echo: hello from the first") }, "the first terminal's turn")
	calls := len(srv.Requests())

	out := runREPL(t, app, Config{SessionID: s.ID}, "typed in the second", "/retry", "/handoff web", "/continue", "/quit")
	line := fmt.Sprintf("This conversation is open in another terminal (pid %d); here it is read-only until that terminal leaves it.", os.Getpid())
	if n := strings.Count(out, line); n != 5 { // on entering, then for the message and each of the three commands
		t.Errorf("the line shown %d times, want 5:\n%s", n, out)
	}
	if !strings.Contains(out, "It stays open in the other terminal.") {
		t.Errorf("quitting the second terminal did not say the session stays:\n%s", out)
	}
	if n := len(srv.Requests()); n != calls {
		t.Errorf("the second terminal ran %d model calls", n-calls)
	}
	if got, _ := app.Store.GetSession(ctx, s.ID); !got.Open() {
		t.Fatalf("the second terminal ended the session the first has open: %+v", got)
	}
	if !strings.Contains(out, "kept") {
		t.Errorf("the second terminal does not say its message is kept:\n%s", out)
	}

	// The first goes on: what the second kept is answered first, in order.
	fmt.Fprintln(keys, "still mine")
	testutil.Eventually(t, testutil.Patience, func() bool { return strings.Contains(firstOut.String(), "echo: still mine") }, "the first terminal's next turn")
	if kept, mine := strings.Index(firstOut.String(), "echo: typed in the second"), strings.Index(firstOut.String(), "echo: still mine"); kept < 0 || kept > mine {
		t.Errorf("the message kept in the second terminal was not answered before the next turn:\n%s", firstOut.String())
	}
	fmt.Fprintln(keys, "/quit")
	if err := testutil.Receive(t, done, "the first terminal to leave"); err != nil {
		t.Fatalf("first terminal: %v\n%s", err, firstOut.String())
	}

	// Now another terminal has it to itself.
	out = runREPL(t, app, Config{SessionID: s.ID}, "my turn now")
	if !strings.Contains(out, "echo: my turn now") || strings.Contains(out, "open in another terminal") {
		t.Errorf("after the first left:\n%s", out)
	}
}

// A one-shot refuses a session a terminal has open.
func TestOnceRefusesSessionOpenInATerminal(t *testing.T) {
	srv := llmtest.Start(t)
	app := testApp(t, srv)
	s, err := app.NewSession(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	l, err := lockSession(app.Home, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	var out, errOut strings.Builder
	err = Once(t.Context(), app, s.ID, "sneak in", nil, &out, &errOut)
	var oe *OpenElsewhereError
	if !errors.Is(err, ErrOpenElsewhere) || !errors.As(err, &oe) || oe.PID != os.Getpid() {
		t.Fatalf("Once on a locked session: %v", err)
	}
	if len(srv.Requests()) != 0 {
		t.Errorf("the one-shot reached the model")
	}
	l.release()
	if err := Once(t.Context(), app, s.ID, "now then", nil, &out, &errOut); err != nil {
		t.Fatalf("Once after the lock was released: %v", err)
	}
}

// The lock goes with the process: a lock file left behind by a process
// that is gone locks nothing.
func TestStaleLockFileLocksNothing(t *testing.T) {
	home := t.TempDir()
	if err := os.MkdirAll(home+"/"+LocksDir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(home+"/"+LocksDir+"/s1.lock", []byte("999999\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := lockSession(home, "s1")
	if err != nil {
		t.Fatalf("a stale lock file kept the session locked: %v", err)
	}
	l.release()
}

// Leaving a session removes its lock file, and a terminal that opened the
// file just before it went takes the lock on a fresh one: two terminals
// never hold the session at once.
func TestLockFileGoesWithTheLastHolder(t *testing.T) {
	home := t.TempDir()
	path := filepath.Join(home, LocksDir, "s1.lock")
	first, err := lockSession(home, "s1")
	if err != nil {
		t.Fatal(err)
	}
	// Another terminal has the file open, waiting to lock it.
	early, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer early.Close()
	first.release()
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the lock file is still there after its holder left: %v", err)
	}
	// The early opener locks the removed file: that is no lock on the path.
	if err := syscall.Flock(int(early.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	if samePath(early, path) {
		t.Fatal("a removed lock file counts as the one at the path")
	}
	second, err := lockSession(home, "s1")
	if err != nil {
		t.Fatalf("the session stays locked by a removed file: %v", err)
	}
	if _, err := lockSession(home, "s1"); !errors.Is(err, ErrOpenElsewhere) {
		t.Errorf("a third terminal got in while the second holds the session: %v", err)
	}
	second.release()
	if entries, _ := os.ReadDir(filepath.Join(home, LocksDir)); len(entries) != 0 {
		t.Errorf("left in the locks folder: %v", entries)
	}
}
