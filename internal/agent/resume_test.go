package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/agent"
	"github.com/baton-agent/baton/internal/llm"
	"github.com/baton-agent/baton/internal/llm/anthropic"
	"github.com/baton-agent/baton/internal/llm/llmtest"
	"github.com/baton-agent/baton/internal/retry"
	"github.com/baton-agent/baton/internal/store"
	"github.com/baton-agent/baton/internal/store/sqlite"
	"github.com/baton-agent/baton/internal/testutil"
)

func (e *env) draft(sid string) string {
	e.t.Helper()
	d, err := e.st.Draft(context.Background(), sid)
	if err != nil {
		e.t.Fatal(err)
	}
	return d
}

// lastRequestMessage is the last message of the latest model request.
func (e *env) lastRequestMessage() map[string]any {
	e.t.Helper()
	reqs := e.srv.Requests()
	msgs := reqs[len(reqs)-1].Messages()
	m, _ := msgs[len(msgs)-1].(map[string]any)
	return m
}

// speakAnthropic has the agent reach the fake model as Anthropic, whose
// models go on from a trailing assistant message (prefill).
func (e *env) speakAnthropic() {
	e.t.Helper()
	p, err := anthropic.New(anthropic.Config{BaseURL: e.srv.URL, APIKey: "test-key", Model: "test-model"})
	if err != nil {
		e.t.Fatal(err)
	}
	e.agent.Provider = p
}

// suspendMidAnswer runs a turn whose answer is cut by a stop after its
// second word and returns the part kept as the draft.
func (e *env) suspendMidAnswer(text string) string {
	e.t.Helper()
	e.srv.Push(llmtest.Reply{Text: text, Delay: 20 * time.Millisecond})
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	evs := &events{}
	evs.on = func(ev agent.Event) {
		if ev.Kind == agent.EventTextDelta && strings.Contains(ev.Text, "two") {
			cancel(agent.ErrSuspended)
		}
	}
	if _, err := e.agent.Run(ctx, e.sid, store.Message{Role: store.RoleUser, Content: "count"}, evs.emit); !errors.Is(err, context.Canceled) {
		e.t.Fatalf("the cut turn: err = %v", err)
	}
	kept := e.draft(e.sid)
	if !strings.HasPrefix(kept, "one two") {
		e.t.Fatalf("kept %q", kept)
	}
	return kept
}

// Where the model cannot go on from its own words (OpenAI-style chat
// completions answer a trailing assistant message anew), the kept part
// is not sent as the start of the answer: the answer is written again
// and replaces it. The transcript holds the new answer alone, never the
// kept part followed by a whole second answer.
func TestSuspendedAnswerIsWrittenAnewWhereTheModelCannotContinue(t *testing.T) {
	e := newEnv(t)
	e.agent.DraftEvery = 10 * time.Millisecond
	e.suspendMidAnswer("one two three four five six")

	fresh := "One, two, three, four, five and six."
	e.srv.Push(llmtest.Reply{Text: fresh})
	resumed := &events{}
	res, err := e.agent.Run(context.Background(), e.sid, store.Message{}, resumed.emit)
	if err != nil {
		t.Fatal(err)
	}
	if res.Text != fresh || resumed.text() != fresh {
		t.Errorf("answer %q, shown %q; want the new answer alone, %q", res.Text, resumed.text(), fresh)
	}
	sameRows(t, e.transcript(e.sid), []row{{Role: store.RoleUser, Content: "count"}, {Role: store.RoleAssistant, Content: fresh}})
	reqs := e.srv.Requests()
	if role, text := reqs[len(reqs)-1].LastMessage(); role != "user" || text != "count" {
		t.Errorf("the model was sent the kept part to continue: last message %s %q", role, text)
	}
	if strings.Contains(string(reqs[len(reqs)-1].Raw), "cut off") {
		t.Errorf("the model was told to continue an answer it is not sent")
	}
	if d := e.draft(e.sid); d != "" {
		t.Errorf("draft %q left after the answer", d)
	}
}

