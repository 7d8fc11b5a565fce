package agent_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/baton-agent/baton/internal/agent"
	"github.com/baton-agent/baton/internal/llm/llmtest"
	"github.com/baton-agent/baton/internal/store"
)

func writeCall(name string) llmtest.Call {
	return call("write_file", `{"path":"`+name+`","content":"x"}`)
}

func (e *env) exists(name string) bool {
	_, err := os.Stat(filepath.Join(e.dir, name))
	return err == nil
}

func TestApproveOnce(t *testing.T) {
	e := newEnv(t)
	ap := &scripted{answers: []agent.Decision{agent.Once, agent.Once}}
	e.agent.Approver = ap
	e.srv.Push(llmtest.Reply{ToolCalls: []llmtest.Call{writeCall("a.txt")}}, llmtest.Reply{Text: "done"})
	_, evs := e.mustRun(e.sid, "write a")
	e.srv.Push(llmtest.Reply{ToolCalls: []llmtest.Call{writeCall("b.txt")}}, llmtest.Reply{Text: "done"})
	e.mustRun(e.sid, "write b")

	if got := ap.subjects(); !reflect.DeepEqual(got, []string{"write_file a.txt", "write_file b.txt"}) {
		t.Errorf("asked %v", got)
	}
	if !e.exists("a.txt") || !e.exists("b.txt") {
		t.Error("approved writes did not happen")
	}
	need := evs.of(agent.EventApprovalNeeded)
	if len(need) != 1 || need[0].Approval.Subject != "a.txt" || need[0].Approval.SessionID != e.sid || need[0].Call.Name != "write_file" {
		t.Errorf("approval events = %+v", need)
	}
}

func TestApproveAlwaysForSession(t *testing.T) {
	e := newEnv(t)
	ap := &scripted{answers: []agent.Decision{agent.AlwaysForSession}}
	e.agent.Approver = ap
	e.srv.Push(llmtest.Reply{ToolCalls: []llmtest.Call{writeCall("a.txt"), writeCall("b.txt")}}, llmtest.Reply{Text: "done"})
	e.mustRun(e.sid, "write two")
	e.srv.Push(llmtest.Reply{ToolCalls: []llmtest.Call{writeCall("c.txt")}}, llmtest.Reply{Text: "done"})
	e.mustRun(e.sid, "write another")
	if got := ap.subjects(); !reflect.DeepEqual(got, []string{"write_file a.txt"}) {
		t.Errorf("asked %v", got)
	}
	if !e.exists("a.txt") || !e.exists("b.txt") || !e.exists("c.txt") {
		t.Error("writes missing")
	}
	// "Always" is for that tool only...
	e.srv.Push(llmtest.Reply{ToolCalls: []llmtest.Call{call("shell", `{"command":"true"}`)}}, llmtest.Reply{Text: "done"})
	e.mustRun(e.sid, "shell")
	// ...and that session only; the scripted approver now denies.
	other := e.newSession()
	e.srv.Push(llmtest.Reply{ToolCalls: []llmtest.Call{writeCall("d.txt")}}, llmtest.Reply{Text: "done"})
	e.mustRun(other, "write d")
	if got := ap.subjects(); !reflect.DeepEqual(got, []string{"write_file a.txt", "shell true", "write_file d.txt"}) {
		t.Errorf("asked %v", got)
	}
	if e.exists("d.txt") {
		t.Error("write in another session ran unasked")
	}
	// Forgetting the session's answers makes it ask again.
	e.agent.ForgetApprovals(e.sid)
	e.srv.Push(llmtest.Reply{ToolCalls: []llmtest.Call{writeCall("e.txt")}}, llmtest.Reply{Text: "done"})
	e.mustRun(e.sid, "write e")
	if n := len(ap.subjects()); n != 4 {
		t.Errorf("asked %d times", n)
	}
}

