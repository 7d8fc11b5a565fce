package agent_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/baton-agent/baton/internal/agent"
	"github.com/baton-agent/baton/internal/llm"
	"github.com/baton-agent/baton/internal/llm/llmtest"
	"github.com/baton-agent/baton/internal/store"
)

func assistantCalls(t *testing.T, text string, calls ...llm.ToolCall) store.Message {
	t.Helper()
	raw, err := agent.EncodeToolCalls(calls)
	if err != nil {
		t.Fatal(err)
	}
	return store.Message{Role: store.RoleAssistant, Content: text, ToolCalls: raw}
}

func result(id, name, content string) store.Message {
	return store.Message{Role: store.RoleTool, ToolCallID: id, ToolName: name, Content: content}
}

// seed stores three turns with tool calls in the first and the last.
func seed(t *testing.T, e *env, sid string) []store.Message {
	t.Helper()
	msgs := []store.Message{
		{Role: store.RoleUser, Content: "u1"},
		assistantCalls(t, "", llm.ToolCall{ID: "c1", Name: "read_file", Arguments: []byte(`{"path":"big.log"}`)}),
		result("c1", "read_file", strings.Repeat("log line\n", 1000)),
		{Role: store.RoleAssistant, Content: "a1"},
		{Role: store.RoleUser, Content: "u2"},
		{Role: store.RoleAssistant, Content: "a2"},
		{Role: store.RoleUser, Content: "u3"},
		assistantCalls(t, "checking", llm.ToolCall{ID: "c3", Name: "list_dir", Arguments: []byte(`{}`)}),
		result("c3", "list_dir", "[empty directory]"),
		{Role: store.RoleAssistant, Content: "a3"},
	}
	stored, err := e.st.AppendMessages(context.Background(), sid, msgs...)
	if err != nil {
		t.Fatal(err)
	}
	return stored
}

func TestCompress(t *testing.T) {
	e := newEnv(t)
	seed(t, e, e.sid)
	e.srv.Push(llmtest.Reply{Text: "SUMMARY: read big.log", Usage: llmtest.Usage{Input: 100, Output: 7}})
	before, after, err := e.agent.Compress(context.Background(), e.sid)
	if err != nil {
		t.Fatal(err)
	}
	if before <= after || after <= 0 {
		t.Errorf("before %d after %d", before, after)
	}
	msgs := e.transcript(e.sid)
	if !agent.IsSummary(msgs[0]) || msgs[0].Content != agent.SummaryLead+"SUMMARY: read big.log" {
		t.Errorf("first row = %q", msgs[0].Content)
	}
	sameRows(t, msgs[1:], []row{
		{Role: store.RoleUser, Content: "u2"},
		{Role: store.RoleAssistant, Content: "a2"},
		{Role: store.RoleUser, Content: "u3"},
		{Role: store.RoleAssistant, Content: "checking", Calls: "list_dir"},
		{Role: store.RoleTool, Content: "[empty directory]", CallID: "c3"},
		{Role: store.RoleAssistant, Content: "a3"},
	})
	validTranscript(t, msgs)

	hist, err := e.st.History(context.Background(), e.sid)
	if err != nil {
		t.Fatal(err)
	}
	superseded := 0
	for _, m := range hist {
		if m.Superseded {
			superseded++
		}
	}
	if len(hist) != 17 || superseded != 10 {
		t.Errorf("history has %d rows, %d superseded", len(hist), superseded)
	}

	reqs := e.srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests", len(reqs))
	}
	// (The OpenAI provider sends an empty list for no tools.)
	if tl, _ := reqs[0].Body["tools"].([]any); len(tl) != 0 {
		t.Errorf("the summary request offered tools: %v", tl)
	}
	prompt := reqs[0].LastUserText()
	for _, want := range []string{"[user]\nu1", "[assistant called read_file with {\"path\":\"big.log\"}]", "[result of read_file]\nlog line", "bytes omitted]", "[assistant]\na1", "Summarize the conversation above"} {
		if !strings.Contains(prompt, want) {
			t.Errorf("summary prompt lacks %q", want)
		}
	}
	if strings.Contains(prompt, "u2") {
		t.Error("kept turns were sent for summary")
	}
	if sess, _ := e.st.GetSession(context.Background(), e.sid); sess.InputTokens != 100 {
		t.Errorf("summary usage not recorded: %d", sess.InputTokens)
	}

	// Compressing again summarizes the summary with the next older turn.
	e.srv.Push(llmtest.Reply{Text: "S2"})
	if _, _, err := e.agent.Compress(context.Background(), e.sid); err != nil {
		t.Fatal(err)
	}
	msgs = e.transcript(e.sid)
	if msgs[0].Content != agent.SummaryLead+"S2" || msgs[1].Content != "u3" || len(msgs) != 5 {
		t.Errorf("second compression: %+v", rows(t, msgs))
	}
	if !strings.Contains(e.srv.Requests()[1].LastUserText(), "SUMMARY: read big.log") {
		t.Error("the earlier summary was not carried into the new one")
	}
}

