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

func TestChatApprovals(t *testing.T) {
	var runs atomic.Int32
	r := newRig(t, rigOpts{tools: touchTool(t, &runs), approval: 300 * time.Millisecond})
	pg := r.openPage(t)
	key := web.Home.Key()
	isMsg := func(sub string) func(map[string]any) bool {
		return func(f map[string]any) bool {
			return f["type"] == "message" && strings.Contains(f["text"].(string), sub)
		}
	}

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

	// No answer: denied after the timeout, and the chat is told.
	r.model.Push(llmtest.Reply{ToolCalls: []llmtest.Call{{Name: "touch", Args: `{}`}}}, llmtest.Reply{Text: "Did without."})
	pg.send(map[string]any{"type": "say", "key": key, "text": "and once more", "id": "a5"})
	pg.await("the question", isMsg("May I run"))
	pg.await("the timeout note", isMsg("No answer within"))
	pg.await("the answer", isMsg("Did without."))
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
	pg.send(map[string]any{"type": "say", "key": key, "text": "/approve", "id": "a6"})
	pg.await("nothing waiting", isMsg("Nothing is waiting for approval."))
}