// Written anew, the answer replaces the kept part from its first words:
// a second stop keeps what the new answer wrote, not the old part.
func TestAnswerWrittenAnewReplacesTheKeptPart(t *testing.T) {
	e := newEnv(t)
	e.agent.DraftEvery = 10 * time.Millisecond
	e.suspendMidAnswer("one two three four five six")

	e.srv.Push(llmtest.Reply{Text: "Uno dos tres cuatro cinco", Delay: 20 * time.Millisecond})
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	evs := &events{}
	evs.on = func(ev agent.Event) {
		if ev.Kind != agent.EventTextDelta || !strings.Contains(ev.Text, "tres") {
			return
		}
		testutil.Eventually(t, 0, func() bool { return strings.HasPrefix(e.draft(e.sid), "Uno dos") }, "the new answer kept")
		cancel(agent.ErrSuspended)
	}
	if _, err := e.agent.Run(ctx, e.sid, store.Message{}, evs.emit); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
	if d := e.draft(e.sid); !strings.HasPrefix(d, "Uno dos") || strings.Contains(d, "one") {
		t.Errorf("kept %q; want the new answer's start alone", d)
	}
	// A model call that fails before writing a word keeps the old part,
	// ended as cut off: nothing is lost.
	e.srv.Push(llmtest.Fail{Status: 400})
	if _, err := e.agent.Run(context.Background(), e.sid, store.Message{}, nil); err == nil {
		t.Fatal("the failed call did not fail the turn")
	}
	msgs := e.transcript(e.sid)
	if last := msgs[len(msgs)-1]; last.Role != store.RoleAssistant || !strings.HasPrefix(last.Content, "Uno dos") || !strings.HasSuffix(last.Content, agent.InterruptedMarker) {
		t.Errorf("after the failure the transcript ends with %+v", last)
	}
}

// The answer being written is in the store while it streams, so a crash
// keeps it; storing the whole answer clears it.
func TestAnswerIsKeptWhileWritten(t *testing.T) {
	e := newEnv(t)
	e.agent.DraftEvery = 10 * time.Millisecond
	e.srv.Push(llmtest.Reply{Text: "one two three four five six seven eight", Delay: 40 * time.Millisecond})
	seen := make(chan string, 1)
	evs := &events{}
	evs.on = func(ev agent.Event) {
		if ev.Kind != agent.EventTextDelta || !strings.Contains(ev.Text, "six") {
			return
		}
		// Mid-stream: what the store holds now is what a crash would leave.
		var kept string
		testutil.Eventually(t, 0, func() bool { kept = e.draft(e.sid); return strings.HasPrefix(kept, "one two") }, "the answer kept")
		seen <- kept
	}
	res, err := e.agent.Run(context.Background(), e.sid, store.Message{Role: store.RoleUser, Content: "count"}, evs.emit)
	if err != nil {
		t.Fatal(err)
	}
	kept := testutil.Receive(t, seen, "the answer kept mid-stream")
	if !strings.HasPrefix(res.Text, kept) || kept == res.Text {
		t.Errorf("kept %q mid-stream of %q", kept, res.Text)
	}
	if d := e.draft(e.sid); d != "" {
		t.Errorf("the stored answer left the draft %q", d)
	}
}

