package mcp

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/baton-agent/baton/internal/config"
)

// passedEnv are the variables a command server gets from baton's own
// environment, besides what its env names: enough to find programs and
// a home, and none of baton's keys and tokens.
var passedEnv = []string{"PATH", "HOME", "USER", "LOGNAME", "SHELL", "TERM", "LANG", "LC_ALL", "LC_CTYPE", "TMPDIR", "TZ", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME", "XDG_RUNTIME_DIR"}

// process prepares the server's command; it is started by the transport.
func (s *server) process() (*process, error) {
	cmd := exec.Command(s.cfg.Command, s.cfg.Args...)
	cmd.Dir = s.cfg.Cwd
	if rest, ok := strings.CutPrefix(cmd.Dir, "~/"); ok {
		if home, ok := s.opts.Lookup("HOME"); ok {
			cmd.Dir = filepath.Join(home, rest)
		}
	}
	if cmd.Dir == "" {
		cmd.Dir = s.opts.Dir
	}
	env := map[string]string{}
	for _, k := range passedEnv {
		if v, ok := s.opts.Lookup(k); ok {
			env[k] = v
		}
	}
	for k, v := range s.cfg.Env {
		val, err := config.Expand(v, s.opts.Lookup)
		if err != nil {
			return nil, fmt.Errorf("env %s: %w", k, err)
		}
		env[k] = val
	}
	keys := make([]string, 0, len(env))
	for k := range env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		cmd.Env = append(cmd.Env, k+"="+env[k])
	}
	p := &process{cmd: cmd, stderr: &tail{max: 2048}}
	cmd.Stderr = p.stderr
	ownGroup(cmd)
	return p, nil
}

// kill ends the process and whatever it started (npx starts node), if
// closing its input did not.
func (p *process) kill() {
	if p.cmd.Process == nil {
		return
	}
	killGroup(p.cmd)
}

// explain adds to err the last of what the process wrote to standard
// error, which is where servers say what went wrong.
func (p *process) explain(err error) error {
	// The exit status is not read: the SDK waits for the process, and
	// what the server wrote says more.
	said := p.stderr.last()
	if said == "" {
		return err
	}
	return fmt.Errorf("%w (it said: %s)", err, said)
}

// tail keeps the last bytes written to it.
type tail struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (t *tail) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, b...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(b), nil
}

// last is the last non-empty line or two written, trimmed.
func (t *tail) last() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	lines := strings.Split(strings.TrimSpace(string(t.buf)), "\n")
	if len(lines) > 2 {
		lines = lines[len(lines)-2:]
	}
	return strings.TrimSpace(strings.Join(lines, " / "))
}
