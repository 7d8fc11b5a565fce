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
	"log/slog"
	"sync"
	"time"

	"github.com/baton-agent/baton/internal/llm"
	"github.com/baton-agent/baton/internal/retry"
	"github.com/baton-agent/baton/internal/store"
)

// Defaults for zero-valued Agent fields.
const (
	DefaultMaxSteps   = 20
	DefaultKeepTurns  = 2
	DefaultDraftEvery = time.Second
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

// Drafts is the optional part of a Store that keeps the answer being
// written, so that a turn stopped or crashed mid-answer continues it
// instead of starting again. Storing a message clears the draft.
type Drafts interface {
	SetDraft(ctx context.Context, sessionID, text string) error
	Draft(ctx context.Context, sessionID string) (string, error)
}

var _ Drafts = store.Store(nil)

// usageAppender is the optional part of a Store that stores a model's
// answer and the tokens it cost in one write.
type usageAppender interface {
	AppendMessagesWithUsage(ctx context.Context, sessionID string, u store.Usage, msgs ...store.Message) ([]store.Message, error)
}

var _ usageAppender = store.Store(nil)

// turnStarter is the optional part of a Store that reads what a turn
// starts from (the session, its draft, its transcript) in one read.
type turnStarter interface {
	TurnStart(ctx context.Context, sessionID string) (store.TurnState, error)
}

var _ turnStarter = store.Store(nil)

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
	// MaxImages is how many of a transcript's latest images a turn sends
	// the model whole; older ones are a line each. 0: DefaultMaxImages.
	MaxImages     int
	ContextWindow int // tokens; 0 disables automatic compression
	KeepTurns     int // user turns kept verbatim by compression; 0: DefaultKeepTurns

	// StoreRetry is how a store write that failed for a passing reason
	// (busy, locked, disk full) is tried again before the turn gives up
	// with ErrStore; zero: tries for up to 30 s. What the model said is
	// kept in memory meanwhile, never asked for again; the first failure
	// is reported as EventStoreTrouble. A policy without bounds waits for
	// the store as long as the turn runs.
	StoreRetry retry.Policy
	// DraftEvery is how often the answer being written is kept in the
	// store (Drafts), so that a crash loses at most this much of it;
	// 0: DefaultDraftEvery.
	DraftEvery time.Duration

	// Turns marks the turn running in a session where other processes
	// see it, so that a move of the session elsewhere stops it first
	// (turns.go); nil: seen only by this Agent.
	Turns TurnGuard

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
	// Cut is the answer a stop or a failure cut off, as stored (ending
	// in InterruptedMarker); "" if none was.
	Cut string
	// Files are the files the turn's tools gave to send (SendFile), in
	// order, each stored with its call's result.
	Files []OutFile
	// Notice is something the person is to be told with the answer (that
	// the model does not see their pictures: BlindNotice); "" for none.
	Notice string
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

func (a *Agent) tools(ctx context.Context) []llm.Tool {
	if a.Tools == nil {
		return nil
	}
	return a.Tools.List(ctx)
}

// ErrStore marks a turn that failed because the store could not record it
// (busy, locked, disk full) after StoreRetry, not because of the model:
// callers keep the input and try again once the store recovers.
var ErrStore = errors.New("the store could not record the turn")

// ErrSuspended, as the cause of a turn's cancellation (see
// context.WithCancelCause), stops the turn to be resumed rather than
// ended: the part of the answer written so far stays in the store as the
// session's draft, which the next Run continues, instead of being stored
// as an answer ending in InterruptedMarker. A gateway that stops suspends
// its turns; a person's Ctrl-C ends them.
var ErrSuspended = errors.New("the turn was suspended, to be resumed")

// suspended reports whether ctx was cancelled to suspend the turn.
func suspended(ctx context.Context) bool {
	return ctx.Err() != nil && errors.Is(context.Cause(ctx), ErrSuspended)
}

// defaultStoreRetry rides out another process's burst of writes.
var defaultStoreRetry = retry.Policy{First: 100 * time.Millisecond, Max: 2 * time.Second, Within: 30 * time.Second}

// write runs one store write, each try bounded by writeTimeout, tried again
// under StoreRetry while its failure may pass; trouble (may be nil) hears
// of the first such failure, so a person can be told while it is tried
// again. The write is detached from cancellation, so what was said before
// the person pressed Ctrl-C is still recorded; but once the turn is
// stopped, a store that keeps failing gets lastChance more, not forever.
func write[T any](ctx context.Context, p retry.Policy, trouble func(error), op func(ctx context.Context) (T, error)) (T, error) {
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	defer context.AfterFunc(ctx, func() { time.AfterFunc(lastChance, cancel) })()
	var last error
	told := false
	v, err := retry.Value(rctx, p, func(ctx context.Context) (T, error) {
		wctx, cancel := context.WithTimeout(ctx, writeTimeout)
		defer cancel()
		v, err := op(wctx)
		last = err
		if err != nil && !store.Transient(err) {
			return v, retry.Stop(err)
		}
		return v, err
	}, func(err error, _ time.Duration) {
		if !told && trouble != nil {
			told = true
			trouble(err)
		}
	})
	if err != nil && last != nil && store.Transient(last) {
		return v, fmt.Errorf("%w: %w", ErrStore, last)
	}
	return v, err
}

// lastChance is how long a failing write is still tried once its turn is
// stopped.
const lastChance = writeTimeout

func (a *Agent) storeRetry() retry.Policy {
	if a.StoreRetry == (retry.Policy{}) {
		return defaultStoreRetry
	}
	return a.StoreRetry
}

func (a *Agent) append(ctx context.Context, sessionID string, trouble func(error), msgs ...store.Message) ([]store.Message, error) {
	return write(ctx, a.storeRetry(), trouble, func(ctx context.Context) ([]store.Message, error) {
		return a.Store.AppendMessages(ctx, sessionID, msgs...)
	})
}

// appendCounted appends msgs and adds u to the session's token counts, in
// one write where the store can; otherwise the count is a write of its
// own after, whose failure costs only the count.
func (a *Agent) appendCounted(ctx context.Context, sessionID string, trouble func(error), u llm.Usage, msgs ...store.Message) ([]store.Message, error) {
	ua, ok := a.Store.(usageAppender)
	if !ok || u == (llm.Usage{}) {
		stored, err := a.append(ctx, sessionID, trouble, msgs...)
		if err == nil {
			if err := a.addUsage(ctx, sessionID, u); err != nil {
				slog.Warn("record token usage", "session", sessionID, "err", err)
			}
		}
		return stored, err
	}
	su := store.Usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens}
	return write(ctx, a.storeRetry(), trouble, func(ctx context.Context) ([]store.Message, error) {
		return ua.AppendMessagesWithUsage(ctx, sessionID, su, msgs...)
	})
}

func (a *Agent) replace(ctx context.Context, sessionID string, msgs []store.Message) ([]store.Message, error) {
	return write(ctx, a.storeRetry(), nil, func(ctx context.Context) ([]store.Message, error) {
		return a.Store.ReplaceTranscript(ctx, sessionID, fresh(msgs))
	})
}

// usageRetry is short whatever StoreRetry says: a count is not worth
// holding a stored answer back from the person for.
var usageRetry = retry.Policy{First: 100 * time.Millisecond, Max: time.Second, Within: 5 * time.Second}

// addUsage counts tokens.
func (a *Agent) addUsage(ctx context.Context, sessionID string, u llm.Usage) error {
	if u == (llm.Usage{}) {
		return nil
	}
	_, err := write(ctx, usageRetry, nil, func(ctx context.Context) (struct{}, error) {
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
