// Package app is baton's composition root: it reads the configuration,
// opens the store it names, finds the owner and builds the model provider
// and the agent. The terminal (internal/cli) and the gateway
// (internal/gateway/daemon) both start from an App.
package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	neturl "net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/baton-agent/baton/internal/agent"
	"github.com/baton-agent/baton/internal/agent/tools"
	"github.com/baton-agent/baton/internal/config"
	"github.com/baton-agent/baton/internal/llm"
	"github.com/baton-agent/baton/internal/llm/provider"
	"github.com/baton-agent/baton/internal/mcp"
	"github.com/baton-agent/baton/internal/owner"
	"github.com/baton-agent/baton/internal/platform/all"
	"github.com/baton-agent/baton/internal/store"
	"github.com/baton-agent/baton/internal/store/postgres"
	"github.com/baton-agent/baton/internal/store/sqlite"
	"github.com/baton-agent/baton/internal/voice"
)

// StoreEnv names the environment variable that chooses the store when
// config.yaml has no store: key.
const StoreEnv = "BATON_STORE"

// Platform is what terminal sessions and messages are stamped with.
const Platform = owner.Platform

// systemPrompt tells the model where it runs; short, so it costs little on
// every call.
const systemPrompt = `You are baton, a personal AI agent working for one person, their owner. You can run shell commands and read, write and edit files on their machine with the tools provided; commands and writes ask the owner first. Be direct and concise. Use Markdown where it helps (code blocks for code and commands).`

// App is what every terminal command and the gateway need: configuration,
// the store, the owner and the model provider.
type App struct {
	Home   string
	Config config.Config
	Model  config.ModelConfig // resolved: provider and name filled in
	Store  store.Store
	// StoreFile is the store's SQLite file; "" for a store on a
	// Postgres server.
	StoreFile string
	Owner     store.User
	Provider  llm.Provider
	// MCP are the servers config.yaml names (mcp.servers), shared by every
	// agent of this process; none runs until a turn needs its tools.
	MCP *mcp.Servers

	turns agent.TurnGuard // set on a store shared with other machines
}

// Open reads configuration from home (refusing a top-level key no platform
// claims), opens the store it names and finds the owner (creating them on
// first run).
func Open(ctx context.Context, home string) (*App, error) {
	cfg, err := config.Load(home)
	if err != nil {
		return nil, err
	}
	if err := cfg.CheckSections(all.Names()); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(home, config.FileName), err)
	}
	m := config.Resolve(ctx, cfg.Model, nil)
	p, err := provider.New(m, provider.Options{ConfigFile: filepath.Join(home, config.FileName)})
	if err != nil {
		return nil, err
	}
	url := StoreURL(cfg, os.Getenv)
	var (
		st   store.Store
		file string
	)
	if IsPostgres(url) {
		var opts []postgres.Option
		if cfg.Files.MaxBytes > 0 {
			opts = append(opts, postgres.WithMaxFileBytes(cfg.Files.MaxBytes))
		}
		if st, err = postgres.Open(ctx, strings.TrimSpace(url), opts...); err != nil {
			return nil, err
		}
	} else {
		if file, err = StorePath(home, url); err != nil {
			return nil, err
		}
		var opts []sqlite.Option
		if cfg.Files.MaxBytes > 0 {
			opts = append(opts, sqlite.WithMaxFileBytes(cfg.Files.MaxBytes))
		}
		if st, err = sqlite.Open(ctx, file, opts...); err != nil {
			return nil, err
		}
	}
	u, err := owner.Current(ctx, st)
	if err != nil {
		if file != "" {
			err = sqlite.Explain(file, err)
		}
		return nil, errors.Join(err, st.Close())
	}
	a := &App{Home: home, Config: cfg, Model: m, Store: st, StoreFile: file, Owner: u, Provider: p, MCP: newMCP(cfg.MCP, st)}
	if pg, ok := st.(*postgres.Store); ok {
		a.turns = &agent.StoreTurns{Store: pg}
	}
	return a, nil
}

// newMCP prepares the MCP servers: a command server runs in the working
// directory of the process that starts it (the terminal's, or the
// gateway's), and what its tools return is kept in the store.
func newMCP(cfg config.MCPConfig, st store.Store) *mcp.Servers {
	var opts mcp.Options
	if fk, ok := st.(mcp.FileKeeper); ok {
		opts.Files = fk
	}
	if dir, err := os.Getwd(); err == nil {
		opts.Dir = dir
	}
	return mcp.New(cfg, opts)
}

