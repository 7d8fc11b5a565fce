package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/cenkalti/backoff/v5"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/baton-agent/baton/internal/agent"
	"github.com/baton-agent/baton/internal/config"
)

// server is one configured MCP server and, while it runs, its session.
type server struct {
	name string
	cfg  config.MCPServer
	opts *Options

	start sync.Mutex // one start at a time

	mu      sync.Mutex
	conn    *conn // nil while not running
	tools   []agent.Tool
	state   State
	err     error
	retryAt time.Time
	waits   *backoff.ExponentialBackOff
	closed  bool
}

// conn is one running session with the server.
type conn struct {
	session *sdk.ClientSession
	proc    *process // nil for a URL server
	done    chan struct{}
	// stale is set when the server said its tools changed.
	stale bool
}

func newServer(name string, cfg config.MCPServer, opts *Options) *server {
	return &server{name: name, cfg: cfg, opts: opts, state: NotStarted, waits: restartPolicy.Backoff()}
}

// ensure returns the running session, starting the server if it is not
// running and the restart policy lets it try now.
func (s *server) ensure(ctx context.Context) (*conn, error) {
	s.start.Lock()
	defer s.start.Unlock()
	s.mu.Lock()
	c, closed, err, retryAt := s.conn, s.closed, s.err, s.retryAt
	stale := c != nil && c.stale // set by the server's notice, under mu
	s.mu.Unlock()
	switch {
	case closed:
		return nil, fmt.Errorf("MCP server %s: %w", s.name, errStopped)
	case c != nil && !stale:
		return c, nil
	case c != nil: // its tools changed: list them again
		if tools, err := s.list(ctx, c); err == nil {
			s.mu.Lock()
			s.tools, c.stale = tools, false
			s.mu.Unlock()
		}
		return c, nil
	case err != nil && time.Now().Before(retryAt):
		return nil, fmt.Errorf("MCP server %s: %w (tried again from %s)", s.name, err, retryAt.Format(time.TimeOnly))
	}
	c, tools, err := s.connect(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err() // the caller gave up; nothing is known of the server
		}
		s.state, s.err = Failed, err
		s.retryAt = time.Now().Add(s.waits.NextBackOff())
		s.opts.Logger.Warn("mcp server did not start; its tools are not offered", "server", s.name, "err", err, "retry", s.retryAt.Format(time.TimeOnly))
		return nil, fmt.Errorf("MCP server %s: %w", s.name, err)
	}
	if s.closed {
		c.close()
		return nil, fmt.Errorf("MCP server %s: %w", s.name, errStopped)
	}
	s.conn, s.tools, s.state, s.err = c, tools, Running, nil
	s.waits.Reset()
	go s.watch(c)
	return c, nil
}

// connect starts the server (or reaches it) and lists its tools.
func (s *server) connect(ctx context.Context) (*conn, []agent.Tool, error) {
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	c := &conn{done: make(chan struct{})}
	var transport sdk.Transport
	if s.cfg.URL != "" {
		headers := http.Header{}
		for k, v := range s.cfg.Headers {
			val, err := config.Expand(v, s.opts.Lookup)
			if err != nil {
				return nil, nil, fmt.Errorf("header %s: %w", k, err)
			}
			headers.Set(k, val)
		}
		transport = &sdk.StreamableClientTransport{
			Endpoint:             s.cfg.URL,
			HTTPClient:           &http.Client{Transport: withHeaders{headers, http.DefaultTransport}},
			DisableStandaloneSSE: true, // tools are listed again when the server is started again
			MaxRetries:           -1,   // the restart policy retries, not the transport
		}
	} else {
		p, err := s.process()
		if err != nil {
			return nil, nil, err
		}
		c.proc = p
		transport = &sdk.CommandTransport{Command: p.cmd, TerminateDuration: 2 * time.Second}
	}
	client := sdkClient(s.opts.Version, func() {
		s.mu.Lock()
		c.stale = true
		s.mu.Unlock()
	})
	session, err := client.Connect(ctx, transport, nil)
	if err != nil {
		if c.proc != nil {
			c.proc.kill()
			if errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist) {
				return nil, nil, fmt.Errorf("command %q not found: is it installed, and on PATH?", s.cfg.Command)
			}
			return nil, nil, c.proc.explain(fmt.Errorf("start %s: %w", s.cfg.Command, err))
		}
		return nil, nil, fmt.Errorf("connect to %s: %w", s.cfg.URL, err)
	}
	c.session = session
	tools, err := s.list(ctx, c)
	if err != nil {
		c.close()
		return nil, nil, err
	}
	return c, tools, nil
}

