// Package agent runs baton's conversation turns: it sends the session's
// transcript to the model, streams the answer out as events, runs the tools
// the model asks for (asking a person first where needed), and stores every
// message as soon as it exists, so an interrupted or failed turn loses
// nothing that was already said.
package agent

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/baton-agent/baton/internal/llm"
	"github.com/baton-agent/baton/internal/retry"
	"github.com/baton-agent/baton/internal/store"
)

// Defaults for zero-valued Agent fields.
const (
	DefaultMaxSteps  = 20
	DefaultKeepTurns = 2
)

// compressAt is the share of the context window past which Run compresses
// the transcript before calling the model.
const compressAt = 0.75

// writeTimeout bounds each store write. Writes run detached from the turn's
// context so a cancelled turn still records what happened.
const writeTimeout = 10 * time.Second

// Sentinel errors returned (wrapped) by the Agent.
var (
	ErrMaxSteps          = errors.New("stopped: too many model calls in one turn")
	ErrBusy              = errors.New("a turn is already running in this session")
	ErrNothingToUndo     = errors.New("nothing to undo")
	ErrNothingToCompress = errors.New("nothing to compress")
)

// Store is the part of store.Store the agent uses.
type Store interface {
	GetSession(ctx context.Context, id string) (store.Session, error)
	AddUsage(ctx context.Context, id string, u store.Usage) error
	AppendMessages(ctx context.Context, sessionID string, msgs ...store.Message) ([]store.Message, error)
	Transcript(ctx context.Context, sessionID string) ([]store.Message, error)
	ReplaceTranscript(ctx context.Context, sessionID string, msgs []store.Message) ([]store.Message, error)
}

var _ Store = store.Store(nil)

// Agent runs turns. Set the fields before the first call and do not change
// them afterwards; one Agent may serve many sessions concurrently.
type Agent struct {
	Provider llm.Provider
	Store    Store
	Tools    *Registry // nil: no tools
	Model    string    // used when the session names no model
	System   string    // system prompt

	MaxSteps        int // model calls per turn; 0: DefaultMaxSteps
	MaxOutputTokens int // 0: the provider's default
	ContextWindow   int // tokens; 0 disables automatic compression
	KeepTurns       int // user turns kept verbatim by compression; 0: DefaultKeepTurns

	// StoreRetry is how a store write that failed for a passing reason
	// (busy, locked, disk full) is tried again before the turn gives up
	// with ErrStore; zero: tries for up to 30 s.
	StoreRetry retry.Policy

	// Approver is asked before tools that are not read-only run; nil
	// denies them all.
	Approver Approver
	// Allow lists what runs without asking: a tool name ("write_file",
	// within the working directory and the configured paths), or
	// "tool:rule" matched against the call's subject as its SubjectKind
	// says: "shell:git status" is that exact command, "shell:ls *" ls with
	// any arguments, "write_file:docs/" anything under docs. See
	// CheckAllow for entries refused outright.
	Allow []string

	mu     sync.Mutex
	always map[approvedCall]bool // "always for this session" answers
	busy   map[string]bool       // sessions with a turn or edit in progress
}

type approvedCall struct{ session, tool, subject string }

// Result sums up a finished (or stopped) turn.
type Result struct {
	Text        string    // the final answer; "" if the turn did not reach one
	Steps       int       // model calls made
	Usage       llm.Usage // tokens over all model calls of the turn
	Interrupted bool      // ctx was cancelled
}

// lock marks the session busy so two turns never interleave their rows.
func (a *Agent) lock(sessionID string) (unlock func(), err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.busy == nil {
		a.busy = map[string]bool{}
	}
	if a.busy[sessionID] {
		return nil, fmt.Errorf("session %s: %w", sessionID, ErrBusy)
	}
	a.busy[sessionID] = true
	return func() {
		a.mu.Lock()
		delete(a.busy, sessionID)
		a.mu.Unlock()
	}, nil
}

// model is the session's own model if it has one (set by /model), else
// the Agent's.
func (a *Agent) model(sess store.Session) string {
	if sess.Model != "" {
		return sess.Model
	}
	return a.Model
}

func (a *Agent) maxSteps() int {
	if a.MaxSteps > 0 {
		return a.MaxSteps
	}
	return DefaultMaxSteps
}

func (a *Agent) keepTurns() int {
	if a.KeepTurns > 0 {
		return a.KeepTurns
	}
	return DefaultKeepTurns
}

func (a *Agent) tools() []llm.Tool {
	if a.Tools == nil {
		return nil
	}
	return a.Tools.List()
}

// ErrStore marks a turn that failed because the store could not record it
// (busy, locked, disk full) after StoreRetry, not because of the model:
// callers keep the input and try again once the store recovers.
var ErrStore = errors.New("the store could not record the turn")

// write runs one store write detached from cancellation (what was said
// before the person pressed Ctrl-C must still be recorded), each try
// bounded by writeTimeout, tried again while its failure may pass.
func write[T any](ctx context.Context, a *Agent, op func(ctx context.Context) (T, error)) (T, error) {
	p := a.StoreRetry
	if p == (retry.Policy{}) {
		// Long enough to ride out another process's burst of writes.
		p = retry.Policy{First: 100 * time.Millisecond, Max: 2 * time.Second, Within: 30 * time.Second}
	}
	v, err := retry.Value(context.WithoutCancel(ctx), p, func(ctx context.Context) (T, error) {
		wctx, cancel := context.WithTimeout(ctx, writeTimeout)
		defer cancel()
		v, err := op(wctx)
		if err != nil && !store.Transient(err) {
			return v, retry.Stop(err)
		}
		return v, err
	}, nil)
	if err != nil && store.Transient(err) {
		return v, fmt.Errorf("%w: %w", ErrStore, err)
	}
	return v, err
}

func (a *Agent) append(ctx context.Context, sessionID string, msgs ...store.Message) ([]store.Message, error) {
	return write(ctx, a, func(ctx context.Context) ([]store.Message, error) {
		return a.Store.AppendMessages(ctx, sessionID, msgs...)
	})
}

func (a *Agent) replace(ctx context.Context, sessionID string, msgs []store.Message) ([]store.Message, error) {
	return write(ctx, a, func(ctx context.Context) ([]store.Message, error) {
		return a.Store.ReplaceTranscript(ctx, sessionID, fresh(msgs))
	})
}

func (a *Agent) addUsage(ctx context.Context, sessionID string, u llm.Usage) error {
	if u == (llm.Usage{}) {
		return nil
	}
	_, err := write(ctx, a, func(ctx context.Context) (struct{}, error) {
		return struct{}{}, a.Store.AddUsage(ctx, sessionID, store.Usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens})
	})
	return err
}

// fresh copies msgs without their store-assigned identity, for rewriting.
func fresh(msgs []store.Message) []store.Message {
	out := make([]store.Message, len(msgs))
	for i, m := range msgs {
		m.ID, m.Seq, m.SessionID, m.Superseded = 0, 0, "", false
		out[i] = m
	}
	return out
}
