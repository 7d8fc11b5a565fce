package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/baton-agent/baton/internal/agent"
	"github.com/baton-agent/baton/internal/gateway/control"
	"github.com/baton-agent/baton/internal/llm/llmtest"
	"github.com/baton-agent/baton/internal/place"
	"github.com/baton-agent/baton/internal/platform"
	"github.com/baton-agent/baton/internal/platform/web"
	"github.com/baton-agent/baton/internal/store"
	"github.com/baton-agent/baton/internal/testutil"
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

// A handoff's greeting is stored as one, and the line a place gets when
// what it said is kept is stored as an elsewhere line naming the place
// the conversation is going: the page marks it so from the kind.
func TestDeliveriesAreStoredWithTheirKind(t *testing.T) {
	r := newRig(t, rigOpts{})
	sess := r.terminalSession(t)
	pg := r.openPage(t)
	ctx := context.Background()

	r.model.Push(llmtest.Reply{Text: "Hello from the web."})
	h, err := r.client.RequestHandoff(ctx, control.HandoffRequest{SessionID: sess.ID, From: "cli", To: "web"})
	if err != nil {
		t.Fatal(err)
	}
	final, err := r.client.Watch(ctx, h.ID, func(control.Progress) {})
	if err != nil || final.State != "completed" {
		t.Fatalf("handoff %+v, %v", final, err)
	}
	pg.await("the greeting", isMsg("Hello from the web."))
	d, err := r.st.DeliveryByKey(ctx, fmt.Sprintf("handoff:%d:part:0", h.ID))
	if err != nil || d.Kind != store.DeliveryGreeting {
		t.Errorf("the greeting is stored as %q (%v)", d.Kind, err)
	}

	key := final.Destination
	pg.send(map[string]any{"type": "say", "key": key, "text": "/handoff cli", "id": "d1"})
	pg.await("the handoff", isMsg("Handing off to the terminal."))
	pg.send(map[string]any{"type": "say", "key": key, "text": "one more thing", "id": "d2"})
	line := pg.await("the line", isMsg("This conversation is on its way to the terminal"))
	if line["elsewhere"] != true {
		t.Errorf("the line is not marked: %v", line)
	}
	var parked []store.Inbound
	testutil.Eventually(t, testutil.Patience, func() bool {
		parked, _ = r.st.Parked(ctx, key)
		return len(parked) == 1
	}, "the message to be kept")
	d, err = r.st.DeliveryByKey(ctx, fmt.Sprintf("in:%d:where:part:0", parked[0].ID))
	if err != nil || d.Kind != store.DeliveryElsewhere || d.Data.Place != "the terminal" {
		t.Errorf("the line is stored as %q %+v (%v)", d.Kind, d.Data, err)
	}
}

// shortChat is a chat service whose messages are short and which tells
// kinds apart: it records every message as sent.
type shortChat struct {
	recv chan platform.Receiver
	mu   sync.Mutex
	sent []platform.Message
}

func (c *shortChat) Name() string { return "short" }
func (c *shortChat) Run(ctx context.Context, r platform.Receiver) error {
	r.Live()
	c.recv <- r
	<-ctx.Done()
	return nil
}
func (c *shortChat) Send(ctx context.Context, to platform.Address, text string) (string, error) {
	return c.SendMessage(ctx, to, platform.Message{Text: text})
}
func (c *shortChat) SendMessage(_ context.Context, _ platform.Address, m platform.Message) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sent = append(c.sent, m)
	return fmt.Sprint(len(c.sent)), nil
}
func (c *shortChat) MaxMessageLen() int      { return 40 }
func (c *shortChat) MessageLen(s string) int { return utf8.RuneCountInString(s) }
func (c *shortChat) messages() []platform.Message {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.sent)
}

// A question too long for one message is sent in parts, and is a
// question once, at its end, with its data whole.
func TestSplitQuestionIsAQuestionOnce(t *testing.T) {
	var runs atomic.Int32
	chat := &shortChat{recv: make(chan platform.Receiver, 1)}
	r := newRig(t, rigOpts{tools: touchTool(t, &runs), extra: []platform.Adapter{chat}, owners: map[string][]string{"short": {"42"}}})
	r.waitLive(t, "short")
	recv := testutil.Receive(t, chat.recv, "the adapter to run")
	at := platform.Address{Platform: "short", Kind: platform.DM, Chat: "42"}
	say := func(id, text string) {
		t.Helper()
		if err := recv.Receive(context.Background(), platform.Event{At: at, SenderID: "42", Text: text, ID: id, Time: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	r.model.Push(llmtest.Reply{ToolCalls: []llmtest.Call{{Name: "touch", Args: `{}`}}}, llmtest.Reply{Text: "Touched it."})
	say("s1", "touch the notes")
	var sent []platform.Message
	testutil.Eventually(t, testutil.Patience, func() bool {
		sent = chat.messages()
		return len(sent) > 0 && sent[len(sent)-1].Kind == platform.MessageApproval
	}, "the question")
	if len(sent) < 2 {
		t.Fatalf("the question went in %d parts, want it split", len(sent))
	}
	for _, m := range sent[:len(sent)-1] {
		if m.Kind != "" {
			t.Errorf("a part before the last is a %q", m.Kind)
		}
	}
	if q := sent[len(sent)-1].Approval; q.Tool != "touch" || q.Subject != "notes.txt" || len(q.Choices) != 3 || q.Expires.IsZero() {
		t.Errorf("the question's data %+v", q)
	}
	say("s2", "/approve")
	testutil.Eventually(t, testutil.Patience, func() bool { return runs.Load() == 1 }, "the tool to run")
}
