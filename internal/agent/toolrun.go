package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"unicode/utf8"

	"github.com/baton-agent/baton/internal/llm"
	"github.com/baton-agent/baton/internal/store"
)

// CancelledResult is stored for a tool call that the turn's cancellation
// stopped or never let start: every call must have a result, or the next
// model call is rejected.
const CancelledResult = "cancelled"

// InterruptedResult begins the result stored for a tool call that a stop
// or crash of baton cut off while it ran, or may have: baton does not
// know how far it got and never runs it again by itself; the model,
// under the usual approval rules, decides what to do next.
const InterruptedResult = "interrupted: baton was stopped or restarted while this call was running or about to run, so it may or may not have run, in whole or in part. Check what it would have done before running it again."

// maxResult caps a tool result sent to the model, whatever the tool does
// itself, so one call cannot fill the context window.
const maxResult = 64 << 10

// runCalls runs calls in order, storing each result as it completes. On a
// returned error every call without a result has been given one.
func (t *turn) runCalls(ctx context.Context, calls []llm.ToolCall) error {
	for i, c := range calls {
		var files toolFiles
		content, stop := t.runCall(withToolFiles(ctx, &files), c)
		result := toolResult(c, content)
		for _, f := range files.list {
			result.Attachments = append(result.Attachments, f.Attachment)
		}
		for _, f := range files.output {
			result.Attachments = append(result.Attachments, f)
		}
		if err := t.store(ctx, result); err != nil {
			return err
		}
		if len(files.list) > 0 && stop == nil {
			// Stored with the result first: whoever sends them sends
			// what the transcript holds.
			t.res.Files = append(t.res.Files, files.list...)
			t.emit(Event{Kind: EventFiles, SessionID: t.session, Call: c, Files: files.list})
		}
		if stop != nil {
			left := CancelledResult
			if ctx.Err() == nil {
				left = "error: not run: " + stop.Error()
			}
			var rest []store.Message
			for _, r := range calls[i+1:] {
				rest = append(rest, toolResult(r, left))
			}
			if len(rest) > 0 {
				if err := t.store(ctx, rest...); err != nil {
					return errors.Join(stop, err)
				}
			}
			return stop
		}
	}
	return nil
}

// toolFiles collects the files one call gives: to send (SendFile), or as
// its output, for the model (OutputFile).
type toolFiles struct {
	list   []OutFile
	output []store.Attachment
}

// OutFile is a file a tool gave to send, with the line sent with it.
type OutFile struct {
	store.Attachment
	Caption string
}

type toolFilesKey struct{}

func withToolFiles(ctx context.Context, f *toolFiles) context.Context {
	return context.WithValue(ctx, toolFilesKey{}, f)
}

// SendFile gives a file, already put in the store (Files.PutFile), to
// the person the turn answers, with caption: it is stored with the call's
// result and sent where the session is held (EventFiles). It reports
// false outside a tool call run by an Agent (nothing to send it with).
func SendFile(ctx context.Context, file store.Attachment, caption string) bool {
	f, ok := ctx.Value(toolFilesKey{}).(*toolFiles)
	if !ok {
		return false
	}
	f.list = append(f.list, OutFile{Attachment: file, Caption: caption})
	return true
}

// OutputFile gives a file, already put in the store, as part of the
// call's output (an MCP tool's picture): it is stored with the result,
// shown with the call wherever the conversation goes, and the model
// receives it as it receives the person's files. Only a tool that never
// sends (Tool.Sends false) may give one. It reports false outside a
// tool call run by an Agent.
func OutputFile(ctx context.Context, file store.Attachment) bool {
	f, ok := ctx.Value(toolFilesKey{}).(*toolFiles)
	if !ok {
		return false
	}
	f.output = append(f.output, file)
	return true
}

func toolResult(c llm.ToolCall, content string) store.Message {
	return store.Message{Role: store.RoleTool, Content: content, ToolCallID: c.ID, ToolName: c.Name}
}