// list is the server's tools, as the agent offers them.
func (s *server) list(ctx context.Context, c *conn) ([]agent.Tool, error) {
	var tools []agent.Tool
	for t, err := range c.session.Tools(ctx, nil) {
		if err != nil {
			return nil, c.explain(fmt.Errorf("list tools: %w", err))
		}
		tools = append(tools, s.tool(t))
	}
	return tools, nil
}

// tool is one of the server's tools as the agent offers it.
func (s *server) tool(t *sdk.Tool) agent.Tool {
	schema, err := json.Marshal(t.InputSchema)
	if err != nil || !json.Valid(schema) || string(schema) == "null" {
		schema = nil
	}
	desc := t.Description
	if desc == "" && t.Annotations != nil {
		desc = t.Annotations.Title
	}
	readOnly := s.cfg.TrustReadOnly && t.Annotations != nil && t.Annotations.ReadOnlyHint
	name := t.Name
	return agent.Tool{
		Name:        s.name + "." + name,
		Description: desc,
		Schema:      schema,
		ReadOnly:    readOnly,
		Server:      s.name,
		Run: func(ctx context.Context, args json.RawMessage) (string, error) {
			return s.call(ctx, name, args)
		},
		// The call's arguments are what it acts on: the approval shows
		// them, and "always" covers exactly these again.
		Subject: compactJSON,
	}
}

// compactJSON is args without insignificant spaces, or as sent when they
// are not JSON.
func compactJSON(args json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, args) != nil {
		return string(args)
	}
	return b.String()
}

// watch marks the server stopped when its session ends by itself (the
// process died, the connection dropped): the next need starts it again.
func (s *server) watch(c *conn) {
	err := c.session.Wait()
	close(c.done)
	s.drop(c, err)
}

// drop forgets a session that ended, unless it was already replaced.
func (s *server) drop(c *conn, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conn != c {
		return
	}
	s.conn, s.tools = nil, nil
	if s.closed {
		s.state, s.err = Stopped, errStopped
		return
	}
	why := c.explain(errors.New("it stopped"))
	if err != nil && !errors.Is(err, io.EOF) {
		why = c.explain(fmt.Errorf("it stopped: %w", err))
	}
	s.state, s.err = Failed, why
	s.retryAt = time.Now() // a server that ran may start again at once
	s.opts.Logger.Warn("mcp server stopped", "server", s.name, "err", why)
}

// offered is the tools of the server while it runs.
func (s *server) offered() []agent.Tool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conn == nil {
		return nil
	}
	return s.tools
}

func (s *server) status() Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := Status{Name: s.name, Where: describeWhere(s.cfg), State: s.state, Err: s.err}
	if s.state == Failed {
		st.Retry = s.retryAt
	}
	for _, t := range s.tools {
		st.Tools = append(st.Tools, t.Name)
	}
	return st
}

// close stops the server for good.
func (s *server) close() error {
	s.mu.Lock()
	c := s.conn
	s.closed, s.conn, s.tools = true, nil, nil
	if s.state == Running {
		s.state, s.err = Stopped, errStopped
	}
	s.mu.Unlock()
	if c == nil {
		return nil
	}
	return c.close()
}

// close ends the session and, for a command, the process and whatever it
// started.
func (c *conn) close() error {
	var err error
	if c.session != nil {
		err = c.session.Close()
	}
	if c.proc != nil {
		c.proc.kill()
	}
	if err != nil && !strings.Contains(err.Error(), "closed") {
		return err
	}
	return nil
}

// explain adds what a command's process said on its way out.
func (c *conn) explain(err error) error {
	if c.proc == nil {
		return err
	}
	return c.proc.explain(err)
}

// withHeaders sends a URL server's configured headers with every request.
type withHeaders struct {
	h    http.Header
	next http.RoundTripper
}

func (w withHeaders) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range w.h {
		r.Header[k] = v
	}
	return w.next.RoundTrip(r)
}

// process is a command server's process.
type process struct {
	cmd    *exec.Cmd
	stderr *tail
}
