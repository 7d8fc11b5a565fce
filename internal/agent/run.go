package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"unicode"

	"github.com/baton-agent/baton/internal/llm"
	"github.com/baton-agent/baton/internal/store"
)

// InterruptedMarker ends the stored text of an answer that was cut off by
// cancellation or a broken stream, so the person and the model both see
// that it is incomplete.
const InterruptedMarker = "[interrupted]"

// Run stores input, then runs the model and its tool calls until the model
// answers without calling tools. input with an empty Role adds nothing and
// runs the model on the transcript as it is (after Retry, or to continue
// after an error).
//
// Every message is stored as soon as it is complete. If ctx is cancelled
// the turn ends promptly: streamed text so far is stored ending in
// InterruptedMarker, tool calls left without a result get CancelledResult,
// and the error wraps context.Canceled. A provider failure returns an error
// wrapping the provider's *llm.APIError; what was stored stays.
//
// emit (may be nil) receives the turn's events; on error the last one is
// EventError, otherwise EventDone.
func (a *Agent) Run(ctx context.Context, sessionID string, input store.Message, emit func(Event)) (Result, error) {
	if emit == nil {
		emit = func(Event) {}
	}
	unlock, err := a.lock(sessionID)
	if err != nil {
		return Result{}, a.failed(sessionID, emit, err)
	}
	defer unlock()
	return a.run(ctx, sessionID, input, emit)
}

// run is Run without the session lock, for callers that hold it.
func (a *Agent) run(ctx context.Context, sessionID string, input store.Message, emit func(Event)) (Result, error) {
	t := &turn{a: a, session: sessionID, emit: emit, platform: input.Platform}
	err := t.run(ctx, input)
	if err != nil {
		if ctx.Err() != nil {
			t.res.Interrupted = true
		}
		return t.res, a.failed(sessionID, emit, err)
	}
	emit(Event{Kind: EventDone, SessionID: sessionID, Text: t.res.Text, Usage: t.res.Usage})
	return t.res, nil
}

func (a *Agent) failed(sessionID string, emit func(Event), err error) error {
	err = fmt.Errorf("run turn in session %s: %w", sessionID, err)
	emit(Event{Kind: EventError, SessionID: sessionID, Err: err})
	return err
}

// turn is the state of one Run.
type turn struct {
	a        *Agent
	session  string
	sess     store.Session
	emit     func(Event)
	platform string          // where the turn's input came from; stamped on its rows
	msgs     []store.Message // the live transcript, kept in step with the store
	res      Result
}

func (t *turn) run(ctx context.Context, input store.Message) error {
	a := t.a
	if input.Role != "" {
		// First, before anything can fail: what the person said is kept.
		if _, err := a.append(ctx, t.session, input); err != nil {
			return fmt.Errorf("store input: %w", err)
		}
	}
	var err error
	if t.sess, err = a.Store.GetSession(ctx, t.session); err != nil {
		return storeFailure(ctx, "load session", err)
	}
	if t.msgs, err = a.Store.Transcript(ctx, t.session); err != nil {
		return storeFailure(ctx, "load transcript", err)
	}
	if a.overThreshold(t.msgs) {
		if msgs, before, after, err := a.compress(ctx, t.session, t.sess, t.msgs); err == nil {
			t.msgs = msgs
			t.emit(Event{Kind: EventCompressed, SessionID: t.session, Before: before, After: after})
		} else if ctx.Err() != nil {
			return ctx.Err()
		} else if !errors.Is(err, ErrNothingToCompress) {
			// The turn may still fit; if not, the model call will say so.
			slog.Warn("automatic compression failed", "session", t.session, "err", err)
		}
	}
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		if t.res.Steps >= a.maxSteps() {
			return t.stopMaxSteps(ctx)
		}
		t.res.Steps++
		resp, partial, err := t.callModel(ctx)
		if err != nil {
			if partial != "" {
				if serr := t.store(ctx, store.Message{Role: store.RoleAssistant, Content: interrupted(partial)}); serr != nil {
					return errors.Join(err, serr)
				}
			}
			if cerr := ctx.Err(); cerr != nil {
				return cerr
			}
			return fmt.Errorf("model call failed: %w", err)
		}
		t.res.Usage.InputTokens += resp.Usage.InputTokens
		t.res.Usage.OutputTokens += resp.Usage.OutputTokens
		if err := a.addUsage(ctx, t.session, resp.Usage); err != nil {
			slog.Warn("record token usage", "session", t.session, "err", err)
		}
		calls := withIDs(resp.ToolCalls, t.res.Steps)
		raw, err := EncodeToolCalls(calls)
		if err != nil {
			return err
		}
		if err := t.store(ctx, store.Message{Role: store.RoleAssistant, Content: resp.Text, ToolCalls: raw}); err != nil {
			return err
		}
		if len(calls) == 0 {
			t.res.Text = resp.Text
			return nil
		}
		if err := t.runCalls(ctx, calls); err != nil {
			return err
		}
	}
}

func (t *turn) callModel(ctx context.Context) (llm.Response, string, error) {
	msgs, err := toLLM(t.msgs)
	if err != nil {
		return llm.Response{}, "", fmt.Errorf("prepare transcript: %w", err)
	}
	req := llm.Request{
		Model:     t.a.model(t.sess),
		System:    t.a.System,
		Messages:  msgs,
		Tools:     t.a.tools(),
		MaxTokens: t.a.MaxOutputTokens,
	}
	var partial strings.Builder
	resp, err := t.a.Provider.Chat(ctx, req, func(d llm.Delta) {
		if d.Text == "" {
			return
		}
		partial.WriteString(d.Text)
		t.emit(Event{Kind: EventTextDelta, SessionID: t.session, Text: d.Text})
	})
	return resp, partial.String(), err
}

// store appends msgs to the session and to t.msgs.
func (t *turn) store(ctx context.Context, msgs ...store.Message) error {
	for i := range msgs {
		if msgs[i].Platform == "" {
			msgs[i].Platform = t.platform
		}
	}
	stored, err := t.a.append(ctx, t.session, msgs...)
	if err != nil {
		return fmt.Errorf("store %s message: %w", msgs[0].Role, err)
	}
	t.msgs = append(t.msgs, stored...)
	return nil
}

func (t *turn) stopMaxSteps(ctx context.Context) error {
	note := fmt.Sprintf("[stopped: %d model calls in this turn without a final answer; say \"continue\" to let me go on]", t.a.maxSteps())
	if err := t.store(ctx, store.Message{Role: store.RoleAssistant, Content: note}); err != nil {
		return err
	}
	return fmt.Errorf("%w (limit %d)", ErrMaxSteps, t.a.maxSteps())
}

// interrupted marks partial text as cut off.
func interrupted(partial string) string {
	return strings.TrimRightFunc(partial, unicode.IsSpace) + " " + InterruptedMarker
}

// withIDs gives calls without an id (some local servers send none) one, so
// their results can be matched to them.
func withIDs(calls []llm.ToolCall, step int) []llm.ToolCall {
	for i := range calls {
		if calls[i].ID == "" {
			calls[i].ID = fmt.Sprintf("call_baton_%d_%d", step, i)
		}
	}
	return calls
}

// storeFailure wraps a failed store read, with ErrStore when it may pass
// (and the turn was not stopped meanwhile).
func storeFailure(ctx context.Context, what string, err error) error {
	if store.Transient(err) && ctx.Err() == nil {
		return fmt.Errorf("%s: %w: %w", what, ErrStore, err)
	}
	return fmt.Errorf("%s: %w", what, err)
}