// SetLogger sends what the process's shared parts log (MCP servers that
// fail, turns' leases that cannot be renewed) to l; called before any
// turn runs. Unset, they log nothing: the terminal keeps its prompt clean.
func (a *App) SetLogger(l *slog.Logger) {
	if a.MCP != nil {
		a.MCP.SetLogger(l)
	}
	if st, ok := a.turns.(*agent.StoreTurns); ok {
		st.Log = l
	}
}

// Close stops the MCP servers this process started and closes the store.
func (a *App) Close() error {
	var err error
	if a.MCP != nil {
		err = a.MCP.Close()
	}
	return errors.Join(err, a.Store.Close())
}

// Offline reports whether no model is configured.
func (a *App) Offline() bool { return provider.IsOffline(a.Provider) }

// NewAgent builds the agent with the built-in tools working in the current
// directory; approver is asked before commands and writes (nil denies them).
func (a *App) NewAgent(approver agent.Approver) (*agent.Agent, error) {
	reg, err := tools.NewRegistry(tools.Config{ShellTimeout: a.Config.Tools.ShellTimeout, Paths: a.Config.Tools.Paths, Files: a.Store})
	if err != nil {
		return nil, fmt.Errorf("set up tools: %w", err)
	}
	if a.MCP != nil && len(a.MCP.Servers()) > 0 {
		reg.AddSource(a.MCP)
	}
	if err := agent.CheckAllow(a.Config.Tools.Allow, reg); err != nil {
		return nil, fmt.Errorf("%s: tools.allow: %w (see README.md, Permissions)", filepath.Join(a.Home, config.FileName), err)
	}
	return &agent.Agent{
		Provider:        a.Provider,
		Store:           a.Store,
		Tools:           reg,
		Model:           a.Model.Name,
		System:          systemPrompt,
		MaxOutputTokens: a.Model.MaxOutputTokens,
		ContextWindow:   a.Model.ContextWindow,
		MaxImages:       a.Config.Files.MaxImages,
		Approver:        approver,
		Allow:           a.Config.Tools.Allow,
		Turns:           a.TurnGuard(),
	}, nil
}

// TurnGuard marks the turn running in each session for every process
// that may move the session, so that a move stops a turn running where
// it was. On a Postgres store, shared with other machines, the marks are
// leases in the store, kept by one agent.StoreTurns per process; on
// SQLite they are files beside the terminals' session locks, seen by the
// processes using this BATON_HOME (agent.TurnLocks). nil with neither.
func (a *App) TurnGuard() agent.TurnGuard {
	if a.turns != nil {
		return a.turns
	}
	if a.Home == "" {
		return nil
	}
	return &agent.TurnLocks{Dir: filepath.Join(a.Home, "locks")}
}

// ModelLabel is "provider/model" for display.
func (a *App) ModelLabel() string {
	if a.Offline() {
		return "offline responder (no model configured)"
	}
	return a.Model.Provider + " · " + a.Model.Name
}

// TerminalKey is the address key of the owner's terminal: the holder of
// a session the terminal holds.
func (a *App) TerminalKey() string { return Platform + ":dm:" + a.Owner.ID }

// NewSession creates a terminal session for the owner, held here.
func (a *App) NewSession(ctx context.Context) (store.Session, error) {
	s, err := a.Store.CreateSession(ctx, store.Session{OwnerID: a.Owner.ID, Platform: Platform, Holder: a.TerminalKey()})
	if err != nil {
		return store.Session{}, fmt.Errorf("new session: %w", err)
	}
	return s, nil
}

// Resolve finds one of the owner's sessions by id, id prefix or title.
func (a *App) Resolve(ctx context.Context, ref string) (store.Session, error) {
	s, err := a.Store.ResolveSession(ctx, a.Owner.ID, ref)
	if err != nil {
		return store.Session{}, fmt.Errorf("session %q: %w", ref, err)
	}
	return s, nil
}

// StoreURL is the store config.yaml names, or BATON_STORE when it names
// none: config wins over the environment, as with the model settings.
func StoreURL(cfg config.Config, env config.Env) string {
	if env == nil {
		env = os.Getenv
	}
	if cfg.Store != "" {
		return cfg.Store
	}
	return env(StoreEnv)
}

// storeForms is what a store URL may be, for error messages.
const storeForms = `"" or "sqlite:" (the SQLite file in BATON_HOME), "sqlite:///abs/path/state.db" or a plain path (that SQLite file), ` +
	`or "postgres://user:password@host:5432/database" (a database on a Postgres server)`

