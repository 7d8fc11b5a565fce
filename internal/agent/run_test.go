package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/agent"
	"github.com/baton-agent/baton/internal/llm"
	"github.com/baton-agent/baton/internal/llm/llmtest"
	"github.com/baton-agent/baton/internal/store"
)

func TestPlainTextTurn(t *testing.T) {
	e := newEnv(t)
	e.srv.Push(llmtest.Reply{Text: "Hello there, friend.", Usage: llmtest.Usage{Input: 12, Output: 5}})
	res, evs := e.mustRun(e.sid, "hi")

	if res.Text != "Hello there, friend." || res.Steps != 1 || res.Usage != (llm.Usage{InputTokens: 12, OutputTokens: 5}) {
		t.Errorf("result = %+v", res)
	}
	deltas := evs.of(agent.EventTextDelta)
	if len(deltas) != 3 || evs.text() != "Hello there, friend." {
		t.Errorf("deltas = %d, text %q", len(deltas), evs.text())
	}
	if k := evs.kinds(); k[len(k)-1] != agent.EventDone {
		t.Errorf("last event = %v", k[len(k)-1])
	}
	if done := evs.of(agent.EventDone); done[0].Text != res.Text || done[0].Usage != res.Usage {
		t.Errorf("done = %+v", done[0])
	}

	msgs := e.transcript(e.sid)
	sameRows(t, msgs, []row{{Role: store.RoleUser, Content: "hi"}, {Role: store.RoleAssistant, Content: "Hello there, friend."}})
	for _, m := range msgs {
		if m.Platform != "cli" {
			t.Errorf("%s row platform = %q", m.Role, m.Platform)
		}
	}

	reqs := e.srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests", len(reqs))
	}
	if reqs[0].Model() != "test-model" || !reqs[0].Streamed() {
		t.Errorf("model %q streamed %v", reqs[0].Model(), reqs[0].Streamed())
	}
	sameJSON(t, "messages", reqs[0].Body["messages"], `[
		{"role":"system","content":"You are baton."},
		{"role":"user","content":"hi"}]`)
	var names []string
	for _, tl := range reqs[0].Body["tools"].([]any) {
		names = append(names, tl.(map[string]any)["function"].(map[string]any)["name"].(string))
	}
	if got := strings.Join(names, ","); got != "shell,read_file,list_dir,write_file,edit_file,send_file" {
		t.Errorf("tools sent = %s", got)
	}

	sess, err := e.st.GetSession(context.Background(), e.sid)
	if err != nil || sess.InputTokens != 12 || sess.OutputTokens != 5 {
		t.Errorf("session usage = %d/%d, %v", sess.InputTokens, sess.OutputTokens, err)
	}
}

// The session's own model (set by /model) wins over the Agent's.
func TestSessionModel(t *testing.T) {
	e := newEnv(t)
	if err := e.st.SetModel(context.Background(), e.sid, "other-model"); err != nil {
		t.Fatal(err)
	}
	e.mustRun(e.sid, "hi")
	if m := e.srv.Requests()[0].Model(); m != "other-model" {
		t.Errorf("model = %q", m)
	}
}

func TestToolRoundTrip(t *testing.T) {
	e := newEnv(t)
	if err := os.WriteFile(filepath.Join(e.dir, "notes.txt"), []byte("hello from file\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e.srv.Push(
		llmtest.Reply{Text: "Let me look.", ToolCalls: []llmtest.Call{{ID: "call_a", Name: "read_file", Args: `{"path":"notes.txt"}`}}},
		llmtest.Reply{Text: "It says hello."},
	)
	res, evs := e.mustRun(e.sid, "what is in notes.txt?")
	if res.Text != "It says hello." || res.Steps != 2 {
		t.Errorf("result = %+v", res)
	}

	msgs := e.transcript(e.sid)
	sameRows(t, msgs, []row{
		{Role: store.RoleUser, Content: "what is in notes.txt?"},
		{Role: store.RoleAssistant, Content: "Let me look.", Calls: "read_file"},
		{Role: store.RoleTool, Content: "hello from file\n", CallID: "call_a"},
		{Role: store.RoleAssistant, Content: "It says hello."},
	})
	// The stored shape of tool calls is part of the store's contract.
	var stored any
	if err := json.Unmarshal(msgs[1].ToolCalls, &stored); err != nil {
		t.Fatal(err)
	}
	sameJSON(t, "stored tool calls", stored, `[{"id":"call_a","name":"read_file","arguments":{"path":"notes.txt"}}]`)
	if msgs[2].ToolName != "read_file" {
		t.Errorf("tool name = %q", msgs[2].ToolName)
	}

	reqs := e.srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests", len(reqs))
	}
	sameJSON(t, "second request", reqs[1].Body["messages"], `[
		{"role":"system","content":"You are baton."},
		{"role":"user","content":"what is in notes.txt?"},
		{"role":"assistant","content":"Let me look.","tool_calls":[
			{"id":"call_a","type":"function","function":{"name":"read_file","arguments":"{\"path\":\"notes.txt\"}"}}]},
		{"role":"tool","tool_call_id":"call_a","content":"hello from file\n"}]`)

	want := []agent.EventKind{agent.EventTextDelta, agent.EventTextDelta, agent.EventTextDelta, agent.EventToolStarted, agent.EventToolFinished,
		agent.EventTextDelta, agent.EventTextDelta, agent.EventTextDelta, agent.EventDone}
	if got := evs.kinds(); !reflect.DeepEqual(got, want) {
		t.Errorf("events = %v", got)
	}
	if fin := evs.of(agent.EventToolFinished)[0]; fin.Output != "hello from file\n" || fin.Err != nil || fin.Call.Name != "read_file" {
		t.Errorf("finished = %+v", fin)
	}
}

