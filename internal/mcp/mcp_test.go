package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/agent"
	"github.com/baton-agent/baton/internal/config"
	"github.com/baton-agent/baton/internal/mcp"
	"github.com/baton-agent/baton/internal/mcp/mcptest"
	"github.com/baton-agent/baton/internal/testutil"
)

func TestMain(m *testing.M) {
	if mcptest.Serving() {
		os.Exit(mcptest.ServeStdio())
	}
	os.Exit(m.Run())
}

// stdio is the demo server as a process of its own, with extra env.
func stdio(env map[string]string) config.MCPServer {
	prog, need := mcptest.Command()
	for k, v := range env {
		need[k] = v
	}
	return config.MCPServer{Command: prog, Env: need}
}

func open(t *testing.T, servers map[string]config.MCPServer, opts mcp.Options) *mcp.Servers {
	t.Helper()
	if opts.Lookup == nil {
		env := map[string]string{"PATH": os.Getenv("PATH"), "HOME": t.TempDir()}
		opts.Lookup = func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	}
	s := mcp.New(config.MCPConfig{Servers: servers}, opts)
	t.Cleanup(func() { s.Close() })
	return s
}

func find(t *testing.T, tools []agent.Tool, name string) agent.Tool {
	t.Helper()
	for _, tl := range tools {
		if tl.Name == name {
			return tl
		}
	}
	var names []string
	for _, tl := range tools {
		names = append(names, tl.Name)
	}
	t.Fatalf("no tool %s among %v", name, names)
	return agent.Tool{}
}

func run(t *testing.T, tl agent.Tool, args string) (string, error) {
	t.Helper()
	return tl.Run(testutil.Context(t, 30*time.Second), json.RawMessage(args))
}