// A turn suspended mid-answer keeps what was written as the draft, not as
// an answer; the next Run continues it, and the transcript holds the
// answer once, whole.
func TestSuspendedAnswerIsContinued(t *testing.T) {
	e := newEnv(t)
	e.speakAnthropic()
	e.srv.Push(llmtest.Reply{Text: "one two three four five six seven eight", Delay: 40 * time.Millisecond})
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	evs := &events{}
	evs.on = func(ev agent.Event) {
		if ev.Kind == agent.EventTextDelta && strings.Contains(ev.Text, "two") {
			cancel(agent.ErrSuspended)
		}
	}
	_, err := e.agent.Run(ctx, e.sid, store.Message{Role: store.RoleUser, Content: "count"}, evs.emit)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
	kept := e.draft(e.sid)
	if !strings.HasPrefix(kept, "one two") || kept != evs.text() {
		t.Fatalf("kept %q; streamed %q", kept, evs.text())
	}
	sameRows(t, e.transcript(e.sid), []row{{Role: store.RoleUser, Content: "count"}})

	e.srv.Push(llmtest.Reply{Text: " nine."})
	resumed := &events{}
	res, err := e.agent.Run(context.Background(), e.sid, store.Message{}, resumed.emit)
	if err != nil {
		t.Fatal(err)
	}
	whole := strings.TrimRight(kept, " ") + " nine."
	if res.Text != whole || resumed.text() != kept+" nine." {
		t.Errorf("answer %q, shown %q; want %q", res.Text, resumed.text(), whole)
	}
	sameRows(t, e.transcript(e.sid), []row{{Role: store.RoleUser, Content: "count"}, {Role: store.RoleAssistant, Content: whole}})
	if role, text := e.srv.Requests()[len(e.srv.Requests())-1].LastMessage(); role != "assistant" || text != strings.TrimRight(kept, " ") {
		t.Errorf("the model was not asked to continue: last message %s %q", role, text)
	}
	reqs := e.srv.Requests()
	if !strings.Contains(string(reqs[len(reqs)-1].Raw), "cut off") {
		t.Errorf("the model was not told to continue the cut-off answer")
	}
	if d := e.draft(e.sid); d != "" {
		t.Errorf("draft %q left after the answer", d)
	}
}

// While a continuation streams, the draft a crash would leave is the
// answer as it will be stored: the kept part and the continuation joined
// once, not with the kept part's trailing space doubled (the model was
// sent it without), so the next start continues exactly what was written.
func TestContinuationDraftJoinsOnce(t *testing.T) {
	e := newEnv(t)
	e.speakAnthropic()
	e.agent.DraftEvery = 10 * time.Millisecond
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	evs := &events{}
	evs.on = func(ev agent.Event) {
		if ev.Kind == agent.EventTextDelta && strings.Contains(ev.Text, "two") {
			cancel(agent.ErrSuspended)
		}
	}
	e.srv.Push(llmtest.Reply{Text: "one two three four", Delay: 20 * time.Millisecond})
	if _, err := e.agent.Run(ctx, e.sid, store.Message{Role: store.RoleUser, Content: "count"}, evs.emit); !errors.Is(err, context.Canceled) {
		t.Fatalf("first call: err = %v", err)
	}
	kept := e.draft(e.sid)
	if !strings.HasSuffix(kept, " ") {
		t.Fatalf("the kept part %q does not end in the space this test is about", kept)
	}
	// The continuation: what the store holds mid-stream is what a kill
	// would leave for the next start.
	e.srv.Push(llmtest.Reply{Text: " five six seven eight", Delay: 20 * time.Millisecond})
	midStream := make(chan string, 1)
	resumed := &events{}
	resumed.on = func(ev agent.Event) {
		if ev.Kind == agent.EventTextDelta && strings.Contains(ev.Text, "six") {
			var d string
			testutil.Eventually(t, 0, func() bool { d = e.draft(e.sid); return strings.Contains(d, "six") }, "the draft to reach six")
			midStream <- d
		}
	}
	res, err := e.agent.Run(context.Background(), e.sid, store.Message{}, resumed.emit)
	if err != nil {
		t.Fatal(err)
	}
	d := testutil.Receive(t, midStream, "the draft mid-continuation")
	if !strings.HasPrefix(res.Text, d) || strings.Contains(d, "  ") {
		t.Errorf("mid-continuation the draft was %q; the answer is %q", d, res.Text)
	}
}