// Tool failures and bad calls go back to the model as results.
func TestToolErrorsAreResults(t *testing.T) {
	e := newEnv(t)
	e.srv.Push(
		llmtest.Reply{ToolCalls: []llmtest.Call{
			call("read_file", `{"path":"missing.txt"}`),
			call("read_file", `{"path": "x"`),
			call("no_such_tool", `{}`),
			call("list_dir", `{"dir":"."}`),
		}},
		llmtest.Reply{Text: "sorry"},
	)
	res, _ := e.mustRun(e.sid, "go")
	if res.Text != "sorry" {
		t.Errorf("text = %q", res.Text)
	}
	msgs := e.transcript(e.sid)
	validTranscript(t, msgs)
	wants := []string{
		"error: open " + filepath.Join(e.dir, "missing.txt") + ": no such file or directory",
		`error: arguments are not valid JSON: {"path": "x"`,
		`error: unknown tool "no_such_tool"`,
		`error: invalid arguments for list_dir: json: unknown field "dir"`,
	}
	for i, w := range wants {
		if got := msgs[2+i].Content; got != w {
			t.Errorf("result %d = %q, want %q", i, got, w)
		}
	}
}

func TestMaxSteps(t *testing.T) {
	e := newEnv(t)
	e.agent.MaxSteps = 2
	e.srv.Push(
		llmtest.Reply{ToolCalls: []llmtest.Call{call("list_dir", `{}`)}},
		llmtest.Reply{ToolCalls: []llmtest.Call{call("list_dir", `{}`)}},
	)
	res, evs, err := e.run(context.Background(), e.sid, "loop")
	if !errors.Is(err, agent.ErrMaxSteps) {
		t.Fatalf("err = %v", err)
	}
	if res.Steps != 2 || len(e.srv.Requests()) != 2 {
		t.Errorf("steps %d, requests %d", res.Steps, len(e.srv.Requests()))
	}
	msgs := e.transcript(e.sid)
	validTranscript(t, msgs)
	last := msgs[len(msgs)-1]
	if last.Role != store.RoleAssistant || !strings.HasPrefix(last.Content, "[stopped: 2 model calls") {
		t.Errorf("last row = %s %q", last.Role, last.Content)
	}
	if errs := evs.of(agent.EventError); len(errs) != 1 || !errors.Is(errs[0].Err, agent.ErrMaxSteps) {
		t.Errorf("error events = %+v", errs)
	}
}

func TestProviderErrorKeepsTranscript(t *testing.T) {
	e := newEnv(t)
	e.mustRun(e.sid, "first") // default reply: "echo: first"
	e.srv.Push(
		llmtest.Reply{ToolCalls: []llmtest.Call{{ID: "c1", Name: "list_dir", Args: `{}`}}},
		llmtest.Fail{Status: 500},
	)
	_, evs, err := e.run(context.Background(), e.sid, "second")
	var apiErr *llm.APIError
	if !errors.As(err, &apiErr) || apiErr.Status != 500 || !errors.Is(err, llm.ErrServer) {
		t.Fatalf("err = %v", err)
	}
	if !strings.Contains(err.Error(), "run turn in session "+e.sid) || !strings.Contains(err.Error(), "model call failed") {
		t.Errorf("message = %q", err)
	}
	if len(evs.of(agent.EventError)) != 1 || len(evs.of(agent.EventDone)) != 0 {
		t.Errorf("events = %v", evs.kinds())
	}
	sameRows(t, e.transcript(e.sid), []row{
		{Role: store.RoleUser, Content: "first"},
		{Role: store.RoleAssistant, Content: "echo: first"},
		{Role: store.RoleUser, Content: "second"},
		{Role: store.RoleAssistant, Calls: "list_dir"},
		{Role: store.RoleTool, Content: "[empty directory]", CallID: "c1"},
	})

	// Running again with no new input picks up where it failed.
	e.srv.Push(llmtest.Reply{Text: "recovered"})
	res, err := e.agent.Run(context.Background(), e.sid, store.Message{}, nil)
	if err != nil || res.Text != "recovered" {
		t.Fatalf("continue: %+v, %v", res, err)
	}
	reqs := e.srv.Requests()
	if n := len(reqs[len(reqs)-1].Messages()); n != 6 {
		t.Errorf("continue sent %d messages, want 6", n)
	}
}

