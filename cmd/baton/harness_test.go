package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/baton-agent/baton/internal/mcp/mcptest"
	"github.com/baton-agent/baton/internal/store/postgres/pgtest"
)

// batonBin is the real baton binary, built once by TestMain, and
// whatsappBin baton-whatsapp, built beside it (where baton looks first).
var batonBin, whatsappBin string

func TestMain(m *testing.M) {
	if mcptest.Serving() { // started by a test's baton as its MCP server
		os.Exit(mcptest.ServeStdio())
	}
	// BATON_BIN runs the tests and benchmarks against a binary built
	// beforehand (scripts/bench measures the release build this way).
	if bin := os.Getenv("BATON_BIN"); bin != "" {
		batonBin = bin
		whatsappBin = filepath.Join(filepath.Dir(bin), "baton-whatsapp")
		os.Exit(pgtest.Run(m))
	}
	dir, err := os.MkdirTemp("", "baton-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	batonBin = filepath.Join(dir, "baton")
	goTool := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(goTool); err != nil {
		goTool = "go"
	}
	whatsappBin = filepath.Join(dir, "baton-whatsapp")
	for _, b := range [][2]string{{batonBin, "."}, {whatsappBin, "../baton-whatsapp"}} {
		build := exec.Command(goTool, "build", "-o", b[0], b[1])
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "build", filepath.Base(b[0])+":", err)
			os.RemoveAll(dir)
			os.Exit(1)
		}
	}
	code := pgtest.Run(m)
	os.RemoveAll(dir)
	os.Exit(code)
}

// cleanEnv is a minimal environment for baton: nothing from the person
// running the tests (API keys above all) leaks in.
func cleanEnv(home string, extra ...string) []string {
	env := []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + home,
		"TERM=xterm-256color",
		"LANG=C.UTF-8",
		"BATON_HOME=" + filepath.Join(home, "baton"),
	}
	return append(env, extra...)
}

// hangGuard bounds every wait on the child so a broken build fails the test
// with its output instead of hanging CI. It is not a performance assertion:
// everything awaited normally arrives in milliseconds.
const hangGuard = 60 * time.Second

// ansi matches terminal escape sequences, to compare what a person sees.
var ansi = regexp.MustCompile(`\x1b(\[[0-9;?<=>]*[ -/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)|[()][0-9A-Za-z]|[=>78])`)

// term is baton running in a real pseudo-terminal.
type term struct {
	tb  testing.TB
	cmd *exec.Cmd
	pty *os.File

	mu      sync.Mutex
	cond    *sync.Cond
	raw     bytes.Buffer
	readErr error
	pos     int // in the stripped text: expect searches after this
	done    chan struct{}
	exited  chan struct{}
	waitErr error
}

// startTerm runs baton with args in a 120x40 pty. It answers the terminal's
// cursor-position query as a terminal emulator would, and the test's
// cleanup kills and reaps the process whatever happened.
func startTerm(tb testing.TB, env []string, dir string, args ...string) *term {
	tb.Helper()
	cmd := exec.Command(batonBin, args...)
	cmd.Env = env
	cmd.Dir = dir
	f, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 40, Cols: 120})
	if err != nil {
		tb.Fatalf("start baton in a pty: %v", err)
	}
	tm := &term{tb: tb, cmd: cmd, pty: f, done: make(chan struct{}), exited: make(chan struct{})}
	tm.cond = sync.NewCond(&tm.mu)
	go tm.read()
	go func() {
		err := cmd.Wait()
		tm.mu.Lock()
		tm.waitErr = err
		tm.mu.Unlock()
		close(tm.exited)
	}()
	tb.Cleanup(func() {
		select {
		case <-tm.exited:
		default:
			_ = cmd.Process.Kill()
			<-tm.exited
		}
		f.Close()
		<-tm.done
	})
	return tm
}

