// Package cli is baton's terminal: the REPL with streamed, markdown-rendered
// answers, approvals and slash commands, the one-shot mode for scripts, and
// the `baton sessions` commands. cmd/baton only wires flags to it.
package cli

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/baton-agent/baton/internal/agent"
	"github.com/baton-agent/baton/internal/agent/tools"
	"github.com/baton-agent/baton/internal/config"
	"github.com/baton-agent/baton/internal/llm"
	"github.com/baton-agent/baton/internal/llm/provider"
	"github.com/baton-agent/baton/internal/owner"
	"github.com/baton-agent/baton/internal/store"
	"github.com/baton-agent/baton/internal/store/sqlite"
)

// HistoryFile is the REPL's line history inside BATON_HOME.
const HistoryFile = "history"

// Platform is what terminal sessions and messages are stamped with.
const Platform = owner.Platform

// systemPrompt tells the model where it runs; short, so it costs little on
// every call.
const systemPrompt = `You are baton, a personal AI agent working for one person, their owner. You can run shell commands and read, write and edit files on their machine with the tools provided; commands and writes ask the owner first. Be direct and concise. Use Markdown where it helps (code blocks for code and commands).`

// App is what every terminal command needs: configuration, the store, the
// owner and the model provider.
type App struct {
	Home     string
	Config   config.Config
	Model    config.ModelConfig // resolved: provider and name filled in
	Store    store.Store
	Owner    store.User
	Provider llm.Provider
}

// Open reads configuration from home, opens the store and finds the owner
// (creating them on first run).
func Open(ctx context.Context, home string) (*App, error) {
	cfg, err := config.Load(home)
	if err != nil {
		return nil, err
	}
	m := config.Resolve(ctx, cfg.Model, nil)
	p, err := provider.New(m, provider.Options{})
	if err != nil {
		return nil, err
	}
	st, err := sqlite.Open(ctx, filepath.Join(home, sqlite.FileName))
	if err != nil {
		return nil, err
	}
	u, err := owner.Current(ctx, st)
	if err != nil {
		return nil, errors.Join(err, st.Close())
	}
	return &App{Home: home, Config: cfg, Model: m, Store: st, Owner: u, Provider: p}, nil
}

// Close closes the store.
func (a *App) Close() error { return a.Store.Close() }

// Offline reports whether no model is configured.
func (a *App) Offline() bool { return provider.IsOffline(a.Provider) }

// NewAgent builds the agent with the built-in tools working in the current
// directory; approver is asked before commands and writes (nil denies them).
func (a *App) NewAgent(approver agent.Approver) (*agent.Agent, error) {
	reg, err := tools.NewRegistry(tools.Config{ShellTimeout: a.Config.Tools.ShellTimeout})
	if err != nil {
		return nil, fmt.Errorf("set up tools: %w", err)
	}
	return &agent.Agent{
		Provider:        a.Provider,
		Store:           a.Store,
		Tools:           reg,
		Model:           a.Model.Name,
		System:          systemPrompt,
		MaxOutputTokens: a.Model.MaxOutputTokens,
		ContextWindow:   a.Model.ContextWindow,
		Approver:        approver,
		Allow:           a.Config.Tools.Allow,
	}, nil
}

// ModelLabel is "provider/model" for display.
func (a *App) ModelLabel() string {
	if a.Offline() {
		return "offline responder (no model configured)"
	}
	return a.Model.Provider + " · " + a.Model.Name
}

// NewSession creates a terminal session for the owner.
func (a *App) NewSession(ctx context.Context) (store.Session, error) {
	s, err := a.Store.CreateSession(ctx, store.Session{OwnerID: a.Owner.ID, Platform: Platform})
	if err != nil {
		return store.Session{}, fmt.Errorf("new session: %w", err)
	}
	return s, nil
}

// Latest is the owner's most recently active session; store.ErrNotFound
// if there is none.
func (a *App) Latest(ctx context.Context) (store.Session, error) {
	ss, err := a.Store.ListSessions(ctx, store.SessionFilter{OwnerID: a.Owner.ID, Limit: 1})
	if err != nil {
		return store.Session{}, fmt.Errorf("find latest session: %w", err)
	}
	if len(ss) == 0 {
		return store.Session{}, fmt.Errorf("no session to continue yet: %w", store.ErrNotFound)
	}
	return ss[0], nil
}

// Resolve finds one of the owner's sessions by id, id prefix or title.
func (a *App) Resolve(ctx context.Context, ref string) (store.Session, error) {
	s, err := a.Store.ResolveSession(ctx, a.Owner.ID, ref)
	if err != nil {
		return store.Session{}, fmt.Errorf("session %q: %w", ref, err)
	}
	return s, nil
}