func TestApproveDeny(t *testing.T) {
	e := newEnv(t)
	ap := &scripted{answers: []agent.Decision{agent.Deny}}
	e.agent.Approver = ap
	e.srv.Push(
		llmtest.Reply{ToolCalls: []llmtest.Call{{ID: "c1", Name: "shell", Args: `{"command":"touch pwned"}`}}},
		llmtest.Reply{Text: "OK, I won't."},
	)
	res, evs := e.mustRun(e.sid, "touch it")
	if res.Text != "OK, I won't." {
		t.Errorf("text = %q", res.Text)
	}
	if e.exists("pwned") {
		t.Error("denied command ran")
	}
	if got := ap.subjects(); !reflect.DeepEqual(got, []string{"shell touch pwned"}) {
		t.Errorf("asked %v", got)
	}
	sameRows(t, e.transcript(e.sid), []row{
		{Role: store.RoleUser, Content: "touch it"},
		{Role: store.RoleAssistant, Calls: "shell"},
		{Role: store.RoleTool, Content: agent.DeniedResult, CallID: "c1"},
		{Role: store.RoleAssistant, Content: "OK, I won't."},
	})
	if len(evs.of(agent.EventToolStarted)) != 0 {
		t.Error("a denied tool was reported as started")
	}
}

func TestApproveAllowlist(t *testing.T) {
	e := newEnv(t)
	ap := &scripted{}
	e.agent.Approver = ap
	e.agent.Allow = []string{"shell:echo", "write_file"}
	e.srv.Push(
		llmtest.Reply{ToolCalls: []llmtest.Call{
			call("shell", `{"command":"echo hi"}`),
			writeCall("free.txt"),
			call("shell", `{"command":"echo hi; touch pwned"}`),
			call("shell", `{"command":"echoes"}`),
			call("edit_file", `{"path":"free.txt","old_string":"x","new_string":"y"}`),
		}},
		llmtest.Reply{Text: "done"},
	)
	e.mustRun(e.sid, "go")
	want := []string{"shell echo hi; touch pwned", "shell echoes", "edit_file free.txt"}
	if got := ap.subjects(); !reflect.DeepEqual(got, want) {
		t.Errorf("asked %v, want %v", got, want)
	}
	msgs := e.transcript(e.sid)
	if msgs[2].Content != "hi\n[exit code 0]" || !e.exists("free.txt") || e.exists("pwned") {
		t.Errorf("shell result %q", msgs[2].Content)
	}
}

// Without an Approver, tools that need approval are denied.
func TestNoApproverDenies(t *testing.T) {
	e := newEnv(t)
	e.srv.Push(llmtest.Reply{ToolCalls: []llmtest.Call{writeCall("a.txt")}}, llmtest.Reply{Text: "done"})
	e.mustRun(e.sid, "go")
	if msgs := e.transcript(e.sid); msgs[2].Content != agent.DeniedResult || e.exists("a.txt") {
		t.Errorf("result %q", msgs[2].Content)
	}
}

// An approver that fails ends the turn; every call still gets a result.
func TestApproverError(t *testing.T) {
	e := newEnv(t)
	broken := errors.New("terminal closed")
	e.agent.Approver = agent.ApproverFunc(func(context.Context, agent.ApprovalRequest) (agent.Decision, error) {
		return agent.Deny, broken
	})
	e.srv.Push(llmtest.Reply{ToolCalls: []llmtest.Call{writeCall("a.txt"), call("list_dir", `{}`)}})
	_, _, err := e.run(context.Background(), e.sid, "go")
	if !errors.Is(err, broken) {
		t.Fatalf("err = %v", err)
	}
	msgs := e.transcript(e.sid)
	validTranscript(t, msgs)
	if len(msgs) != 4 || msgs[3].Content != "error: not run: ask approval for write_file: terminal closed" {
		t.Errorf("rows = %+v", rows(t, msgs))
	}
}

// Cancelling while the approver waits ends the turn at once.
func TestCancelDuringApproval(t *testing.T) {
	e := newEnv(t)
	e.agent.Approver = agent.ApproverFunc(func(ctx context.Context, _ agent.ApprovalRequest) (agent.Decision, error) {
		<-ctx.Done()
		return agent.Deny, ctx.Err()
	})
	e.srv.Push(llmtest.Reply{ToolCalls: []llmtest.Call{writeCall("a.txt"), writeCall("b.txt")}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	evs := &events{on: func(ev agent.Event) {
		if ev.Kind == agent.EventApprovalNeeded {
			cancel()
		}
	}}
	_, err := e.agent.Run(ctx, e.sid, store.Message{Role: store.RoleUser, Content: "go"}, evs.emit)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
	msgs := e.transcript(e.sid)
	validTranscript(t, msgs)
	if msgs[2].Content != agent.CancelledResult || msgs[3].Content != agent.CancelledResult || e.exists("a.txt") {
		t.Errorf("rows = %+v", rows(t, msgs))
	}
}
