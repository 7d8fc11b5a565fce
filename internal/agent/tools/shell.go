package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/baton-agent/baton/internal/agent"
)

// waitDelay is how long a finished or killed command may keep its output
// pipes open (a backgrounded child, say) before we stop reading.
const waitDelay = 2 * time.Second

type shellArgs struct {
	Command        string  `json:"command"`
	TimeoutSeconds float64 `json:"timeout_seconds"`
}

func shell(cfg Config) agent.Tool {
	return agent.Tool{
		Name: "shell",
		Description: fmt.Sprintf("Run a command with bash -c in %s. Stdout and stderr are combined and cut to %d bytes; the exit code is reported. "+
			"Times out after %s unless timeout_seconds says otherwise (at most %s). No stdin: do not run interactive programs.",
			cfg.Dir, cfg.MaxOutput, cfg.ShellTimeout, cfg.MaxShellTimeout),
		Schema: json.RawMessage(`{"type":"object","properties":{` +
			`"command":{"type":"string","description":"The bash command line to run."},` +
			`"timeout_seconds":{"type":"number","description":"Seconds before the command is killed."}},` +
			`"required":["command"]}`),
		Run: func(ctx context.Context, raw json.RawMessage) (string, error) {
			a, err := decode[shellArgs]("shell", raw)
			if err != nil {
				return "", err
			}
			return runShell(ctx, cfg, a)
		},
		Subject: func(raw json.RawMessage) string {
			var a shellArgs
			if json.Unmarshal(raw, &a) != nil {
				return ""
			}
			return strings.TrimSpace(a.Command)
		},
		SubjectKind: agent.SubjectCommand,
	}
}

// gitHardening turns off what lets a repository's own files run commands
// inside git: the fsmonitor hook, the hooks directory, and a working
// directory posing as a bare repository. Settings passed this way override
// every config file.
var gitHardening = [][2]string{
	{"core.fsmonitor", "false"},
	{"core.hooksPath", os.DevNull},
	{"safe.bareRepository", "explicit"},
}

// gitEnv is the environment for a git command the allowlist let run.
func gitEnv() []string {
	env := os.Environ()
	env = append(env, fmt.Sprintf("GIT_CONFIG_COUNT=%d", len(gitHardening)))
	for i, kv := range gitHardening {
		env = append(env, fmt.Sprintf("GIT_CONFIG_KEY_%d=%s", i, kv[0]), fmt.Sprintf("GIT_CONFIG_VALUE_%d=%s", i, kv[1]))
	}
	return env
}

// runsGit reports whether a command line's program is git.
func runsGit(command string) bool {
	f := strings.Fields(command)
	return len(f) > 0 && filepath.Base(f[0]) == "git"
}

func runShell(ctx context.Context, cfg Config, a shellArgs) (string, error) {
	if strings.TrimSpace(a.Command) == "" {
		return "", errors.New("command is required")
	}
	timeout := cfg.ShellTimeout
	if a.TimeoutSeconds > 0 {
		timeout = min(time.Duration(a.TimeoutSeconds*float64(time.Second)), cfg.MaxShellTimeout)
	}
	tctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	cmd := exec.CommandContext(tctx, "bash", "-c", a.Command)
	cmd.Dir = cfg.Dir
	cmd.WaitDelay = waitDelay
	if agent.AutoAllowed(ctx) && runsGit(a.Command) {
		cmd.Env = gitEnv()
	}
	out := newCapped(cfg.MaxOutput)
	cmd.Stdout, cmd.Stderr = out, out
	// In its own process group, so a timeout kills the command's children
	// too, and tied to this process, so they die with baton.
	release, err := ownProcessGroup(cmd)
	if err != nil {
		return "", fmt.Errorf("run command: %w", err)
	}
	err = cmd.Run()
	release()

	text := out.String()
	if cerr := ctx.Err(); cerr != nil {
		return text, cerr
	}
	if errors.Is(tctx.Err(), context.DeadlineExceeded) {
		return text, fmt.Errorf("command timed out after %s; it was killed", timeout)
	}
	var note string
	var exitErr *exec.ExitError
	switch {
	case err == nil:
	case errors.Is(err, exec.ErrWaitDelay):
		note = "\n[background processes still hold the output open; not waiting for them]"
	case errors.As(err, &exitErr):
	default:
		return text, fmt.Errorf("run command: %w", err)
	}
	status := fmt.Sprintf("[exit code %d]", cmd.ProcessState.ExitCode())
	if cmd.ProcessState.ExitCode() < 0 {
		status = "[" + cmd.ProcessState.String() + "]"
	}
	if text == "" {
		return "[no output]" + note + "\n" + status, nil
	}
	return strings.TrimRight(text, "\n") + note + "\n" + status, nil
}

// capped keeps the first and last bytes of output up to a limit, counting
// what it drops from the middle: the start shows what ran, the end how it
// ended.
type capped struct {
	mu    sync.Mutex
	limit int
	head  []byte
	tail  []byte
	total int
}

func newCapped(limit int) *capped { return &capped{limit: limit} }

func (c *capped) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := len(p)
	c.total += n
	half := c.limit / 2
	if len(c.head) < half {
		k := min(half-len(c.head), len(p))
		c.head = append(c.head, p[:k]...)
		p = p[k:]
	}
	keep := c.limit - half
	c.tail = append(c.tail, p...)
	if len(c.tail) > 2*keep { // trim now and then, not on every write
		c.tail = append([]byte(nil), c.tail[len(c.tail)-keep:]...)
	}
	return n, nil
}

func (c *capped) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	keep := c.limit - len(c.head)
	tail := c.tail
	if len(tail) > keep {
		tail = tail[len(tail)-keep:]
	}
	dropped := c.total - len(c.head) - len(tail)
	if dropped <= 0 {
		return strings.ToValidUTF8(string(c.head)+string(tail), "\uFFFD")
	}
	return strings.ToValidUTF8(string(c.head), "\uFFFD") +
		fmt.Sprintf("\n[truncated %d bytes]\n", dropped) +
		strings.ToValidUTF8(string(tail), "\uFFFD")
}