// When the person says something new after a crash mid-answer, the kept
// part is stored as a cut-off answer before it, not lost.
func TestNewInputAfterACrashKeepsTheCutOffAnswer(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	if _, err := e.st.AppendMessages(ctx, e.sid, store.Message{Role: store.RoleUser, Content: "count"}); err != nil {
		t.Fatal(err)
	}
	if err := e.st.SetDraft(ctx, e.sid, "one two "); err != nil {
		t.Fatal(err)
	}
	e.srv.Push(llmtest.Reply{Text: "ok"})
	e.mustRun(e.sid, "never mind")
	sameRows(t, e.transcript(e.sid), []row{
		{Role: store.RoleUser, Content: "count"},
		{Role: store.RoleAssistant, Content: "one two " + agent.InterruptedMarker},
		{Role: store.RoleUser, Content: "never mind"},
		{Role: store.RoleAssistant, Content: "ok"},
	})
}

// A tool call stored without a result (a crash while it ran) is recorded
// as interrupted at the next Run and not run again; the model is told.
func TestCallWithoutResultIsNotRunAgain(t *testing.T) {
	e := newEnv(t)
	e.agent.Allow = []string{"write_file"}
	ctx := context.Background()
	calls, err := agent.EncodeToolCalls([]llm.ToolCall{{ID: "c1", Name: "write_file", Arguments: json.RawMessage(`{"path":"out.txt","content":"x"}`)}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.st.AppendMessages(ctx, e.sid,
		store.Message{Role: store.RoleUser, Content: "write it"},
		store.Message{Role: store.RoleAssistant, ToolCalls: calls}); err != nil {
		t.Fatal(err)
	}
	e.srv.Push(llmtest.Reply{Text: "It may not have been written; I will check."})
	res, err := e.agent.Run(ctx, e.sid, store.Message{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(e.dir, "out.txt")); !os.IsNotExist(err) {
		t.Errorf("the cut-off call was run again: %v", err)
	}
	sameRows(t, e.transcript(e.sid), []row{
		{Role: store.RoleUser, Content: "write it"},
		{Role: store.RoleAssistant, Calls: "write_file"},
		{Role: store.RoleTool, Content: agent.InterruptedResult, CallID: "c1"},
		{Role: store.RoleAssistant, Content: res.Text},
	})
	if last := e.lastRequestMessage(); last["role"] != "tool" || last["content"] != agent.InterruptedResult {
		t.Errorf("the model was not told: %v", last)
	}
}

// A tool running when its turn is suspended is recorded as interrupted:
// it may have done part of its work.
func TestSuspendedToolIsInterrupted(t *testing.T) {
	e := newEnv(t)
	e.agent.Allow = []string{"shell"}
	e.srv.Push(llmtest.Reply{ToolCalls: []llmtest.Call{{ID: "c1", Name: "shell", Args: `{"command":"echo begun; sleep 30"}`}}})
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	evs := &events{}
	evs.on = func(ev agent.Event) {
		if ev.Kind == agent.EventToolStarted {
			time.AfterFunc(200*time.Millisecond, func() { cancel(agent.ErrSuspended) })
		}
	}
	if _, err := e.agent.Run(ctx, e.sid, store.Message{Role: store.RoleUser, Content: "wait"}, evs.emit); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
	sameRows(t, e.transcript(e.sid), []row{
		{Role: store.RoleUser, Content: "wait"},
		{Role: store.RoleAssistant, Calls: "shell"},
		{Role: store.RoleTool, Content: agent.InterruptedResult + "; output so far:\nbegun\n", CallID: "c1"},
	})
}

// troubled is the real store whose appends of the model's messages fail,
// as on a full disk, while full is set.
type troubled struct {
	*sqlite.Store
	full     atomic.Bool
	refusals atomic.Int32
}

func (s *troubled) AppendMessages(ctx context.Context, sessionID string, msgs ...store.Message) ([]store.Message, error) {
	return s.AppendMessagesWithUsage(ctx, sessionID, store.Usage{}, msgs...)
}

func (s *troubled) AppendMessagesWithUsage(ctx context.Context, sessionID string, u store.Usage, msgs ...store.Message) ([]store.Message, error) {
	if s.full.Load() && len(msgs) > 0 && msgs[0].Role == store.RoleAssistant {
		s.refusals.Add(1)
		return nil, fmt.Errorf("append to session %s: %w", sessionID, errors.New("database or disk is full (13)"))
	}
	return s.Store.AppendMessagesWithUsage(ctx, sessionID, u, msgs...)
}

// An answer the store refuses is kept and its write tried again until the
// store takes it; the trouble is reported at once, and the model is not
// asked again. With a bounded policy the turn ends with ErrStore.
func TestRefusedAnswerIsKeptAndWrittenLater(t *testing.T) {
	e := newEnv(t)
	st := &troubled{Store: e.st}
	st.full.Store(true)
	e.agent.Store = st
	e.agent.StoreRetry = retry.Policy{First: 5 * time.Millisecond, Max: 20 * time.Millisecond}
	troubleSeen := make(chan error, 1)
	evs := &events{on: func(ev agent.Event) {
		if ev.Kind == agent.EventStoreTrouble {
			troubleSeen <- ev.Err
		}
	}}
	done := make(chan error, 1)
	go func() {
		_, err := e.agent.Run(context.Background(), e.sid, store.Message{Role: store.RoleUser, Content: "hello"}, evs.emit)
		done <- err
	}()
	if err := testutil.Receive(t, troubleSeen, "the trouble reported"); !strings.Contains(err.Error(), "disk is full") {
		t.Errorf("trouble %v", err)
	}
	testutil.Eventually(t, 0, func() bool { return st.refusals.Load() >= 5 }, "the answer's write tried again")
	st.full.Store(false)
	if err := testutil.Receive(t, done, "the turn to end"); err != nil {
		t.Fatal(err)
	}
	sameRows(t, e.transcript(e.sid), []row{{Role: store.RoleUser, Content: "hello"}, {Role: store.RoleAssistant, Content: "echo: hello"}})
	if n := len(e.srv.Requests()); n != 1 {
		t.Errorf("the model was asked %d times, want 1", n)
	}
	if n := len(evs.of(agent.EventStoreTrouble)); n != 1 {
		t.Errorf("the trouble was reported %d times, want once", n)
	}

	st.full.Store(true)
	e.agent.StoreRetry = retry.Policy{First: time.Millisecond, Tries: 3}
	_, _, err := e.run(context.Background(), e.sid, "again")
	if !errors.Is(err, agent.ErrStore) {
		t.Errorf("a bounded policy spent: %v, want ErrStore", err)
	}
}

// A turn taken up again (no new input) whose question was answered while
// it waited for the session — by a turn another replica ran, or one
// before a restart — has nothing left to do: it gives that answer, and
// the model is not asked a second time.
func TestTurnTakenUpAfterItsAnswerAsksNothing(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	if _, err := e.st.AppendMessages(ctx, e.sid,
		store.Message{Role: store.RoleUser, Content: "count"},
		store.Message{Role: store.RoleAssistant, Content: "one two three"}); err != nil {
		t.Fatal(err)
	}
	res, err := e.agent.Run(ctx, e.sid, store.Message{Platform: "web"}, nil)
	if err != nil || res.Text != "one two three" {
		t.Fatalf("Run: %+v, %v", res, err)
	}
	if n := len(e.srv.Requests()); n != 0 {
		t.Errorf("the model was asked %d times", n)
	}
	sameRows(t, e.transcript(e.sid), []row{
		{Role: store.RoleUser, Content: "count"},
		{Role: store.RoleAssistant, Content: "one two three"},
	})
}
