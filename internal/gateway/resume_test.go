package gateway_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/agent"
	"github.com/baton-agent/baton/internal/llm/llmtest"
	"github.com/baton-agent/baton/internal/platform/web"
	"github.com/baton-agent/baton/internal/store"
	"github.com/baton-agent/baton/internal/store/sqlite"
	"github.com/baton-agent/baton/internal/testutil"
)

// longAnswer streams slowly enough that a stop or crash cuts it.
const longAnswer = "Alpha bravo charlie delta echo foxtrot golf hotel india juliett kilo lima mike november oscar papa quebec romeo sierra tango uniform victor whiskey xray yankee zulu."

// crashCopy is what a crash of r would leave on disk now: its store as
// last committed, copied into a new BATON_HOME. A rig started with it as
// again resumes from there; r itself may run on, unseen.
func crashCopy(t *testing.T, r *rig) *rig {
	t.Helper()
	home := t.TempDir()
	db, err := sql.Open("sqlite", filepath.Join(r.home, "state.db")+"?_busy_timeout=10000")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`VACUUM INTO ?`, filepath.Join(home, "state.db")); err != nil {
		t.Fatalf("copy the store: %v", err)
	}
	return &rig{home: home, owner: r.owner}
}

// homeSession is the session the web chat's home conversation is bound to.
func homeSession(t *testing.T, st store.Store) string {
	t.Helper()
	b, err := st.LookupBinding(context.Background(), web.Home.Key())
	if err != nil {
		t.Fatal(err)
	}
	return b.SessionID
}

// answered waits until the session's last message is a final answer (an
// assistant message without tool calls) and returns the transcript.
func answered(t *testing.T, st store.Store, sessionID string) []store.Message {
	t.Helper()
	var msgs []store.Message
	testutil.Eventually(t, 0, func() bool {
		msgs, _ = st.Transcript(context.Background(), sessionID)
		n := len(msgs)
		return n > 0 && msgs[n-1].Role == store.RoleAssistant && len(msgs[n-1].ToolCalls) == 0
	}, "the turn to end with an answer")
	return msgs
}

// lastMessage is the last message of a recorded model request.
func lastMessage(req llmtest.Request) map[string]any {
	msgs := req.Messages()
	if len(msgs) == 0 {
		return nil
	}
	m, _ := msgs[len(msgs)-1].(map[string]any)
	return m
}

// A turn cut off while the model writes is taken up at the next start
// and the transcript holds one answer, never the cut-off part and a
// second whole answer: where the model goes on from its own words
// (Anthropic), the part written before the stop followed by the rest;
// where it cannot (OpenAI-style chat completions), a new answer that
// replaces the part.
func TestCutOffAnswerIsContinuedOnce(t *testing.T) {
	for _, proto := range []string{llmtest.ProtocolAnthropic, llmtest.ProtocolOpenAI} {
		for _, how := range []string{"stopped past the grace period", "crashed"} {
			t.Run(proto+"/"+how, func(t *testing.T) { cutOffAnswerTakenUp(t, proto, how) })
		}
	}
}

