package tools_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/agent"
	"github.com/baton-agent/baton/internal/agent/tools"
	"github.com/baton-agent/baton/internal/testutil"
)

// helperEnv makes the test binary run one shell command through the shell
// tool and block, standing in for a baton that gets killed mid-command.
const helperEnv = "BATON_TOOLS_SHELL_HELPER"

func TestMain(m *testing.M) {
	if cmdline := os.Getenv(helperEnv); cmdline != "" {
		r, err := tools.NewRegistry(tools.Config{Dir: os.Getenv("BATON_TOOLS_DIR"), ShellTimeout: time.Hour})
		if err != nil {
			panic(err)
		}
		tl, _ := r.Get("shell")
		args, _ := json.Marshal(map[string]any{"command": cmdline})
		_, _ = tl.Run(context.Background(), args)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func waitPID(t *testing.T, pidFile string) int {
	t.Helper()
	testutil.Eventually(t, 10*time.Second, func() bool {
		b, err := os.ReadFile(pidFile)
		return err == nil && strings.HasSuffix(string(b), "\n")
	}, "the command to write its child's pid")
	b, _ := os.ReadFile(pidFile)
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

// A baton killed mid-command (SIGKILL: nothing runs on the way out) takes
// the command's whole process group with it.
func TestShellDiesWithBaton(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pid")
	helper := exec.Command(os.Args[0], "-test.run=^$")
	helper.Env = append(os.Environ(), helperEnv+"=sleep 120 & echo $! > pid; wait", "BATON_TOOLS_DIR="+dir)
	if err := helper.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = helper.Process.Kill(); _ = helper.Wait() })
	pid := waitPID(t, pidFile)
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	if err := helper.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = helper.Wait()
	testutil.Eventually(t, 10*time.Second, func() bool { return !alive(pid) }, "the command's child to die with baton")
}

// A command past its timeout is killed with its children.
func TestShellTimeoutKillsGroup(t *testing.T) {
	r, dir := registry(t, tools.Config{})
	_, err := call(t, r, "shell", m{"command": "sleep 120 & echo $! > pid; wait", "timeout_seconds": 0.5})
	if err == nil || !strings.Contains(err.Error(), "timed out") {
		t.Fatalf("err = %v", err)
	}
	pid := waitPID(t, filepath.Join(dir, "pid"))
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	testutil.Eventually(t, 10*time.Second, func() bool { return !alive(pid) }, "the timed-out command's child to die")
}

// A command that ends normally may leave a background process behind, as
// before: only a timeout, a cancel or baton's death kills the group.
func TestShellFinishedCommandKeepsBackground(t *testing.T) {
	r, dir := registry(t, tools.Config{})
	out, err := call(t, r, "shell", m{"command": "sleep 120 >/dev/null 2>&1 & echo $! > pid"})
	if err != nil || !strings.Contains(out, "[exit code 0]") {
		t.Fatalf("%q %v", out, err)
	}
	pid := waitPID(t, filepath.Join(dir, "pid"))
	defer syscall.Kill(pid, syscall.SIGKILL)
	if !alive(pid) {
		t.Fatal("a finished command's background process was killed")
	}
}

func TestSymlinksAreResolvedInSubjects(t *testing.T) {
	outside := t.TempDir()
	r, dir := registry(t, tools.Config{})
	if err := os.Symlink(outside, filepath.Join(dir, "docs")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "new.txt"), filepath.Join(dir, "dangling")); err != nil {
		t.Fatal(err)
	}
	realOutside, _ := filepath.EvalSymlinks(outside)
	cases := []struct{ tool, args, want string }{
		{"write_file", `{"path":"docs/passwd"}`, filepath.Join(realOutside, "passwd")},
		{"write_file", `{"path":"dangling"}`, filepath.Join(realOutside, "new.txt")},
		{"read_file", `{"path":"docs"}`, realOutside},
	}
	for _, c := range cases {
		tl, _ := r.Get(c.tool)
		if got := tl.Subject(json.RawMessage(c.args)); got != c.want {
			t.Errorf("%s %s: subject %q, want %q", c.tool, c.args, got, c.want)
		}
		if tl.Inside(json.RawMessage(c.args)) {
			t.Errorf("%s %s: counted as inside the working directory", c.tool, c.args)
		}
	}
}

func TestInside(t *testing.T) {
	extra := t.TempDir()
	r, dir := registry(t, tools.Config{Paths: []string{extra}})
	write(t, filepath.Join(dir, "a.txt"), "a")
	cases := []struct {
		tool, path string
		want       bool
	}{
		{"read_file", "a.txt", true},
		{"read_file", "/etc/passwd", false},
		{"read_file", "../x", false},
		{"read_file", filepath.Join(extra, "notes.md"), true},
		{"list_dir", "", true},
		{"list_dir", "/", false},
		{"read_file", ".git/config", true},
		{"write_file", "a.txt", true},
		{"write_file", ".git/config", false},
		{"edit_file", "sub/.git/hooks/pre-commit", false},
		{"write_file", filepath.Join(extra, "n.md"), true},
		{"write_file", "/tmp/elsewhere", false},
	}
	for _, c := range cases {
		tl, _ := r.Get(c.tool)
		args, _ := json.Marshal(m{"path": c.path})
		if got := tl.Inside(args); got != c.want {
			t.Errorf("%s %q: inside = %v, want %v", c.tool, c.path, got, c.want)
		}
	}
}

// An auto-allowed git command runs with the repository's fsmonitor hook
// and hooks directory switched off; one a person approved runs as git
// would.
func TestAllowedGitRunsWithoutHooks(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	r, dir := registry(t, tools.Config{})
	init := exec.Command("git", "init", "-q", dir)
	if out, err := init.CombinedOutput(); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
	cfg := exec.Command("git", "config", "core.fsmonitor", "touch pwned; false")
	cfg.Dir = dir
	if out, err := cfg.CombinedOutput(); err != nil {
		t.Fatalf("git config: %v %s", err, out)
	}
	if _, err := callCtx(agent.WithAutoAllowed(context.Background()), t, r, "shell", m{"command": "git status"}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "pwned")); err == nil {
		t.Fatal("an auto-allowed git status ran the fsmonitor hook")
	}
	if _, err := call(t, r, "shell", m{"command": "git status"}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "pwned")); err != nil {
		t.Fatal("the hook did not run when a person approved: the test proves nothing")
	}
}
