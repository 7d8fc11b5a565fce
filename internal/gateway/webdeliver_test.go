package gateway_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/llm/llmtest"
	"github.com/baton-agent/baton/internal/platform/web"
	"github.com/baton-agent/baton/internal/store"
	"github.com/baton-agent/baton/internal/testutil"
)

// storeQuestion leaves a question said in the web chat's home, stored and
// not yet answered, as a page that closed right after saying it leaves it.
func storeQuestion(t *testing.T, text string) func(store.Store, store.User) {
	return func(st store.Store, owner store.User) {
		ctx := context.Background()
		s, err := st.CreateSession(ctx, store.Session{OwnerID: owner.ID, Platform: "web"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.Bind(ctx, web.Home.Key(), s.ID); err != nil {
			t.Fatal(err)
		}
		if _, _, err := st.AddInbound(ctx, store.Inbound{Platform: "web", PlatformMsgID: "q1", AddressKey: web.Home.Key(), SenderID: web.Owner, Text: text}); err != nil {
			t.Fatal(err)
		}
	}
}

// waitTried waits until a delivery to key containing text was tried and
// is still waiting: nobody saw it, so it is not counted as sent.
func waitTried(t *testing.T, st store.Store, key, text string) {
	t.Helper()
	var last []store.Delivery
	if !testutil.Poll(testutil.Context(t, 0), func() bool {
		ds, err := st.PendingDeliveries(context.Background(), key, 0)
		last = ds
		for _, d := range ds {
			if err == nil && strings.Contains(d.Text, text) && d.Attempts > 0 {
				return true
			}
		}
		return false
	}) {
		t.Fatalf("no delivery of %q to %s tried and kept; pending %+v", text, key, last)
	}
}

// collect reads frames until one matches, and returns them all.
func (p *page) collect(what string, match func(map[string]any) bool) []map[string]any {
	p.t.Helper()
	timeout := time.After(15 * time.Second)
	var got []map[string]any
	for {
		select {
		case f, ok := <-p.in:
			if !ok {
				p.t.Fatalf("page closed while waiting for %s", what)
			}
			got = append(got, f)
			if match(f) {
				return got
			}
		case <-timeout:
			p.t.Fatalf("timed out waiting for %s; frames meanwhile: %v", what, got)
		}
	}
}

func count(frames []map[string]any, match func(map[string]any) bool) int {
	n := 0
	for _, f := range frames {
		if match(f) {
			n++
		}
	}
	return n
}

// A reply written while no page is open waits; the page that opens later
// is shown it, once, and a page opened after that is not shown it again.
func TestWebReplyWaitsForAPage(t *testing.T) {
	const answer = "The answer nobody saw yet."
	r := newRig(t, rigOpts{script: []llmtest.Step{llmtest.Reply{Text: answer}}, beforeRun: storeQuestion(t, "what is new?")})
	key := web.Home.Key()
	waitTried(t, r.st, key, answer)

	pg := r.dialPage(t)
	frames := pg.collect("the answer", isMsg(answer))
	waitAllSent(t, r.st)
	// One more exchange: anything sent twice would have come by its end.
	pg.send(map[string]any{"type": "say", "key": key, "text": "ping", "id": "p1"})
	frames = append(frames, pg.collect("the next answer", isMsg("ping"))...)
	if n := count(frames, isMsg(answer)); n != 1 {
		t.Errorf("the page was shown the waiting answer %d times, want once", n)
	}

	later := r.dialPage(t)
	pg.send(map[string]any{"type": "say", "key": key, "text": "ping again", "id": "p2"})
	if n := count(later.collect("the last answer", isMsg("ping again")), isMsg(answer)); n != 0 {
		t.Errorf("a page opened after the answer was shown got it again (%d times)", n)
	}
}

// An approval question asked while no tab is open is shown when one
// opens, and /approve there lets the tool run.
func TestWebApprovalAskedWithNoPageOpen(t *testing.T) {
	var runs atomic.Int32
	r := newRig(t, rigOpts{tools: touchTool(t, &runs), beforeRun: storeQuestion(t, "touch the notes"), script: []llmtest.Step{
		llmtest.Reply{ToolCalls: []llmtest.Call{{Name: "touch", Args: `{}`}}},
		llmtest.Reply{Text: "Touched it."},
	}})
	key := web.Home.Key()
	waitTried(t, r.st, key, "May I run")

	pg := r.dialPage(t)
	q := pg.await("the question", isMsg("May I run"))
	if !strings.Contains(q["text"].(string), "notes.txt") {
		t.Errorf("the question does not say what: %q", q["text"])
	}
	pg.send(map[string]any{"type": "say", "key": key, "text": "/approve", "id": "a1"})
	pg.await("the answer", isMsg("Touched it."))
	if runs.Load() != 1 {
		t.Errorf("tool ran %d times after /approve, want 1", runs.Load())
	}
}