// runCall approves and runs one call and returns its result for the model.
// A non-nil error ends the turn (cancellation, an approver that failed);
// tool failures are results, not errors.
func (t *turn) runCall(ctx context.Context, c llm.ToolCall) (string, error) {
	if err := ctx.Err(); err != nil {
		t.finished(c, CancelledResult, err)
		return CancelledResult, err
	}
	var tool Tool
	ok := false
	if t.a.Tools != nil {
		tool, ok = t.a.Tools.Find(ctx, c.Name)
	}
	if !ok {
		return t.toolError(c, fmt.Errorf("unknown tool %q", c.Name)), nil
	}
	if !json.Valid(c.Arguments) {
		return t.toolError(c, fmt.Errorf("arguments are not valid JSON: %s", clip(string(c.Arguments), 200))), nil
	}
	// The subject is worked out before and after Inside: a path whose
	// links moved in between is refused rather than checked as one place
	// and used as another. Run gets the subject that was checked.
	subject := ""
	if tool.Subject != nil {
		subject = tool.Subject(c.Arguments)
	}
	inside := tool.Inside == nil || tool.Inside(c.Arguments)
	if !inside && tool.ReadOnly && tool.SubjectKind == SubjectPath && t.a.inSessionFolder(t.session, subject) {
		// The session's own files (a photo it was sent) read as freely
		// as the working directory; they are never written there.
		inside = true
	}
	if tool.Subject != nil && tool.Subject(c.Arguments) != subject {
		return t.toolError(c, ErrSubjectMoved), nil
	}
	runCtx := WithSubject(ctx, subject)
	if !tool.ReadOnly || !inside {
		d, auto, err := t.approve(ctx, tool, c, subject, inside)
		if err != nil {
			if cerr := ctx.Err(); cerr != nil {
				t.finished(c, CancelledResult, cerr)
				return CancelledResult, cerr
			}
			err = fmt.Errorf("ask approval for %s: %w", c.Name, err)
			content := "error: not run: " + err.Error()
			t.finished(c, content, err)
			return content, err
		}
		if d == Deny {
			t.finished(c, DeniedResult, nil)
			return DeniedResult, nil
		}
		if auto {
			runCtx = WithAutoAllowed(runCtx)
		}
	}
	t.emit(Event{Kind: EventToolStarted, SessionID: t.session, Call: c})
	out, err := runTool(runCtx, tool, c.Arguments)
	if cerr := ctx.Err(); cerr != nil {
		content := CancelledResult
		if suspended(ctx) {
			content = InterruptedResult // a tool may not stop at once, or undo what it did
		}
		if out != "" {
			content += "; output so far:\n" + out
		}
		content = capResult(content)
		t.finished(c, content, cerr)
		return content, cerr
	}
	content := out
	if err != nil {
		content = "error: " + err.Error()
		if out != "" {
			content += "\n" + out
		}
	}
	content = capResult(content)
	t.finished(c, content, err)
	return content, nil
}

// approve decides whether a call that needs approval may run: the
// allowlist (auto=true), then an earlier "always" for the same subject,
// then the Approver. A call outside where the tool may act freely is let
// through only by a rule naming its subject.
func (t *turn) approve(ctx context.Context, tool Tool, c llm.ToolCall, subject string, inside bool) (d Decision, auto bool, err error) {
	allow := t.a.Allow
	if tool.Control != nil {
		if dir := tool.Control(c.Arguments); dir != "" {
			allow = rulesWithin(allow, dir)
		}
	}
	if (inside && allowed(allow, tool, subject)) || ruleMatches(allow, tool, subject) {
		return Once, true, nil
	}
	if t.a.alwaysAllowed(t.session, tool.Name, subject) {
		return Once, false, nil
	}
	if t.a.Approver == nil {
		return Deny, false, nil
	}
	req := ApprovalRequest{SessionID: t.session, Tool: tool.Name, Subject: subject, Arguments: c.Arguments, CallID: c.ID}
	t.emit(Event{Kind: EventApprovalNeeded, SessionID: t.session, Call: c, Approval: req})
	d, err = t.a.Approver.Approve(ctx, req)
	if err != nil {
		return Deny, false, err
	}
	if d == AlwaysForSession {
		t.a.rememberAlways(t.session, tool.Name, subject)
	}
	return d, false, nil
}

// runTool runs the tool, turning a panic into an error: one broken tool
// must not take the whole agent down.
func runTool(ctx context.Context, tool Tool, args json.RawMessage) (out string, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("tool %s panicked: %v\n%s", tool.Name, p, debug.Stack())
		}
	}()
	return tool.Run(ctx, args)
}

func (t *turn) toolError(c llm.ToolCall, err error) string {
	content := "error: " + err.Error()
	t.finished(c, content, err)
	return content
}

func (t *turn) finished(c llm.ToolCall, content string, err error) {
	shown, cut := displayCut(content)
	t.emit(Event{Kind: EventToolFinished, SessionID: t.session, Call: c, Output: shown, Truncated: cut, Err: err})
}

func capResult(s string) string {
	if len(s) <= maxResult {
		return s
	}
	return clip(s, maxResult) + fmt.Sprintf("\n[truncated %d bytes]", len(s)-len(clip(s, maxResult)))
}

// clip cuts s to at most n bytes without splitting a character.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
