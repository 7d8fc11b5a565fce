package gateway_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/agent"
	"github.com/baton-agent/baton/internal/llm/llmtest"
	"github.com/baton-agent/baton/internal/platform/web"
	"github.com/baton-agent/baton/internal/store"
)

// touchTool is a tool that needs approval and counts its runs.
func touchTool(t *testing.T, runs *atomic.Int32) *agent.Registry {
	t.Helper()
	reg, err := agent.NewRegistry(agent.Tool{
		Name:        "touch",
		Description: "touch a file",
		Run: func(context.Context, json.RawMessage) (string, error) {
			runs.Add(1)
			return "touched", nil
		},
		Subject: func(json.RawMessage) string { return "notes.txt" },
	})
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

func isMsg(sub string) func(map[string]any) bool {
	return func(f map[string]any) bool {
		return f["type"] == "message" && strings.Contains(f["text"].(string), sub)
	}
}

func TestChatApprovals(t *testing.T) {
	var runs atomic.Int32
	r := newRig(t, rigOpts{tools: touchTool(t, &runs)})
	pg := r.openPage(t)
	key := web.Home.Key()

	// Asked in the chat; /approve lets it run once.
	r.model.Push(llmtest.Reply{ToolCalls: []llmtest.Call{{Name: "touch", Args: `{}`}}}, llmtest.Reply{Text: "Touched it."})
	pg.send(map[string]any{"type": "say", "key": key, "text": "touch the notes", "id": "a1"})
	q := pg.await("the question", isMsg("May I run"))
	if !strings.Contains(q["text"].(string), "notes.txt") {
		t.Errorf("the question does not say what: %q", q["text"])
	}
	pg.send(map[string]any{"type": "say", "key": key, "text": "/approve", "id": "a2"})
	pg.await("the answer", isMsg("Touched it."))
	if runs.Load() != 1 {
		t.Fatalf("tool ran %d times after /approve", runs.Load())
	}

	// /deny: it does not run, the model hears so.
	r.model.Push(llmtest.Reply{ToolCalls: []llmtest.Call{{Name: "touch", Args: `{}`}}}, llmtest.Reply{Text: "Left it alone."})
	pg.send(map[string]any{"type": "say", "key": key, "text": "touch again", "id": "a3"})
	pg.await("the question", isMsg("May I run"))
	pg.send(map[string]any{"type": "say", "key": key, "text": "/deny", "id": "a4"})
	pg.await("the answer", isMsg("Left it alone."))

	// The page resends the earlier /approve (same id, after a reconnect)
	// while a new question waits: it answers nothing; /deny does.
	r.model.Push(llmtest.Reply{ToolCalls: []llmtest.Call{{Name: "touch", Args: `{}`}}}, llmtest.Reply{Text: "Not this time."})
	pg.send(map[string]any{"type": "say", "key": key, "text": "one more", "id": "a5"})
	pg.await("the question", isMsg("May I run"))
	pg.send(map[string]any{"type": "say", "key": key, "text": "/approve", "id": "a2"})
	pg.send(map[string]any{"type": "say", "key": key, "text": "/deny", "id": "a6"})
	pg.await("the answer", isMsg("Not this time."))
	if runs.Load() != 1 {
		t.Errorf("tool ran %d times, want 1 (only the approved call)", runs.Load())
	}
	b, _ := r.st.LookupBinding(context.Background(), key)
	msgs, _ := r.st.Transcript(context.Background(), b.SessionID)
	denied := 0
	for _, m := range msgs {
		if m.Role == store.RoleTool && strings.Contains(m.Content, agent.DeniedResult) {
			denied++
		}
		if strings.HasPrefix(m.Content, "/approve") || strings.HasPrefix(m.Content, "/deny") {
			t.Errorf("an approval answer reached the transcript: %q", m.Content)
		}
	}
	if denied != 2 {
		t.Errorf("%d denied tool results, want 2", denied)
	}
	// /approve with nothing waiting says so.
	pg.send(map[string]any{"type": "say", "key": key, "text": "/approve", "id": "a7"})
	pg.await("nothing waiting", isMsg("Nothing is waiting for approval."))
}

// No answer: the call is denied after the timeout, and the chat is told.
func TestChatApprovalTimesOut(t *testing.T) {
	var runs atomic.Int32
	r := newRig(t, rigOpts{tools: touchTool(t, &runs), approval: 200 * time.Millisecond})
	pg := r.openPage(t)
	r.model.Push(llmtest.Reply{ToolCalls: []llmtest.Call{{Name: "touch", Args: `{}`}}}, llmtest.Reply{Text: "Did without."})
	pg.send(map[string]any{"type": "say", "key": web.Home.Key(), "text": "touch it", "id": "t1"})
	pg.await("the question", isMsg("May I run"))
	pg.await("the timeout note", isMsg("No answer within"))
	pg.await("the answer", isMsg("Did without."))
	if runs.Load() != 0 {
		t.Errorf("an unanswered call ran")
	}
}

// Two chats bound to one session: a turn in the second waits for the
// first, and its own approval is asked in the second chat.
func TestTurnsOfOneSessionTakeTurns(t *testing.T) {
	var runs atomic.Int32
	r := newRig(t, rigOpts{tools: touchTool(t, &runs)})
	pg := r.openPage(t)
	ctx := context.Background()
	a, b := web.Home.Key(), "web:thread:main:second"
	sess, err := r.st.CreateSession(ctx, store.Session{OwnerID: r.owner.ID, Platform: "web"})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{a, b} {
		if _, err := r.st.Bind(ctx, k, sess.ID); err != nil {
			t.Fatal(err)
		}
	}
	call := llmtest.Reply{ToolCalls: []llmtest.Call{{Name: "touch", Args: `{}`}}}
	r.model.Push(call, llmtest.Reply{Text: "First done."}, call, llmtest.Reply{Text: "Second done."})
	pg.send(map[string]any{"type": "say", "key": a, "text": "first", "id": "b1"})
	q := pg.await("the first question", isMsg("May I run"))
	if q["key"] != a {
		t.Fatalf("first question asked in %v", q["key"])
	}
	pg.send(map[string]any{"type": "say", "key": b, "text": "second", "id": "b2"})
	pg.await("the second message stored", func(f map[string]any) bool { return f["type"] == "ack" && f["id"] == "b2" })
	pg.send(map[string]any{"type": "say", "key": a, "text": "/approve", "id": "b3"})
	// The first answer and the second question may come in either order.
	var firstDone, secondAsked bool
	for !firstDone || !secondAsked {
		f := pg.await("the first answer and the second question", func(f map[string]any) bool {
			return isMsg("First done.")(f) || isMsg("May I run")(f)
		})
		if isMsg("First done.")(f) {
			firstDone = true
			continue
		}
		if f["key"] != b {
			t.Fatalf("second question asked in %v, want %s", f["key"], b)
		}
		secondAsked = true
	}
	pg.send(map[string]any{"type": "say", "key": b, "text": "/approve", "id": "b4"})
	pg.await("the second answer", isMsg("Second done."))
	if runs.Load() != 2 {
		t.Errorf("tool ran %d times, want 2", runs.Load())
	}
	msgs, _ := r.st.Transcript(ctx, sess.ID)
	var users []string
	for _, m := range msgs {
		if m.Role == store.RoleUser {
			users = append(users, m.Content)
		}
	}
	if strings.Join(users, "|") != "first|second" {
		t.Errorf("user turns %q: the turns interleaved", users)
	}
}