func (tm *term) read() {
	defer close(tm.done)
	buf := make([]byte, 32<<10)
	tail := ""
	for {
		n, err := tm.pty.Read(buf)
		if n > 0 {
			chunk := string(buf[:n])
			// readline asks where the cursor is ("\e[6n") before drawing;
			// answer like a terminal would. Row 1: there is always room below.
			probes := strings.Count(tail+chunk, "\x1b[6n") - strings.Count(tail, "\x1b[6n")
			for range probes {
				_, _ = tm.pty.WriteString("\x1b[1;1R")
			}
			tail = (tail + chunk)[max(0, len(tail)+len(chunk)-3):]
			tm.mu.Lock()
			tm.raw.WriteString(chunk)
			tm.cond.Broadcast()
			tm.mu.Unlock()
		}
		if err != nil {
			tm.mu.Lock()
			tm.readErr = err
			tm.cond.Broadcast()
			tm.mu.Unlock()
			return
		}
	}
}

// screen is everything printed so far without escape sequences.
func (tm *term) screenLocked() string {
	return strings.ReplaceAll(ansi.ReplaceAllString(tm.raw.String(), ""), "\r", "")
}

// Screen is everything printed so far without escape sequences.
func (tm *term) Screen() string {
	tm.mu.Lock()
	defer tm.mu.Unlock()
	return tm.screenLocked()
}

// expect waits until want appears after the previous match.
func (tm *term) expect(want string) {
	tm.tb.Helper()
	deadline := time.AfterFunc(hangGuard, func() {
		tm.mu.Lock()
		tm.readErr = fmt.Errorf("gave up after %v", hangGuard)
		tm.cond.Broadcast()
		tm.mu.Unlock()
	})
	defer deadline.Stop()
	tm.mu.Lock()
	defer tm.mu.Unlock()
	for {
		s := tm.screenLocked()
		if i := strings.Index(s[tm.pos:], want); i >= 0 {
			tm.pos += i + len(want)
			return
		}
		if tm.readErr != nil {
			tm.tb.Fatalf("waiting for %q: %v\nscreen after the last match:\n%s\nraw tail: %q", want, tm.readErr, s[tm.pos:], tailOf(tm.raw.String(), 600))
		}
		tm.cond.Wait()
	}
}

// send types s (use "\r" for Enter).
func (tm *term) send(s string) {
	tm.tb.Helper()
	if _, err := tm.pty.WriteString(s); err != nil {
		tm.tb.Fatalf("type %q: %v", s, err)
	}
}

// line waits for the prompt, then types text and Enter.
func (tm *term) line(text string) {
	tm.tb.Helper()
	tm.expect("› ")
	tm.answer(text)
	tm.expect(text) // the echo: what comes next is baton's answer
}

// answer types text and Enter once the prompt on screen is ready for it.
//
// readline asks the terminal for the cursor position while drawing a
// prompt and takes the next read from the terminal as the answer; keys
// arriving in the same read as that answer would be dropped. A person
// cannot type that fast; a test can, so it waits until the prompt is drawn
// (the cursor shown again after the last position query).
func (tm *term) answer(text string) {
	tm.tb.Helper()
	tm.waitFor("prompt drawn", func(raw string) bool {
		return strings.LastIndex(raw, "\x1b[?25h") > strings.LastIndex(raw, "\x1b[6n")
	})
	tm.send(text + "\r")
}

// waitFor waits until ok holds for the raw output.
func (tm *term) waitFor(what string, ok func(raw string) bool) {
	tm.tb.Helper()
	deadline := time.AfterFunc(hangGuard, func() {
		tm.mu.Lock()
		tm.readErr = fmt.Errorf("gave up after %v", hangGuard)
		tm.cond.Broadcast()
		tm.mu.Unlock()
	})
	defer deadline.Stop()
	tm.mu.Lock()
	defer tm.mu.Unlock()
	for !ok(tm.raw.String()) {
		if tm.readErr != nil {
			tm.tb.Fatalf("waiting for %s: %v\nraw tail: %q", what, tm.readErr, tailOf(tm.raw.String(), 600))
		}
		tm.cond.Wait()
	}
}

// wait waits for baton to exit and returns its exit error.
func (tm *term) wait() error {
	tm.tb.Helper()
	select {
	case <-tm.exited:
	case <-time.After(hangGuard):
		tm.tb.Fatalf("baton did not exit; screen:\n%s", tm.Screen())
	}
	tm.mu.Lock()
	defer tm.mu.Unlock()
	return tm.waitErr
}

func tailOf(s string, n int) string { return s[max(0, len(s)-n):] }