// ErrNotAFile is StorePath's answer for a store on a Postgres server.
var ErrNotAFile = errors.New("the store is a database on a Postgres server, not a file")

// IsPostgres reports whether url names a store on a Postgres server
// (postgres:// or postgresql://).
func IsPostgres(url string) bool {
	scheme, _, ok := strings.Cut(strings.TrimSpace(url), "://")
	return ok && postgres.IsURL(strings.ToLower(scheme)+"://")
}

// StorePath is the SQLite file a store URL names: empty or "sqlite:" is
// $home/state.db, "sqlite:///abs/path" and "sqlite:path" that path, and a
// plain path itself (a relative one inside home). A postgres:// URL names
// no file (ErrNotAFile); anything else is an error naming the accepted
// forms.
func StorePath(home, url string) (string, error) {
	url = strings.TrimSpace(url)
	if url == "" {
		return filepath.Join(home, sqlite.FileName), nil
	}
	scheme, rest, hasScheme := strings.Cut(url, ":")
	if hasScheme && !isScheme(scheme) {
		hasScheme = false // "./a:b" is a path
	}
	if !hasScheme {
		return inHome(home, url), nil
	}
	switch strings.ToLower(scheme) {
	case "sqlite", "sqlite3":
		if strings.HasPrefix(rest, "//") {
			host, path, _ := strings.Cut(strings.TrimPrefix(rest, "//"), "/")
			if host != "" && host != "localhost" {
				return "", fmt.Errorf("store %q: a SQLite file is local; write sqlite:///abs/path (three slashes)", url)
			}
			rest = "/" + path
		}
		if rest == "" || rest == "/" {
			return filepath.Join(home, sqlite.FileName), nil
		}
		return inHome(home, rest), nil
	case "postgres", "postgresql":
		return "", fmt.Errorf("store %q: %w", redactURL(url), ErrNotAFile)
	}
	return "", fmt.Errorf("store %q: unknown kind %q; the store is %s", redactURL(url), scheme, storeForms)
}

// OpenStore opens the store url names (see StorePath): a SQLite file, with
// opts, or a database on a Postgres server.
func OpenStore(ctx context.Context, home, url string, opts ...sqlite.Option) (store.Store, error) {
	if IsPostgres(url) {
		return postgres.Open(ctx, strings.TrimSpace(url))
	}
	path, err := StorePath(home, url)
	if err != nil {
		return nil, err
	}
	return sqlite.Open(ctx, path, opts...)
}

// isScheme reports whether s can be a URL scheme (a letter, then letters,
// digits, +, - or .); a single letter is taken as a drive, not a scheme.
func isScheme(s string) bool {
	if len(s) < 2 {
		return false
	}
	for i, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z':
		case i > 0 && (r >= '0' && r <= '9' || r == '+' || r == '-' || r == '.'):
		default:
			return false
		}
	}
	return true
}

func inHome(home, path string) string {
	if filepath.IsAbs(path) {
		return filepath.Clean(path)
	}
	return filepath.Join(home, path)
}

// redactURL hides a password in a URL shown in an error.
func redactURL(raw string) string {
	if u, err := neturl.Parse(raw); err == nil {
		return u.Redacted()
	}
	return raw
}

// Transcriber hears voice notes where config.yaml's voice: says, or
// through the model's own API when it is OpenAI's; nil when neither is
// set (notes are then kept unheard, and the person told so).
func (a *App) Transcriber() (*voice.Transcriber, error) {
	v := a.Config.Voice.For(a.Model)
	t, err := voice.New(voice.Config{BaseURL: v.BaseURL, Model: v.Model, APIKey: v.APIKey, Language: v.Language})
	if errors.Is(err, voice.ErrNotConfigured) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(a.Home, config.FileName), err)
	}
	return t, nil
}

// Speaker speaks answers (/voice on) through the same endpoint as
// Transcriber; nil when none is set.
func (a *App) Speaker() (*voice.Speaker, error) {
	v := a.Config.Voice.For(a.Model)
	sp, err := voice.NewSpeaker(voice.SpeechConfig{BaseURL: v.BaseURL, Model: v.SpeechModel, Voice: v.Speaker, APIKey: v.APIKey})
	if errors.Is(err, voice.ErrNotConfigured) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(a.Home, config.FileName), err)
	}
	return sp, nil
}
