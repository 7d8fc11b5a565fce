// Package matrixtest runs baton's Matrix tests against a real homeserver:
// Dendrite, built from tools/dendrite (its own module, never linked into
// baton) into a cache directory, and started here as a process on
// 127.0.0.1 with open registration and federation off. Tests register
// their own users and rooms through the client API, so one homeserver
// serves a whole test package. A Proxy built on fakekit stands in front
// of it where a test needs failures a real homeserver cannot give on
// demand (down and up, an error for the next call).
package matrixtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

// EnvDir names the directory holding the Dendrite binaries; default
// ~/.cache/baton/dendrite (where tools/dendrite/build.sh puts them).
const EnvDir = "BATON_DENDRITE"

// Dir is where the Dendrite binaries are looked for.
func Dir() string {
	if d := os.Getenv(EnvDir); d != "" {
		return d
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = filepath.Join(os.Getenv("HOME"), ".cache")
	}
	return filepath.Join(cache, "baton", "dendrite")
}

// ErrNotBuilt says Dendrite has not been built where Dir points.
var ErrNotBuilt = errors.New("dendrite is not built: run tools/dendrite/build.sh (or set " + EnvDir + ")")

// Available reports whether the binaries are there.
func Available() error {
	for _, b := range []string{"dendrite", "generate-keys", "generate-config"} {
		if _, err := os.Stat(filepath.Join(Dir(), b)); err != nil {
			return fmt.Errorf("%w: %s missing", ErrNotBuilt, filepath.Join(Dir(), b))
		}
	}
	return nil
}

// Homeserver is a running Dendrite.
type Homeserver struct {
	url   string
	dir   string
	cmd   *exec.Cmd
	done  chan struct{} // closed when the process exited
	users atomic.Int64  // for unique user names
}

// Start starts a Dendrite in a new temporary directory on a free
// loopback port and waits until it answers. Close stops it and removes
// the directory.
func Start(ctx context.Context) (*Homeserver, error) {
	if err := Available(); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "baton-dendrite-")
	if err != nil {
		return nil, err
	}
	var lastErr error
	for range 3 { // a free port can be taken between choosing and binding
		h, err := start(ctx, dir)
		if err == nil {
			return h, nil
		}
		lastErr = err
	}
	os.RemoveAll(dir)
	return nil, lastErr
}

func start(ctx context.Context, dir string) (*Homeserver, error) {
	bin := Dir()
	key := filepath.Join(dir, "matrix_key.pem")
	if _, err := os.Stat(key); err != nil {
		if out, err := exec.CommandContext(ctx, filepath.Join(bin, "generate-keys"), "--private-key", key).CombinedOutput(); err != nil {
			return nil, fmt.Errorf("generate-keys: %v: %s", err, out)
		}
	}
	cfgYAML, err := exec.CommandContext(ctx, filepath.Join(bin, "generate-config"), "-ci", "-dir", dir).Output()
	if err != nil {
		return nil, fmt.Errorf("generate-config: %w", err)
	}
	cfgYAML, err = adjustConfig(cfgYAML, key, dir)
	if err != nil {
		return nil, err
	}
	cfgPath := filepath.Join(dir, "dendrite.yaml")
	if err := os.WriteFile(cfgPath, cfgYAML, 0o600); err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	logf, err := os.OpenFile(filepath.Join(dir, "dendrite.out"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	addr := "127.0.0.1:" + strconv.Itoa(port)
	cmd := exec.Command(filepath.Join(bin, "dendrite"), "--config", cfgPath,
		"--http-bind-address", addr, "--really-enable-open-registration")
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start dendrite: %w", err)
	}
	h := &Homeserver{url: "http://" + addr, dir: dir, cmd: cmd, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(h.done)
	}()
	if err := h.waitReady(ctx); err != nil {
		h.stop()
		return nil, fmt.Errorf("%w\n%s", err, h.Log())
	}
	return h, nil
}

// adjustConfig turns generate-config's CI defaults into a private,
// quiet, closed server: federation off, warnings only, the key we made.
func adjustConfig(in []byte, key, dir string) ([]byte, error) {
	var cfg map[string]any
	if err := yaml.Unmarshal(in, &cfg); err != nil {
		return nil, fmt.Errorf("dendrite config: %w", err)
	}
	global, ok := cfg["global"].(map[string]any)
	if !ok {
		return nil, errors.New("dendrite config: no global section")
	}
	global["private_key"] = key
	global["disable_federation"] = true
	global["report_stats"] = map[string]any{"enabled": false}
	cfg["logging"] = []any{map[string]any{"type": "file", "level": "warn", "params": map[string]any{"path": filepath.Join(dir, "log")}}}
	return yaml.Marshal(cfg)
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// waitReady polls the versions endpoint until the server answers (about
// a second), the process exits, or 60 s pass.
func (h *Homeserver) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, h.url+"/_matrix/client/versions", nil)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-h.done:
			return errors.New("dendrite exited while starting")
		case <-ctx.Done():
			return fmt.Errorf("dendrite did not answer: %w", ctx.Err())
		case <-tick.C:
		}
	}
}

// URL is the client-server API's base URL ("http://127.0.0.1:port").
func (h *Homeserver) URL() string { return h.url }

// ServerName is the homeserver's name in user and room ids.
func (h *Homeserver) ServerName() string { return "localhost" }

// Log is what Dendrite wrote (its warnings and errors), for a failing
// test's output.
func (h *Homeserver) Log() string {
	var b bytes.Buffer
	for _, f := range []string{"dendrite.out", "log/dendrite.log"} {
		if data, err := os.ReadFile(filepath.Join(h.dir, f)); err == nil {
			b.Write(data)
		}
	}
	s := b.String()
	if len(s) > 8000 {
		s = "…" + s[len(s)-8000:]
	}
	return strings.TrimSpace(s)
}

func (h *Homeserver) stop() {
	_ = h.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-h.done:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-h.cmd.Process.Pid, syscall.SIGKILL)
		<-h.done
	}
}

// Close stops the server and removes its files.
func (h *Homeserver) Close() {
	h.stop()
	os.RemoveAll(h.dir)
}

// Shared is one homeserver for a whole test package, started by the
// first test that needs it:
//
//	var homeserver matrixtest.Shared
//
//	func TestMain(m *testing.M) { os.Exit(homeserver.Run(m)) }
//
// and in a test, hs := homeserver.Need(t).
type Shared struct {
	once sync.Once
	hs   *Homeserver
	err  error
}

// Run runs the package's tests and stops the homeserver after them.
func (s *Shared) Run(m *testing.M) int {
	code := m.Run()
	if s.hs != nil {
		if code != 0 {
			fmt.Fprintf(os.Stderr, "dendrite log:\n%s\n", s.hs.Log())
		}
		s.hs.Close()
	}
	return code
}

// Need returns the running homeserver, starting it at the first call.
// Without the Dendrite binaries the test is skipped with a message saying
// how to build them — except under CI=true, where it fails.
func (s *Shared) Need(tb testing.TB) *Homeserver {
	tb.Helper()
	s.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		s.hs, s.err = Start(ctx)
	})
	if s.err != nil {
		if errors.Is(s.err, ErrNotBuilt) && os.Getenv("CI") != "true" {
			tb.Skipf("no Matrix homeserver for this test: %v", s.err)
		}
		tb.Fatalf("start the Matrix homeserver: %v", s.err)
	}
	return s.hs
}