func TestCompressSingleLongTurn(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	_, err := e.st.AppendMessages(ctx, e.sid,
		store.Message{Role: store.RoleUser, Content: "do it all"},
		assistantCalls(t, "", llm.ToolCall{ID: "c1", Name: "list_dir", Arguments: []byte(`{}`)}),
		result("c1", "list_dir", "x"),
		assistantCalls(t, "", llm.ToolCall{ID: "c2", Name: "list_dir", Arguments: []byte(`{}`)}, llm.ToolCall{ID: "c3", Name: "list_dir", Arguments: []byte(`{}`)}),
		result("c2", "list_dir", "y"),
		result("c3", "list_dir", "z"),
	)
	if err != nil {
		t.Fatal(err)
	}
	e.srv.Push(llmtest.Reply{Text: "S"})
	if _, _, err := e.agent.Compress(ctx, e.sid); err != nil {
		t.Fatal(err)
	}
	// The split falls before the last call, which keeps both its results.
	sameRows(t, e.transcript(e.sid), []row{
		{Role: store.RoleUser, Kind: store.KindSummary, Content: agent.SummaryLead + "S"},
		{Role: store.RoleAssistant, Calls: "list_dir,list_dir"},
		{Role: store.RoleTool, Content: "y", CallID: "c2"},
		{Role: store.RoleTool, Content: "z", CallID: "c3"},
	})
}

func TestCompressNothing(t *testing.T) {
	e := newEnv(t)
	e.mustRun(e.sid, "only turn")
	e.agent.KeepTurns = 1
	_, _, err := e.agent.Compress(context.Background(), e.sid)
	if !errors.Is(err, agent.ErrNothingToCompress) {
		t.Errorf("err = %v", err)
	}
	if len(e.srv.Requests()) != 1 {
		t.Error("a model call was made for nothing")
	}
}

func TestCompressFailureKeepsTranscript(t *testing.T) {
	e := newEnv(t)
	seed(t, e, e.sid)
	e.srv.Push(llmtest.Fail{Status: 429})
	if _, _, err := e.agent.Compress(context.Background(), e.sid); !errors.Is(err, llm.ErrRateLimited) {
		t.Errorf("err = %v", err)
	}
	if n := len(e.transcript(e.sid)); n != 10 {
		t.Errorf("transcript has %d rows", n)
	}
}

func TestAutoCompressInRun(t *testing.T) {
	e := newEnv(t)
	e.agent.ContextWindow = 2000 // the seeded log alone is over 75% of it
	seed(t, e, e.sid)
	e.srv.Push(llmtest.Reply{Text: "SUMMARY"}, llmtest.Reply{Text: "answer"})
	res, evs := e.mustRun(e.sid, "u4")
	if res.Text != "answer" {
		t.Errorf("text = %q", res.Text)
	}
	if c := evs.of(agent.EventCompressed); len(c) != 1 || c[0].Before <= c[0].After {
		t.Errorf("compressed events = %+v", c)
	}
	reqs := e.srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests", len(reqs))
	}
	sameJSON(t, "turn request", reqs[1].Body["messages"], `[
		{"role":"system","content":"You are baton."},
		{"role":"user","content":`+jsonString(agent.SummaryLead+"SUMMARY")+`},
		{"role":"user","content":"u3"},
		{"role":"assistant","content":"checking","tool_calls":[{"id":"c3","type":"function","function":{"name":"list_dir","arguments":"{}"}}]},
		{"role":"tool","tool_call_id":"c3","content":"[empty directory]"},
		{"role":"assistant","content":"a3"},
		{"role":"user","content":"u4"}]`)
	msgs := e.transcript(e.sid)
	if last := msgs[len(msgs)-1]; last.Content != "answer" || len(msgs) != 7 {
		t.Errorf("transcript = %+v", rows(t, msgs))
	}

	// Under the threshold, no compression.
	e.mustRun(e.sid, "u5")
	if len(e.srv.Requests()) != 3 {
		t.Errorf("compressed again: %d requests", len(e.srv.Requests()))
	}
}

func jsonString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '\n':
			b.WriteString(`\n`)
		case '"':
			b.WriteString(`\"`)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}