func TestStdioServerListsAndCalls(t *testing.T) {
	s := open(t, map[string]config.MCPServer{"demo": stdio(nil)}, mcp.Options{})
	if st := s.Status(); len(st) != 1 || st[0].State != mcp.NotStarted {
		t.Fatalf("before any need: %+v", st)
	}
	tools := s.Tools(testutil.Context(t, 30*time.Second))
	echo := find(t, tools, "demo.echo")
	if echo.Server != "demo" || echo.Description != "Say the text back." || echo.ReadOnly {
		t.Errorf("echo offered as %+v", echo)
	}
	if out, err := run(t, echo, `{"text":"hello"}`); err != nil || out != "echo: hello" {
		t.Errorf("echo: %q, %v", out, err)
	}
	add := find(t, tools, "demo.add")
	var schema struct {
		Properties map[string]struct {
			Type       string                     `json:"type"`
			Properties map[string]json.RawMessage `json:"properties"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(add.Schema, &schema); err != nil || schema.Properties["numbers"].Type != "object" || len(schema.Properties["numbers"].Properties) != 2 {
		t.Errorf("add's nested schema came as %s", add.Schema)
	}
	if out, err := run(t, add, `{"numbers":{"a":2,"b":3.5},"options":{"label":"sum"}}`); err != nil || out != "sum 5.5" {
		t.Errorf("add: %q, %v", out, err)
	}
	if _, err := run(t, find(t, tools, "demo.fail"), `{}`); err == nil || err.Error() != "the tool failed on purpose" {
		t.Errorf("an error result came as %v", err)
	}
	st := s.Status()
	if st[0].State != mcp.Running || len(st[0].Tools) != 11 || !strings.HasPrefix(st[0].Where, "command: ") {
		t.Errorf("status %+v", st[0])
	}
}

// The server gets PATH and the like and what its env names, expanded;
// not baton's keys.
func TestStdioServerEnvironment(t *testing.T) {
	env := map[string]string{"PATH": os.Getenv("PATH"), "HOME": t.TempDir(), "OPENAI_API_KEY": "sk-secret", "GH": "tok-1"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	if err := os.Mkdir(filepath.Join(env["HOME"], "src"), 0o700); err != nil {
		t.Fatal(err)
	}
	cfg := stdio(map[string]string{"GITHUB_TOKEN": "${GH}"})
	cfg.Cwd = "~/src"
	s := open(t, map[string]config.MCPServer{"demo": cfg}, mcp.Options{Lookup: lookup})
	tools := s.Tools(testutil.Context(t, 30*time.Second))
	if out, err := run(t, find(t, tools, "demo.cwd"), `{}`); err != nil || out != filepath.Join(env["HOME"], "src") {
		t.Errorf("cwd ~/src: the server runs in %q, %v", out, err)
	}
	envTool := find(t, tools, "demo.env")
	for args, want := range map[string]string{
		`{"name":"GITHUB_TOKEN"}`:   "GITHUB_TOKEN=tok-1",
		`{"name":"OPENAI_API_KEY"}`: "OPENAI_API_KEY is not set",
		`{"name":"HOME"}`:           "HOME=" + env["HOME"],
	} {
		if out, err := run(t, envTool, args); err != nil || out != want {
			t.Errorf("%s: %q, %v; want %q", args, out, err, want)
		}
	}
	// A variable that is not set stops the start, saying which.
	s = open(t, map[string]config.MCPServer{"demo": stdio(map[string]string{"T": "${NOPE}"})}, mcp.Options{Lookup: lookup})
	if tools := s.Tools(testutil.Context(t, 30*time.Second)); len(tools) != 0 {
		t.Fatalf("offered %d tools", len(tools))
	}
	if st := s.Status()[0]; st.State != mcp.Failed || !strings.Contains(st.Err.Error(), "${NOPE} is not set") {
		t.Errorf("status %+v", st)
	}
}

// A server that cannot start is said, with what it wrote, and the others
// go on; it is tried again only after the restart policy's wait.
func TestServerThatFailsIsSaidAndTheRestGoOn(t *testing.T) {
	script := filepath.Join(t.TempDir(), "broken.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho 'broken: no token configured' >&2\nexit 2\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	s := open(t, map[string]config.MCPServer{
		"demo":    stdio(nil),
		"broken":  {Command: script},
		"missing": {Command: filepath.Join(t.TempDir(), "no-such-server")},
	}, mcp.Options{})
	tools := s.Tools(testutil.Context(t, 30*time.Second))
	find(t, tools, "demo.echo")
	for _, tl := range tools {
		if tl.Server != "demo" {
			t.Errorf("offered %s", tl.Name)
		}
	}
	st := map[string]mcp.Status{}
	for _, x := range s.Status() {
		st[x.Name] = x
	}
	if b := st["broken"]; b.State != mcp.Failed || !strings.Contains(b.Err.Error(), "broken: no token configured") || b.Retry.IsZero() {
		t.Errorf("broken: %+v", b)
	}
	if m := st["missing"]; m.State != mcp.Failed || !strings.Contains(m.Err.Error(), "no-such-server") {
		t.Errorf("missing: %+v", m)
	}
	// Asked again at once, the failed server is not started again.
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho started >> "+script+".log\nexit 2\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	s.Tools(testutil.Context(t, 30*time.Second))
	if _, err := os.Stat(script + ".log"); err == nil {
		t.Error("a server that just failed was started again at once")
	}
}

// A server that dies in the middle of a call: the call is reported
// interrupted, with what the server said, and the next call starts it
// again.
func TestServerCrashMidCall(t *testing.T) {
	s := open(t, map[string]config.MCPServer{"demo": stdio(nil)}, mcp.Options{})
	tools := s.Tools(testutil.Context(t, 30*time.Second))
	before, err := run(t, find(t, tools, "demo.pid"), `{}`)
	if err != nil {
		t.Fatal(err)
	}
	_, err = run(t, find(t, tools, "demo.crash"), `{}`)
	if err == nil || !strings.Contains(err.Error(), "interrupted: MCP server demo stopped during the call") || !strings.Contains(err.Error(), "crashing on purpose") {
		t.Fatalf("the crashed call came back as %v", err)
	}
	after, err := run(t, find(t, tools, "demo.pid"), `{}`)
	if err != nil || after == before || after == "" {
		t.Fatalf("after the crash: pid %q (was %q), %v", after, before, err)
	}
	if st := s.Status()[0]; st.State != mcp.Running {
		t.Errorf("status after the restart %+v", st)
	}
}

// A slow call ends at the server's timeout, and at once when its context
// ends (Ctrl-C, /stop); the server goes on serving.
func TestSlowCallTimeoutAndStop(t *testing.T) {
	cfg := stdio(nil)
	cfg.Timeout = 300 * time.Millisecond
	s := open(t, map[string]config.MCPServer{"demo": cfg}, mcp.Options{})
	tools := s.Tools(testutil.Context(t, 30*time.Second))
	slow := find(t, tools, "demo.slow")
	if _, err := run(t, slow, `{"seconds":60}`); err == nil || !strings.Contains(err.Error(), "ran past 300ms") || !strings.Contains(err.Error(), "mcp.servers.demo.timeout") {
		t.Errorf("timeout: %v", err)
	}
	ctx, cancel := context.WithCancel(testutil.Context(t, 30*time.Second))
	done := make(chan error, 1)
	go func() { _, err := slow.Run(ctx, json.RawMessage(`{"seconds":60}`)); done <- err }()
	cancel()
	if err := testutil.Receive(t, done, "the stopped call"); !errors.Is(err, context.Canceled) {
		t.Errorf("stopped call: %v", err)
	}
	if out, err := run(t, find(t, tools, "demo.echo"), `{"text":"still here"}`); err != nil || out != "echo: still here" {
		t.Errorf("after: %q, %v", out, err)
	}
}

// Close stops the server's process.
func TestCloseStopsTheServer(t *testing.T) {
	s := mcp.New(config.MCPConfig{Servers: map[string]config.MCPServer{"demo": stdio(nil)}}, mcp.Options{Lookup: os.LookupEnv})
	out, err := run(t, find(t, s.Tools(testutil.Context(t, 30*time.Second)), "demo.pid"), `{}`)
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(out)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 10*time.Second, func() bool { return syscall.Kill(pid, 0) != nil }, "the server process to end")
	if st := s.Status()[0]; st.State != mcp.Stopped {
		t.Errorf("status %+v", st)
	}
	if tools := s.Tools(testutil.Context(t, 5*time.Second)); len(tools) != 0 {
		t.Errorf("a closed server offered %d tools", len(tools))
	}
}

// A server over streamable HTTP, with its headers (${NAME} expanded).
func TestHTTPServer(t *testing.T) {
	var mu sync.Mutex
	var auth []string
	srv := mcptest.ServeHTTP(t)
	front := proxyTo(srv.URL)
	front = recordAuth(front, func(a string) { mu.Lock(); auth = append(auth, a); mu.Unlock() })
	proxy := newLoopback(t, front)
	lookup := func(k string) (string, bool) { return map[string]string{"DOCS_TOKEN": "t-9"}[k], k == "DOCS_TOKEN" }
	s := open(t, map[string]config.MCPServer{"docs": {URL: proxy + "/mcp", Headers: map[string]string{"Authorization": "Bearer ${DOCS_TOKEN}"}}}, mcp.Options{Lookup: lookup})
	tools := s.Tools(testutil.Context(t, 30*time.Second))
	if out, err := run(t, find(t, tools, "docs.echo"), `{"text":"over http"}`); err != nil || out != "echo: over http" {
		t.Fatalf("echo: %q, %v", out, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(auth) == 0 {
		t.Fatal("no request reached the server")
	}
	for _, a := range auth {
		if a != "Bearer t-9" {
			t.Errorf("a request carried Authorization %q", a)
		}
	}
}

// A URL server whose connection drops in the middle of a call: the call
// is reported interrupted, and the next one connects again.
func TestHTTPServerLostMidCall(t *testing.T) {
	srv := mcptest.ServeHTTP(t)
	front := httptest.NewServer(proxyTo(srv.URL))
	t.Cleanup(front.Close)
	s := open(t, map[string]config.MCPServer{"docs": {URL: front.URL + "/mcp"}}, mcp.Options{})
	tools := s.Tools(testutil.Context(t, 30*time.Second))
	done := make(chan error, 1)
	// Two seconds: the server's handler is not told the call is over, and
	// the test's end waits for it.
	go func() { _, err := run(t, find(t, tools, "docs.slow"), `{"seconds":2}`); done <- err }()
	testutil.Eventually(t, 30*time.Second, func() bool { return srv.Calls.Begun("slow") > 0 }, "the slow call to reach the server")
	front.CloseClientConnections()
	err := testutil.Receive(t, done, "the cut call")
	if err == nil || !strings.Contains(err.Error(), "interrupted: lost MCP server docs during the call") {
		t.Fatalf("the cut call came back as %v", err)
	}
	if out, err := run(t, find(t, tools, "docs.echo"), `{"text":"again"}`); err != nil || out != "echo: again" {
		t.Fatalf("after the cut: %q, %v", out, err)
	}
}

// A server that says its tools changed has them listed again at the next
// need.
func TestToolsListedAgainWhenTheServerSaysTheyChanged(t *testing.T) {
	s := open(t, map[string]config.MCPServer{"demo": stdio(nil)}, mcp.Options{})
	ctx := testutil.Context(t, 30*time.Second)
	if out, err := run(t, find(t, s.Tools(ctx), "demo.grow"), `{}`); err != nil || out != "grew" {
		t.Fatalf("grow: %q, %v", out, err)
	}
	testutil.Eventually(t, 30*time.Second, func() bool {
		for _, tl := range s.Tools(ctx) {
			if tl.Name == "demo.grown" {
				return true
			}
		}
		return false
	}, "demo.grown to be offered")
}
