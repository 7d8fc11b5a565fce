package gateway_test

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/agent"
	"github.com/baton-agent/baton/internal/llm/llmtest"
	"github.com/baton-agent/baton/internal/place"
	"github.com/baton-agent/baton/internal/platform"
	"github.com/baton-agent/baton/internal/platform/web"
)

// What the page shows as an approval question or an elsewhere line comes
// from what the gateway stored the delivery as, never from its words: the
// model's answer worded like either is shown as an answer, and a real
// question carries its tool and subject exactly, whatever they hold.
func TestPageShowsKindsNotWording(t *testing.T) {
	const subject = "printf '**?\\n```\\n'\n```"
	var runs atomic.Int32
	tools, err := agent.NewRegistry(agent.Tool{
		Name:        "touch",
		Description: "touch a file",
		Run: func(context.Context, json.RawMessage) (string, error) {
			runs.Add(1)
			return "touched", nil
		},
		Subject: func(json.RawMessage) string { return subject },
	})
	if err != nil {
		t.Fatal(err)
	}
	r := newRig(t, rigOpts{tools: tools})
	pg := r.openPage(t)
	key := web.Home.Key()

	r.model.Push(llmtest.Reply{Text: platform.ApprovalQuestion("shell", "ls")})
	pg.send(map[string]any{"type": "say", "key": key, "text": "what does a question look like?", "id": "k1"})
	if f := pg.await("the quoted question", isMsg("May I run **shell**")); f["approval"] != nil {
		t.Errorf("an answer quoting a question is shown as one: %v", f)
	}
	r.model.Push(llmtest.Reply{Text: place.Elsewhere("good hands", time.Now(), time.Now())})
	pg.send(map[string]any{"type": "say", "key": key, "text": "where are we?", "id": "k2"})
	if f := pg.await("the answer", isMsg("good hands")); f["elsewhere"] != nil {
		t.Errorf("an answer worded like an elsewhere line marks what was said as kept: %v", f)
	}

	r.model.Push(llmtest.Reply{ToolCalls: []llmtest.Call{{Name: "touch", Args: `{}`}}}, llmtest.Reply{Text: "Touched it."})
	pg.send(map[string]any{"type": "say", "key": key, "text": "touch it", "id": "k3"})
	q := pg.await("the question", isMsg("May I run **touch**"))
	if a, _ := q["approval"].(map[string]any); a == nil || a["tool"] != "touch" || a["subject"] != subject || a["expired"] != nil {
		t.Errorf("the question is shown as %v", q)
	}
	pg.send(map[string]any{"type": "say", "key": key, "text": "/approve", "id": "k4"})
	pg.await("the answer", isMsg("Touched it."))
	if runs.Load() != 1 {
		t.Errorf("tool ran %d times after /approve, want 1", runs.Load())
	}
}

// A question nobody answered is followed by its expiry, marked as such,
// so the page takes the buttons away.
func TestPageIsToldAQuestionExpired(t *testing.T) {
	var runs atomic.Int32
	r := newRig(t, rigOpts{tools: touchTool(t, &runs), approval: 200 * time.Millisecond})
	pg := r.openPage(t)
	r.model.Push(llmtest.Reply{ToolCalls: []llmtest.Call{{Name: "touch", Args: `{}`}}}, llmtest.Reply{Text: "Did without."})
	pg.send(map[string]any{"type": "say", "key": web.Home.Key(), "text": "touch it", "id": "e1"})
	pg.await("the question", isMsg("May I run"))
	n := pg.await("the timeout note", isMsg("No answer within"))
	if a, _ := n["approval"].(map[string]any); a == nil || a["tool"] != "touch" || a["expired"] != true {
		t.Errorf("the expiry is shown as %v", n)
	}
	pg.await("the answer", isMsg("Did without."))
}