// A stream that breaks off after some text keeps that text, marked.
func TestBrokenStreamKeepsPartialText(t *testing.T) {
	e := newEnv(t)
	e.srv.Push(llmtest.Disconnect{Text: "half an answer that never ends", After: 2})
	_, evs, err := e.run(context.Background(), e.sid, "hi")
	if !errors.Is(err, llm.ErrStream) {
		t.Fatalf("err = %v", err)
	}
	if evs.text() != "half an " {
		t.Errorf("streamed %q", evs.text())
	}
	sameRows(t, e.transcript(e.sid), []row{
		{Role: store.RoleUser, Content: "hi"},
		{Role: store.RoleAssistant, Content: "half an " + agent.InterruptedMarker},
	})
}

func TestCancelDuringStream(t *testing.T) {
	e := newEnv(t)
	e.srv.Push(llmtest.Reply{Text: "one two three four five six seven eight", Delay: 40 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	evs := &events{}
	evs.on = func(ev agent.Event) {
		if ev.Kind == agent.EventTextDelta && strings.Contains(ev.Text, "two") {
			cancel()
		}
	}
	start := time.Now()
	res, err := e.agent.Run(ctx, e.sid, store.Message{Role: store.RoleUser, Content: "count"}, evs.emit)
	if !errors.Is(err, context.Canceled) || !res.Interrupted {
		t.Fatalf("err = %v, result %+v", err, res)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("cancel took %s", d)
	}
	shown := evs.text()
	if !strings.HasPrefix(shown, "one two") || strings.Contains(shown, "eight") {
		t.Errorf("streamed %q", shown)
	}
	sameRows(t, e.transcript(e.sid), []row{
		{Role: store.RoleUser, Content: "count"},
		{Role: store.RoleAssistant, Content: strings.TrimSpace(shown) + " " + agent.InterruptedMarker},
	})

	// The session carries on with the partial answer in context.
	e.srv.Push(llmtest.Reply{Text: "ok"})
	e.mustRun(e.sid, "go on")
	reqs := e.srv.Requests()
	sameJSON(t, "next request", reqs[len(reqs)-1].Body["messages"], `[
		{"role":"system","content":"You are baton."},
		{"role":"user","content":"count"},
		{"role":"assistant","content":"`+strings.TrimSpace(shown)+` [interrupted]"},
		{"role":"user","content":"go on"}]`)
}

func TestCancelDuringShell(t *testing.T) {
	e := newEnv(t)
	e.agent.Allow = []string{"shell"}
	e.srv.Push(llmtest.Reply{ToolCalls: []llmtest.Call{
		{ID: "c1", Name: "shell", Args: `{"command":"echo begun; sleep 30"}`},
		{ID: "c2", Name: "list_dir", Args: `{}`},
	}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	evs := &events{}
	evs.on = func(ev agent.Event) {
		if ev.Kind == agent.EventToolStarted {
			time.AfterFunc(200*time.Millisecond, cancel)
		}
	}
	start := time.Now()
	res, err := e.agent.Run(ctx, e.sid, store.Message{Role: store.RoleUser, Content: "wait"}, evs.emit)
	if !errors.Is(err, context.Canceled) || !res.Interrupted {
		t.Fatalf("err = %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("cancel took %s", d)
	}
	msgs := e.transcript(e.sid)
	validTranscript(t, msgs)
	sameRows(t, msgs, []row{
		{Role: store.RoleUser, Content: "wait"},
		{Role: store.RoleAssistant, Calls: "shell,list_dir"},
		{Role: store.RoleTool, Content: agent.CancelledResult + "; output so far:\nbegun\n", CallID: "c1"},
		{Role: store.RoleTool, Content: agent.CancelledResult, CallID: "c2"},
	})
	if fin := evs.of(agent.EventToolFinished); len(fin) != 1 || !errors.Is(fin[0].Err, context.Canceled) {
		t.Errorf("finished events = %+v", fin)
	}

	e.srv.Push(llmtest.Reply{Text: "fine"})
	if res, _ := e.mustRun(e.sid, "never mind"); res.Text != "fine" {
		t.Errorf("next turn: %q", res.Text)
	}
}

func TestBusySession(t *testing.T) {
	e := newEnv(t)
	e.srv.Push(llmtest.Reply{Text: "slow slow slow slow", Delay: 50 * time.Millisecond})
	started := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		var once bool
		_, err := e.agent.Run(context.Background(), e.sid, store.Message{Role: store.RoleUser, Content: "a"}, func(ev agent.Event) {
			if ev.Kind == agent.EventTextDelta && !once {
				once = true
				close(started)
			}
		})
		done <- err
	}()
	<-started
	if _, _, err := e.run(context.Background(), e.sid, "b"); !errors.Is(err, agent.ErrBusy) {
		t.Errorf("concurrent run: %v", err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// Another session is not blocked by this one.
	e.mustRun(e.newSession(), "c")
}
