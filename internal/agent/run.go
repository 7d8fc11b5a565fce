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
// Every message is stored as soon as it is complete, and the answer being
// written is kept as the session's draft while it streams (Drafts). If ctx
// is cancelled the turn ends promptly: streamed text so far is stored
// ending in InterruptedMarker, tool calls left without a result get
// CancelledResult, and the error wraps context.Canceled. A provider
// failure returns an error wrapping the provider's *llm.APIError; what was
// stored stays.
//
// A turn cancelled with ErrSuspended as the cause, or cut off by a crash,
// is resumed by the next Run: the kept draft is continued by the model
// where the provider can go on from it (llm.CanPrefill), and otherwise
// written anew, the new answer replacing it; a tool call that has no
// result is recorded as interrupted (InterruptedResult), never run again
// unasked.
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

// run is Run without the session lock, for callers that hold it. The
// turn holds the session's turn lock (Turns) while it runs, and stops
// when a move of the session asks it to, its error then wrapping a
// *MovedError.
func (a *Agent) run(ctx context.Context, sessionID string, input store.Message, emit func(Event)) (Result, error) {
	if a.Turns != nil {
		var end func()
		var err error
		if ctx, end, err = a.Turns.Begin(ctx, sessionID); err != nil {
			return Result{}, a.failed(sessionID, emit, err)
		}
		defer end() // after what the turn wrote is stored
	}
	t := &turn{a: a, session: sessionID, emit: emit, platform: input.Platform}
	err := t.run(ctx, input)
	if err != nil {
		if ctx.Err() != nil {
			t.res.Interrupted = true
			if cause := context.Cause(ctx); (errors.Is(cause, ErrMoved) || errors.Is(cause, ErrTurnLost)) && !errors.Is(err, cause) {
				err = fmt.Errorf("%w: %w", cause, err)
			}
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
	draft, err := t.start(ctx) // the draft is read before anything is stored: storing clears it
	if err != nil {
		return err
	}
	if input.Role == "" && draft == "" {
		if answer, ok := finishedAnswer(t.msgs); ok {
			// Answered while this turn waited for the session (by a
			// turn of another replica's that held it, or one before a
			// restart): asking the model again would answer twice.
			t.res.Text = answer
			return nil
		}
	}
	// What a stop or crash left unfinished is settled before anything
	// else: a tool call without a result is recorded as interrupted, never
	// run again here (the model decides, knowing it may have run); a kept
	// answer is continued, or kept as cut off when the person said
	// something new.
	settle := interruptedCalls(t.msgs)
	if input.Role != "" {
		if draft != "" {
			settle = append(settle, store.Message{Role: store.RoleAssistant, Content: interrupted(draft)})
			draft = ""
		}
		settle = append(settle, input)
	}
	if len(settle) > 0 {
		if err := t.store(ctx, settle...); err != nil {
			return fmt.Errorf("store input: %w", err)
		}
	}
	if input.Role == "" {
		// A turn taken up again: files its tools gave before the stop
		// were never sent (they go with the answer), so they go now.
		t.res.Files = t.a.filesSinceLastUser(t.msgs)
	}
	if input.Role != "" && !llm.SeesImages(a.Provider, a.model(t.sess)) && firstImage(t.msgs) {
		t.res.Notice = BlindNotice
	}
	compressed := false
	if a.overThreshold(t.msgs) {
		if msgs, before, after, err := a.compress(ctx, t.session, t.sess, t.msgs); err == nil {
			t.msgs = msgs
			compressed = true
			t.emit(Event{Kind: EventCompressed, SessionID: t.session, Before: before, After: after})
		} else if ctx.Err() != nil {
			return ctx.Err()
		} else if !errors.Is(err, ErrNothingToCompress) {
			// The turn may still fit; if not, the model call will say so.
			slog.Warn("automatic compression failed", "session", t.session, "err", err)
		}
	}
	if draft != "" && (len(settle) > 0 || compressed) {
		// Writing cleared it; it is needed until the continuation is stored.
		if err := keepDraft(ctx, a.Store.(Drafts), t.session, draft); err != nil {
			slog.Warn("keep the answer being continued", "session", t.session, "err", err)
		}
	}
	// The first call continues the kept answer where the model can go on
	// from its own words; elsewhere it writes the answer anew, and the
	// new answer replaces the kept one (never both stored).
	kept, replacing := draft, ""
	if !llm.CanPrefill(a.Provider) {
		kept, replacing = "", draft
	}
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		if t.res.Steps >= a.maxSteps() {
			return t.stopMaxSteps(ctx)
		}
		t.res.Steps++
		resp, partial, err := t.callModel(ctx, kept)
		if err != nil {
			text := continued(kept, partial)
			if text == "" {
				text = replacing // nothing new written: the kept answer stays
			}
			if text != "" {
				if st, ok := a.Store.(Drafts); ok && suspended(ctx) {
					// Kept for the next Run to continue, not ended.
					if serr := keepDraft(ctx, st, t.session, text); serr != nil {
						return errors.Join(err, fmt.Errorf("keep the answer written so far: %w", serr))
					}
				} else if serr := t.store(ctx, store.Message{Role: store.RoleAssistant, Content: interrupted(text)}); serr != nil {
					return errors.Join(err, serr)
				} else {
					t.res.Cut = interrupted(text)
				}
			}
			if cerr := ctx.Err(); cerr != nil {
				return cerr
			}
			return fmt.Errorf("model call failed: %w", err)
		}
		resp.Text = continued(kept, resp.Text)
		kept, replacing = "", ""
		calls := withIDs(resp.ToolCalls, t.res.Steps)
		raw, err := EncodeToolCalls(calls)
		if err != nil {
			return err
		}
		// The answer and what it cost, in one write.
		if err := t.storeCounted(ctx, resp.Usage, store.Message{Role: store.RoleAssistant, Content: resp.Text, ToolCalls: raw}); err != nil {
			return err
		}
		t.res.Usage.InputTokens += resp.Usage.InputTokens
		t.res.Usage.OutputTokens += resp.Usage.OutputTokens
		if len(calls) == 0 {
			t.res.Text = resp.Text
			return nil
		}
		if err := t.runCalls(ctx, calls); err != nil {
			return err
		}
	}
}

// start reads the session, its transcript and the draft kept from a
// stopped turn, in one read where the store can.
func (t *turn) start(ctx context.Context) (draft string, err error) {
	a := t.a
	if ts, ok := a.Store.(turnStarter); ok {
		st, err := ts.TurnStart(ctx, t.session)
		if err != nil {
			return "", storeFailure(ctx, "load session", err)
		}
		t.sess, t.msgs = st.Session, st.Transcript
		if _, ok := a.Store.(Drafts); ok {
			draft = st.Draft
		}
		return draft, nil
	}
	if t.sess, err = a.Store.GetSession(ctx, t.session); err != nil {
		return "", storeFailure(ctx, "load session", err)
	}
	if st, ok := a.Store.(Drafts); ok {
		if draft, err = st.Draft(ctx, t.session); err != nil {
			return "", storeFailure(ctx, "load the answer kept from a stopped turn", err)
		}
	}
	if t.msgs, err = a.Store.Transcript(ctx, t.session); err != nil {
		return "", storeFailure(ctx, "load transcript", err)
	}
	return draft, nil
}

// callModel asks the model for the next message, keeping it in the store
// as it is written. With kept, the model continues that answer, which a
// stop or crash cut off: it is shown again first, sent as the model's own
// last message, and what the model adds is returned.
func (t *turn) callModel(ctx context.Context, kept string) (llm.Response, string, error) {
	msgs, err := toLLM(t.msgs, t.a.fileParts(ctx, t.session, t.msgs, llm.SeesImages(t.a.Provider, t.a.model(t.sess))))
	if err != nil {
		return llm.Response{}, "", fmt.Errorf("prepare transcript: %w", err)
	}
	system := t.a.System
	if kept != "" {
		msgs = append(msgs, llm.Message{Role: llm.RoleAssistant, Content: strings.TrimRightFunc(kept, unicode.IsSpace)})
		system = strings.TrimSpace(system + "\n\n" + continueNote)
		t.emit(Event{Kind: EventTextDelta, SessionID: t.session, Text: kept})
	}
	req := llm.Request{
		Model:     t.a.model(t.sess),
		System:    system,
		Messages:  msgs,
		Tools:     t.a.tools(ctx),
		MaxTokens: t.a.MaxOutputTokens,
	}
	// An MCP tool is "server.tool" here and something the APIs take there.
	names := llm.NewToolNames(req.Tools)
	req = names.Encode(req)
	draft := t.startDraft(ctx, kept)
	var partial strings.Builder
	resp, err := t.a.Provider.Chat(ctx, req, func(d llm.Delta) {
		if d.Text == "" {
			return
		}
		partial.WriteString(d.Text)
		draft.update(partial.String())
		t.emit(Event{Kind: EventTextDelta, SessionID: t.session, Text: d.Text})
	})
	draft.finish()
	return names.Decode(resp), partial.String(), err
}

// store appends msgs to the session and to t.msgs. While the store
// refuses, they are kept and tried again under StoreRetry.
func (t *turn) store(ctx context.Context, msgs ...store.Message) error {
	return t.storeCounted(ctx, llm.Usage{}, msgs...)
}

// storeCounted is store that also adds u to the session's token counts.
func (t *turn) storeCounted(ctx context.Context, u llm.Usage, msgs ...store.Message) error {
	for i := range msgs {
		if msgs[i].Platform == "" {
			msgs[i].Platform = t.platform
		}
	}
	stored, err := t.a.appendCounted(ctx, t.session, t.storeTrouble, u, msgs...)
	if err != nil {
		return fmt.Errorf("store %s message: %w", msgs[0].Role, err)
	}
	t.msgs = append(t.msgs, stored...)
	return nil
}

func (t *turn) storeTrouble(err error) {
	t.emit(Event{Kind: EventStoreTrouble, SessionID: t.session, Err: err})
}

// interruptedCalls are results for the calls of the transcript's last
// assistant message that have none: a stop or crash cut them off.
func interruptedCalls(msgs []store.Message) []store.Message {
	for i := len(msgs) - 1; i >= 0; i-- {
		m := msgs[i]
		if m.Role == store.RoleTool {
			continue
		}
		if m.Role != store.RoleAssistant || len(m.ToolCalls) == 0 {
			return nil
		}
		calls, err := DecodeToolCalls(m.ToolCalls)
		if err != nil {
			return nil // toLLM reports it
		}
		answered := map[string]bool{}
		for _, r := range msgs[i+1:] {
			answered[r.ToolCallID] = true
		}
		var out []store.Message
		for _, c := range calls {
			if !answered[c.ID] {
				out = append(out, toolResult(c, InterruptedResult))
			}
		}
		return out
	}
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

// finishedAnswer is the model's answer ending msgs, when they end with one
// that called no tools: a turn with nothing left to do.
func finishedAnswer(msgs []store.Message) (string, bool) {
	if len(msgs) == 0 {
		return "", false
	}
	last := msgs[len(msgs)-1]
	if last.Role != store.RoleAssistant || len(last.ToolCalls) > 0 && string(last.ToolCalls) != "null" && string(last.ToolCalls) != "[]" {
		return "", false
	}
	return last.Content, true
}