func cutOffAnswerTakenUp(t *testing.T, proto, how string) {
	prefills := proto == llmtest.ProtocolAnthropic
	r1 := newRig(t, rigOpts{grace: 300 * time.Millisecond, anthropic: prefills,
		script: []llmtest.Step{llmtest.Reply{Text: longAnswer, Delay: 100 * time.Millisecond}}})
	pg := r1.openPage(t)
	pg.send(map[string]any{"type": "say", "key": web.Home.Key(), "text": "spell it", "id": "s1"})
	pg.await("the answer streaming", typ("delta"))
	sessionID := homeSession(t, r1.st)

	again := r1
	var kept string
	if how == "crashed" {
		// The partial answer is in the store while it is written.
		testutil.Eventually(t, 0, func() bool {
			d, err := r1.st.Draft(context.Background(), sessionID)
			kept = d
			return err == nil && d != ""
		}, "the partial answer kept in the store")
		again = crashCopy(t, r1)
		st, err := sqlite.Open(context.Background(), filepath.Join(again.home, "state.db"))
		if err != nil {
			t.Fatal(err)
		}
		kept, err = st.Draft(context.Background(), sessionID)
		st.Close()
		if err != nil || kept == "" {
			t.Fatalf("the crash left no partial answer: %q %v", kept, err)
		}
	} else {
		r1.stop()
	}

	rest, anew := " and the rest.", "Alpha to zulu, spelt again from the start."
	next := rest
	if !prefills {
		next = anew
	}
	r2 := newRig(t, rigOpts{again: again, anthropic: prefills, script: []llmtest.Step{llmtest.Reply{Text: next}}})
	msgs := answered(t, r2.st, sessionID)
	var answers []string
	for _, m := range msgs {
		if m.Role == store.RoleAssistant {
			answers = append(answers, m.Content)
		}
	}
	if len(answers) != 1 {
		t.Fatalf("the transcript holds %d answers, want one: %q", len(answers), answers)
	}
	answer := answers[0]
	reqs := r2.model.Requests()
	if len(reqs) != 1 {
		t.Fatalf("the model was asked %d times at the restart, want 1", len(reqs))
	}
	role, text := reqs[0].LastMessage()
	if prefills {
		part, ok := strings.CutSuffix(answer, rest)
		if !ok || part == "" || !strings.HasPrefix(longAnswer, part) || strings.Count(answer, "Alpha") != 1 {
			t.Fatalf("answer %q: want the part written before the cut, once, then the rest", answer)
		}
		if kept != "" && part != strings.TrimRight(kept, " ") {
			t.Errorf("continued from %q, but the crash kept %q", part, kept)
		}
		// The model was asked once, to go on from the written part.
		if role != "assistant" || text != part {
			t.Errorf("the model was not asked to continue %q; its last message was %s %q", part, role, text)
		}
	} else {
		if answer != anew {
			t.Fatalf("answer %q: want the new answer alone, %q", answer, anew)
		}
		if role != "user" {
			t.Errorf("the model was sent the cut-off part to continue: last message %s %q", role, text)
		}
	}
	if strings.Contains(answer, agent.InterruptedMarker) {
		t.Errorf("the answer still says it was cut off: %q", answer)
	}
	testutil.Eventually(t, 0, func() bool {
		pending, err := r2.st.PendingInbound(context.Background(), 0, 0)
		return err == nil && len(pending) == 0
	}, "the message handled")
	// The page shows the answer once.
	pg2 := r2.openPage(t)
	pg2.send(map[string]any{"type": "open", "key": web.Home.Key()})
	hist := pg2.await("history", typ("history"))
	shown := 0
	for _, l := range hist["lines"].([]any) {
		if strings.Contains(l.(map[string]any)["text"].(string), "Alpha") {
			shown++
		}
	}
	if shown != 1 {
		t.Errorf("the page's history shows the answer %d times: %v", shown, hist["lines"])
	}
}

