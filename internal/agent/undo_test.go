package agent_test

import (
	"context"
	"errors"
	"testing"

	"github.com/baton-agent/baton/internal/agent"
	"github.com/baton-agent/baton/internal/llm/llmtest"
	"github.com/baton-agent/baton/internal/store"
)

func TestUndo(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	if _, err := e.agent.Undo(ctx, e.sid); !errors.Is(err, agent.ErrNothingToUndo) {
		t.Errorf("undo on empty: %v", err)
	}
	e.mustRun(e.sid, "first")
	e.srv.Push(llmtest.Reply{ToolCalls: []llmtest.Call{call("list_dir", `{}`)}}, llmtest.Reply{Text: "empty"})
	e.mustRun(e.sid, "second")

	removed, err := e.agent.Undo(ctx, e.sid)
	if err != nil {
		t.Fatal(err)
	}
	sameRows(t, removed, []row{
		{Role: store.RoleUser, Content: "second"},
		{Role: store.RoleAssistant, Calls: "list_dir"},
		{Role: store.RoleTool, Content: "[empty directory]", CallID: removed[2].ToolCallID},
		{Role: store.RoleAssistant, Content: "empty"},
	})
	sameRows(t, e.transcript(e.sid), []row{
		{Role: store.RoleUser, Content: "first"},
		{Role: store.RoleAssistant, Content: "echo: first"},
	})
	hist, _ := e.st.History(ctx, e.sid)
	if len(hist) != 8 { // 6 original rows + the 2 kept, rewritten
		t.Errorf("history has %d rows", len(hist))
	}
	if _, err := e.agent.Undo(ctx, e.sid); err != nil {
		t.Fatal(err)
	}
	if n := len(e.transcript(e.sid)); n != 0 {
		t.Errorf("%d rows left", n)
	}
}

// A compression summary is not a turn to undo.
func TestUndoStopsAtSummary(t *testing.T) {
	e := newEnv(t)
	if _, err := e.st.AppendMessages(context.Background(), e.sid,
		store.Message{Role: store.RoleUser, Kind: store.KindSummary, Content: agent.SummaryLead + "S"},
		store.Message{Role: store.RoleAssistant, Content: "a"}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.agent.Undo(context.Background(), e.sid); !errors.Is(err, agent.ErrNothingToUndo) {
		t.Errorf("err = %v", err)
	}
}

func TestRetry(t *testing.T) {
	e := newEnv(t)
	e.mustRun(e.sid, "first")
	e.srv.Push(llmtest.Reply{ToolCalls: []llmtest.Call{call("list_dir", `{}`)}}, llmtest.Reply{Text: "bad answer"})
	e.mustRun(e.sid, "second")

	e.srv.Push(llmtest.Reply{Text: "better answer"})
	evs := &events{}
	res, err := e.agent.Retry(context.Background(), e.sid, evs.emit)
	if err != nil {
		t.Fatal(err)
	}
	if res.Text != "better answer" || evs.text() != "better answer" {
		t.Errorf("result %q, streamed %q", res.Text, evs.text())
	}
	msgs := e.transcript(e.sid)
	sameRows(t, msgs, []row{
		{Role: store.RoleUser, Content: "first"},
		{Role: store.RoleAssistant, Content: "echo: first"},
		{Role: store.RoleUser, Content: "second"},
		{Role: store.RoleAssistant, Content: "better answer"},
	})
	if msgs[3].Platform != "cli" {
		t.Errorf("retried answer platform = %q", msgs[3].Platform)
	}
	reqs := e.srv.Requests()
	sameJSON(t, "retried request", reqs[len(reqs)-1].Body["messages"], `[
		{"role":"system","content":"You are baton."},
		{"role":"user","content":"first"},
		{"role":"assistant","content":"echo: first"},
		{"role":"user","content":"second"}]`)
}

// Retry after a failed turn (nothing after the user message) just runs.
func TestRetryAfterError(t *testing.T) {
	e := newEnv(t)
	e.srv.Push(llmtest.Fail{Status: 503})
	if _, _, err := e.run(context.Background(), e.sid, "hello"); err == nil {
		t.Fatal("no error")
	}
	res, err := e.agent.Retry(context.Background(), e.sid, nil)
	if err != nil || res.Text != "echo: hello" {
		t.Fatalf("retry: %+v, %v", res, err)
	}
	if n := len(e.transcript(e.sid)); n != 2 {
		t.Errorf("%d rows", n)
	}
}
