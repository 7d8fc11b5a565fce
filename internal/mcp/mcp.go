// Package mcp lets the agent use the tools of Model Context Protocol
// servers named in config.yaml (mcp.servers): a command baton starts and
// speaks to over its standard input and output, or a URL speaking
// streamable HTTP. A server starts when its tools are first needed, is
// started again after it dies (as the retry policy allows), and stops
// with baton. Its tools join the agent's as "server.tool", under the same
// permissions as baton's own.
package mcp

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"sort"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/baton-agent/baton/internal/agent"
	"github.com/baton-agent/baton/internal/config"
	"github.com/baton-agent/baton/internal/retry"
	"github.com/baton-agent/baton/internal/store"
)

// startTimeout bounds starting a server and listing its tools: a server
// that takes longer is reported as failed, and the turn goes on without it.
const startTimeout = 30 * time.Second

// restartPolicy spaces the starts of a server that keeps failing.
var restartPolicy = retry.Policy{First: time.Second, Max: 5 * time.Minute}

// FileKeeper keeps the bytes of a picture or file a tool returns
// (store.Files), so it travels with the conversation.
type FileKeeper interface {
	PutFile(ctx context.Context, r io.Reader, name string) (store.Attachment, error)
}

// Options are what the servers share.
type Options struct {
	// Files keeps what tools return besides text; nil: such content is
	// described to the model in a line.
	Files FileKeeper
	// Dir is where a command runs when its cwd is not set.
	Dir string
	// Lookup reads the environment for ${NAME} in env and headers;
	// nil: os.LookupEnv.
	Lookup func(string) (string, bool)
	// Version is baton's, told to the servers.
	Version string
	Logger  *slog.Logger
}

// Servers are the configured MCP servers. It is an agent.ToolSource.
type Servers struct {
	opts    Options
	servers []*server // by name
}

// New prepares the servers cfg names; none is started.
func New(cfg config.MCPConfig, opts Options) *Servers {
	if opts.Lookup == nil {
		opts.Lookup = os.LookupEnv
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Servers{opts: opts}
	for _, name := range cfg.Names() {
		s.servers = append(s.servers, newServer(name, cfg.Servers[name], &s.opts))
	}
	return s
}

// SetLogger sends what the servers log (a server that did not start, or
// stopped) to l; it is called before any server starts. Unset, nothing
// is logged: the terminal shows servers' states in /tools instead.
func (s *Servers) SetLogger(l *slog.Logger) {
	if l != nil {
		s.opts.Logger = l
	}
}

// Servers names the configured servers.
func (s *Servers) Servers() []string {
	out := make([]string, len(s.servers))
	for i, sv := range s.servers {
		out[i] = sv.name
	}
	return out
}

// Tools starts the servers not running (together, each within
// startTimeout) and returns every running server's tools. A server that
// fails is left out, saying why in Status, and the rest go on.
func (s *Servers) Tools(ctx context.Context) []agent.Tool {
	var wg sync.WaitGroup
	for _, sv := range s.servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = sv.ensure(ctx) // a failure is logged once per start, and kept in Status
		}()
	}
	wg.Wait()
	var out []agent.Tool
	for _, sv := range s.servers {
		out = append(out, sv.offered()...)
	}
	return out
}

// Close stops every server started.
func (s *Servers) Close() error {
	var errs []error
	for _, sv := range s.servers {
		errs = append(errs, sv.close())
	}
	return errors.Join(errs...)
}

// State is where a server stands.
type State string

const (
	NotStarted State = "not started"
	Running    State = "running"
	Failed     State = "failed"
	Stopped    State = "stopped"
)

// Status is one server as /tools and baton doctor show it.
type Status struct {
	Name  string
	Where string // "command: npx -y …" or "url: https://…"
	State State
	Tools []string // its tools' names ("server.tool"), while running
	// Err says why it failed or stopped; Retry when it is tried again.
	Err   error
	Retry time.Time
}

// Status reports every server, without starting any.
func (s *Servers) Status() []Status {
	out := make([]Status, len(s.servers))
	for i, sv := range s.servers {
		out[i] = sv.status()
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// errStopped marks a server closed with baton.
var errStopped = errors.New("stopped with baton")

func describeWhere(cfg config.MCPServer) string {
	if cfg.URL != "" {
		return "url: " + cfg.URL
	}
	line := cfg.Command
	for _, a := range cfg.Args {
		line += " " + a
	}
	return "command: " + line
}

// sdkClient is the MCP client baton speaks as.
func sdkClient(version string, onToolsChanged func()) *sdk.Client {
	if version == "" {
		version = "dev"
	}
	return sdk.NewClient(&sdk.Implementation{Name: "baton", Version: version}, &sdk.ClientOptions{
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) { onToolsChanged() },
	})
}