// appendTool appends a line to a file each time it runs, then waits until
// its turn is stopped: a long job cut off by a stop or crash.
func appendTool(t *testing.T, path string, started chan<- struct{}) *agent.Registry {
	t.Helper()
	reg, err := agent.NewRegistry(agent.Tool{
		Name:        "append_line",
		Description: "append a line to the log",
		Run: func(ctx context.Context, _ json.RawMessage) (string, error) {
			f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
			if err != nil {
				return "", err
			}
			_, err = f.WriteString("ran\n")
			f.Close()
			if err != nil {
				return "", err
			}
			select {
			case started <- struct{}{}:
			default:
			}
			<-ctx.Done()
			return "", ctx.Err()
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

// retryingModel answers like a model that calls a tool again when its
// call failed or was cancelled, and otherwise says what it knows.
func retryingModel(req llmtest.Request) llmtest.Step {
	last := lastMessage(req)
	if last["role"] == "tool" {
		content, _ := last["content"].(string)
		if strings.HasPrefix(content, "error") || strings.HasPrefix(content, agent.CancelledResult) {
			return llmtest.Reply{ToolCalls: []llmtest.Call{{Name: "append_line"}}}
		}
		return llmtest.Reply{Text: "The job was cut off; I will check the log before running it again."}
	}
	return llmtest.EchoReply(req)
}

// A tool call cut off by a stop or crash is never run again by baton: at
// the next start it is recorded as interrupted, and the model decides
// what to do knowing it may or may not have run.
func TestInterruptedToolRunsAtMostOnce(t *testing.T) {
	for _, how := range []string{"stopped past the grace period", "crashed"} {
		t.Run(how, func(t *testing.T) {
			log := filepath.Join(t.TempDir(), "job.log")
			started := make(chan struct{}, 1)
			tools := appendTool(t, log, started)
			r1 := newRig(t, rigOpts{grace: 300 * time.Millisecond, tools: tools, allow: []string{"append_line"},
				script: []llmtest.Step{llmtest.Reply{ToolCalls: []llmtest.Call{{Name: "append_line"}}}}})
			pg := r1.openPage(t)
			pg.send(map[string]any{"type": "say", "key": web.Home.Key(), "text": "run the job", "id": "j1"})
			testutil.Receive(t, started, "the tool to start")
			sessionID := homeSession(t, r1.st)
			again := r1
			if how == "crashed" {
				again = crashCopy(t, r1)
			} else {
				r1.stop()
			}

			r2 := newRig(t, rigOpts{again: again, tools: tools, allow: []string{"append_line"}, answer: retryingModel})
			msgs := answered(t, r2.st, sessionID)
			if b, err := os.ReadFile(log); err != nil || strings.Count(string(b), "ran") != 1 {
				t.Fatalf("the tool ran %d times, want once (%v)", strings.Count(string(b), "ran"), err)
			}
			var results []string
			for _, m := range msgs {
				if m.Role == store.RoleTool {
					results = append(results, m.Content)
				}
			}
			if len(results) != 1 || !strings.HasPrefix(results[0], agent.InterruptedResult) {
				t.Fatalf("tool results %q; want the call recorded once as interrupted", results)
			}
			reqs := r2.model.Requests()
			if len(reqs) == 0 || !strings.HasPrefix(lastMessage(reqs[0])["content"].(string), agent.InterruptedResult) {
				t.Errorf("the model was not told the call was interrupted: %v", reqs)
			}
			if got := msgs[len(msgs)-1].Content; !strings.Contains(got, "cut off") {
				t.Errorf("final answer %q; transcript %+v", got, msgs)
			}
		})
	}
}

// waitTool runs until released (or its turn is stopped), then says so.
func waitTool(t *testing.T, started chan<- struct{}, release <-chan struct{}) *agent.Registry {
	t.Helper()
	reg, err := agent.NewRegistry(agent.Tool{
		Name:        "long_job",
		Description: "a job that takes a while",
		Run: func(ctx context.Context, _ json.RawMessage) (string, error) {
			started <- struct{}{}
			select {
			case <-release:
				return "finished", nil
			case <-ctx.Done():
				return "", ctx.Err()
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

// A graceful stop lets the running turn finish within the grace period
// and its answer reach the page that is waiting for it.
func TestGracefulStopDeliversTheRunningTurnsAnswer(t *testing.T) {
	started, release := make(chan struct{}, 1), make(chan struct{})
	r := newRig(t, rigOpts{grace: time.Minute, tools: waitTool(t, started, release), allow: []string{"long_job"},
		script: []llmtest.Step{llmtest.Reply{ToolCalls: []llmtest.Call{{Name: "long_job"}}}, llmtest.Reply{Text: "The job is finished."}}})
	pg := r.openPage(t)
	pg.send(map[string]any{"type": "say", "key": web.Home.Key(), "text": "run the long job", "id": "l1"})
	testutil.Receive(t, started, "the job to start")

	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		r.stop()
	}()
	testutil.Eventually(t, 0, func() bool { return strings.Contains(r.logs.String(), "gateway stopping") }, "the gateway to begin stopping")
	// What is said now is kept for the next start, and the person told.
	pg.send(map[string]any{"type": "say", "key": web.Home.Key(), "text": "and another thing", "id": "l2"})
	// In either order: the notice is sent apart from the message's receipt.
	var told, stored bool
	pg.await("word of the restart and the later message stored", func(f map[string]any) bool {
		told = told || isMsg("baton is restarting")(f)
		stored = stored || (f["type"] == "ack" && f["id"] == "l2")
		return told && stored
	})
	close(release)
	pg.await("the answer, during the grace period", isMsg("The job is finished."))
	testutil.Receive(t, stopped, "the gateway to stop once the turn is done")
	pending, err := r.st.PendingInbound(context.Background(), 0, 0)
	if err != nil || len(pending) != 1 || pending[0].Text != "and another thing" {
		t.Errorf("pending %+v (%v); want only the message said while stopping", pending, err)
	}
	if n := len(r.model.Requests()); n != 2 {
		t.Errorf("the model was asked %d times, want 2: the later message waits", n)
	}
}
