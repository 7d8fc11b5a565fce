package tools_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
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

func registry(t *testing.T, cfg tools.Config) (*agent.Registry, string) {
	t.Helper()
	if cfg.Dir == "" {
		cfg.Dir = t.TempDir()
	}
	r, err := tools.NewRegistry(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return r, cfg.Dir
}

func call(t *testing.T, r *agent.Registry, name string, args any) (string, error) {
	t.Helper()
	return callCtx(context.Background(), t, r, name, args)
}

func callCtx(ctx context.Context, t *testing.T, r *agent.Registry, name string, args any) (string, error) {
	t.Helper()
	tool, ok := r.Get(name)
	if !ok {
		t.Fatalf("no tool %s", name)
	}
	raw, ok := args.(string)
	if !ok {
		b, err := json.Marshal(args)
		if err != nil {
			t.Fatal(err)
		}
		raw = string(b)
	}
	return tool.Run(ctx, json.RawMessage(raw))
}

type m = map[string]any

func TestRegistryList(t *testing.T) {
	r, _ := registry(t, tools.Config{})
	var names []string
	for _, tl := range r.List(context.Background()) {
		names = append(names, tl.Name)
		if !json.Valid(tl.Parameters) || tl.Description == "" {
			t.Errorf("%s: bad schema or description", tl.Name)
		}
	}
	if got := strings.Join(names, ","); got != "shell,read_file,list_dir,write_file,edit_file" {
		t.Errorf("tools = %s", got)
	}
	for name, ro := range map[string]bool{"shell": false, "read_file": true, "list_dir": true, "write_file": false, "edit_file": false} {
		if tl, _ := r.Get(name); tl.ReadOnly != ro {
			t.Errorf("%s ReadOnly = %v", name, tl.ReadOnly)
		}
	}
	if err := r.Register(agent.Tool{Name: "shell", Run: func(context.Context, json.RawMessage) (string, error) { return "", nil }}); err == nil {
		t.Error("duplicate name registered")
	}
}

func TestShell(t *testing.T) {
	r, dir := registry(t, tools.Config{})
	out, err := call(t, r, "shell", m{"command": "pwd; echo oops >&2"})
	if err != nil {
		t.Fatal(err)
	}
	if want := dir + "\noops\n[exit code 0]"; out != want {
		t.Errorf("output = %q, want %q", out, want)
	}
	out, err = call(t, r, "shell", m{"command": "exit 3"})
	if err != nil || out != "[no output]\n[exit code 3]" {
		t.Errorf("exit 3: %q, %v", out, err)
	}
}

func TestShellBadArgs(t *testing.T) {
	r, _ := registry(t, tools.Config{})
	if _, err := call(t, r, "shell", m{"cmd": "ls"}); err == nil || !strings.Contains(err.Error(), `unknown field "cmd"`) {
		t.Errorf("unknown field: %v", err)
	}
	if _, err := call(t, r, "shell", `{"command": 5}`); err == nil || !strings.Contains(err.Error(), "invalid arguments for shell") {
		t.Errorf("wrong type: %v", err)
	}
	if _, err := call(t, r, "shell", m{}); err == nil || !strings.Contains(err.Error(), "command is required") {
		t.Errorf("missing command: %v", err)
	}
}

func TestShellTimeout(t *testing.T) {
	r, _ := registry(t, tools.Config{})
	// The command would run for 10 minutes: the call returning at all
	// means the timeout ended it rather than waiting it out.
	type result struct {
		out string
		err error
	}
	done := make(chan result, 1)
	go func() {
		out, err := call(t, r, "shell", m{"command": "echo started; sleep 600", "timeout_seconds": 0.3})
		done <- result{out, err}
	}()
	res := testutil.Receive(t, done, "the timed-out command to be ended")
	if res.err == nil || !strings.Contains(res.err.Error(), "timed out after 300ms") {
		t.Fatalf("err = %v", res.err)
	}
	if !strings.Contains(res.out, "started") {
		t.Errorf("output before the timeout lost: %q", res.out)
	}

	// The config default applies when the model names none.
	r, _ = registry(t, tools.Config{ShellTimeout: 200 * time.Millisecond})
	if _, err := call(t, r, "shell", m{"command": "sleep 10"}); err == nil || !strings.Contains(err.Error(), "timed out after 200ms") {
		t.Errorf("config timeout: %v", err)
	}
}

func TestShellOutputCap(t *testing.T) {
	r, _ := registry(t, tools.Config{MaxOutput: 1000})
	out, err := call(t, r, "shell", m{"command": "printf 'a%.0s' $(seq 3000); printf 'b%.0s' $(seq 2000)"})
	if err != nil {
		t.Fatal(err)
	}
	head, rest, ok := strings.Cut(out, "\n[truncated 4000 bytes]\n")
	if !ok {
		t.Fatalf("no truncation note in %q", out)
	}
	if head != strings.Repeat("a", 500) || rest != strings.Repeat("b", 500)+"\n[exit code 0]" {
		t.Errorf("kept %d head / %d tail bytes: %q … %q", len(head), len(rest), head[:10], rest[len(rest)-30:])
	}
}

// Cancelling kills the whole process group, not just bash.
func TestShellCancelKillsGroup(t *testing.T) {
	r, dir := registry(t, tools.Config{})
	ctx, cancel := context.WithCancel(context.Background())
	pidFile := filepath.Join(dir, "pid")
	go func() {
		for range 200 {
			if b, err := os.ReadFile(pidFile); err == nil && strings.HasSuffix(string(b), "\n") {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		cancel()
	}()
	_, err := callCtx(ctx, t, r, "shell", m{"command": "sleep 30 & echo $! > pid; wait"})
	if err != context.Canceled {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	b, _ := os.ReadFile(pidFile)
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 0, func() bool { return !alive(pid) }, "the background child to die with the cancel")
}

// alive reports whether pid runs; a zombie waiting for a reaper counts as dead.
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	_, after, _ := strings.Cut(string(stat), ") ")
	return !strings.HasPrefix(after, "Z")
}

func TestReadFile(t *testing.T) {
	r, dir := registry(t, tools.Config{MaxRead: 64})
	var lines []string
	for i := 1; i <= 10; i++ {
		lines = append(lines, fmt.Sprintf("line %d", i))
	}
	write(t, filepath.Join(dir, "ten.txt"), strings.Join(lines, "\n")+"\n")

	out, err := call(t, r, "read_file", m{"path": "ten.txt", "offset": 3, "limit": 2})
	if err != nil || out != "line 3\nline 4\n\n[lines 3-4 shown; more follow: read with offset=5]" {
		t.Errorf("offset/limit: %q, %v", out, err)
	}
	out, err = call(t, r, "read_file", m{"path": "ten.txt", "offset": 9})
	if err != nil || out != "line 9\nline 10\n" {
		t.Errorf("tail: %q, %v", out, err)
	}
	out, err = call(t, r, "read_file", m{"path": filepath.Join(dir, "ten.txt")})
	if err != nil || !strings.HasSuffix(out, "[lines 1-9 shown (size limit); more follow: read with offset=10]") {
		t.Errorf("size cap: %q, %v", out, err)
	}
	if out, _ := call(t, r, "read_file", m{"path": "ten.txt", "offset": 50}); out != "[the file has only 10 lines]" {
		t.Errorf("past the end: %q", out)
	}
	write(t, filepath.Join(dir, "long"), strings.Repeat("x", 100))
	if out, _ := call(t, r, "read_file", m{"path": "long"}); out != strings.Repeat("x", 64)+"\n[line 1 is 100 bytes; cut at 64]" {
		t.Errorf("long line: %q", out)
	}
	write(t, filepath.Join(dir, "bin"), "a\x00b")
	if _, err := call(t, r, "read_file", m{"path": "bin"}); err == nil || !strings.Contains(err.Error(), "binary") {
		t.Errorf("binary: %v", err)
	}
	if _, err := call(t, r, "read_file", m{"path": "."}); err == nil || !strings.Contains(err.Error(), "directory") {
		t.Errorf("directory: %v", err)
	}
	if _, err := call(t, r, "read_file", m{"path": "missing"}); err == nil {
		t.Error("missing file read")
	}
}

func TestWriteFileAndListDir(t *testing.T) {
	r, dir := registry(t, tools.Config{})
	out, err := call(t, r, "write_file", m{"path": "a/b/c.txt", "content": "hi\n"})
	if err != nil || out != "created a/b/c.txt (3 bytes)" {
		t.Fatalf("write: %q, %v", out, err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "a/b/c.txt")); string(b) != "hi\n" {
		t.Errorf("content = %q", b)
	}
	if out, _ := call(t, r, "write_file", m{"path": "a/b/c.txt", "content": ""}); out != "overwrote a/b/c.txt (0 bytes)" {
		t.Errorf("overwrite: %q", out)
	}
	if out, _ := call(t, r, "write_file", m{"path": "one.txt", "content": "x"}); out != "created one.txt (1 byte)" {
		t.Errorf("one byte: %q", out)
	}
	write(t, filepath.Join(dir, "a/z.txt"), "12345")
	out, err = call(t, r, "list_dir", m{"path": "a"})
	if err != nil || out != "b/\nz.txt (5 bytes)" {
		t.Errorf("list: %q, %v", out, err)
	}
	if out, _ := call(t, r, "list_dir", m{"path": "a/b/.."}); out != "b/\nz.txt (5 bytes)" {
		t.Errorf("list with ..: %q", out)
	}
}

func TestEditFile(t *testing.T) {
	r, dir := registry(t, tools.Config{})
	p := filepath.Join(dir, "f.go")
	write(t, p, "a := 1\nb := 1\nc := 2\n")
	if err := os.Chmod(p, 0o600); err != nil {
		t.Fatal(err)
	}

	_, err := call(t, r, "edit_file", m{"path": "f.go", "old_string": "d := 3", "new_string": "x"})
	if err == nil || !strings.Contains(err.Error(), "old_string not found") {
		t.Errorf("not found: %v", err)
	}
	_, err = call(t, r, "edit_file", m{"path": "f.go", "old_string": ":= 1", "new_string": ":= 9"})
	if err == nil || !strings.Contains(err.Error(), "occurs 2 times") {
		t.Errorf("ambiguous: %v", err)
	}
	if read(t, p) != "a := 1\nb := 1\nc := 2\n" {
		t.Error("a failed edit changed the file")
	}
	out, err := call(t, r, "edit_file", m{"path": "f.go", "old_string": "b := 1", "new_string": "b := 5"})
	if err != nil || out != "replaced 1 occurrence in f.go" {
		t.Errorf("unique: %q, %v", out, err)
	}
	out, err = call(t, r, "edit_file", m{"path": "f.go", "old_string": ":= ", "new_string": "= ", "replace_all": true})
	if err != nil || out != "replaced 3 occurrences in f.go" {
		t.Errorf("replace_all: %q, %v", out, err)
	}
	if got := read(t, p); got != "a = 1\nb = 5\nc = 2\n" {
		t.Errorf("content = %q", got)
	}
	if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode = %v", fi.Mode())
	}
	if _, err := call(t, r, "edit_file", m{"path": "f.go", "old_string": "", "new_string": "x"}); err == nil {
		t.Error("empty old_string accepted")
	}
}

func TestSubjects(t *testing.T) {
	r, dir := registry(t, tools.Config{})
	cases := []struct{ tool, args, want string }{
		{"shell", `{"command":"  git status  "}`, "git status"},
		{"write_file", `{"path":"docs/../x.md"}`, "x.md"},
		{"edit_file", `{"path":"../out.txt"}`, filepath.Join(filepath.Dir(dir), "out.txt")},
		{"write_file", `not json`, ""},
	}
	for _, c := range cases {
		tl, _ := r.Get(c.tool)
		if got := tl.Subject(json.RawMessage(c.args)); got != c.want {
			t.Errorf("%s %s: subject %q, want %q", c.tool, c.args, got, c.want)
		}
	}
}

func write(t *testing.T, p, s string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

func read(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
