package gateway_test

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/gateway"
	"github.com/baton-agent/baton/internal/gateway/control"
	"github.com/baton-agent/baton/internal/llm/llmtest"
	"github.com/baton-agent/baton/internal/platform"
	"github.com/baton-agent/baton/internal/platform/imessage"
	"github.com/baton-agent/baton/internal/platform/imessage/imessagetest"
	"github.com/baton-agent/baton/internal/platform/web"
	"github.com/baton-agent/baton/internal/testutil"
)

const (
	bbPassword   = "bb-server-password"
	imOwner      = "+15550001111" // the owner's phone, writing to baton's Apple ID
	imStranger   = "+15559999999"
	imessageWait = 20 * time.Millisecond // the adapter's health checks and catch-ups
)

var imHome = platform.Address{Platform: "imessage", Kind: platform.DM, Chat: imessagetest.DM(imOwner)}

func imessageRig(t *testing.T, fake *imessagetest.Server) *rig {
	t.Helper()
	a, err := imessage.New(imessage.Config{URL: fake.URL(), Password: bbPassword, Listen: "127.0.0.1:0",
		WebhookSecret: "hook-secret", CheckEvery: imessageWait, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	fake.SetWebhook(a.WebhookURL())
	r := newRig(t, rigOpts{
		personal: []string{"imessage"},
		extra:    []platform.Adapter{a},
		owners:   map[string][]string{"imessage": {imOwner}},
		homes:    map[string]string{"web": web.Home.Key(), "imessage": imHome.Key()},
	})
	r.waitLive(t, "imessage")
	return r
}

func imSent(t *testing.T, fake *imessagetest.Server, what string, match func(imessagetest.Message) bool) imessagetest.Message {
	t.Helper()
	var found imessagetest.Message
	if err := fake.Wait(testutil.Context(t, 0), func() bool {
		for _, m := range fake.Sent() {
			if match(m) {
				found = m
				return true
			}
		}
		return false
	}); err != nil {
		t.Fatalf("baton never sent %s; it sent %+v", what, fake.Sent())
	}
	return found
}

func imHomeSays(sub string) func(imessagetest.Message) bool {
	return func(m imessagetest.Message) bool {
		return len(m.Chats) == 1 && m.Chats[0].GUID == imHome.Chat && strings.Contains(m.Text, sub)
	}
}

// Terminal → /handoff imessage lands in the home chat, which holds a
// session of its own: kept, resumable, named in the first message. The
// adapter's connection drops and comes back mid-handoff (a failed health
// check); the greeting arrives once. The reply continues the session, a
// stranger gets no turn, /handoff cli hands it back.
func TestIMessageHandoffToHomeChatAndBack(t *testing.T) {
	fake := imessagetest.New(t, bbPassword)
	r := imessageRig(t, fake)
	ctx := context.Background()

	r.model.Push(llmtest.Reply{Text: "Morning chat answer."})
	fake.Receive(imOwner, imHome.Chat, "good morning")
	imSent(t, fake, "the morning answer", imHomeSays("Morning chat answer."))
	b, err := r.st.LookupBinding(ctx, imHome.Key())
	if err != nil {
		t.Fatal(err)
	}
	old := b.SessionID

	sess := r.terminalSession(t)
	release := fake.HoldSends()
	defer release()
	r.model.Push(llmtest.Reply{Text: "Hi on iMessage — we were booking the 9:40 train."})
	h, err := r.client.RequestHandoff(ctx, control.HandoffRequest{SessionID: sess.ID, From: "cli", To: "imessage"})
	if err != nil {
		t.Fatal(err)
	}
	if err := fake.Wait(testutil.Context(t, 0), func() bool { return fake.Held() > 0 }); err != nil {
		t.Fatal("the handoff never sent anything")
	}
	// The server stops answering the adapter's check: Run ends and is
	// restarted; a message written meanwhile is fetched once it is back.
	fake.FailNext("message/query", 502, 0)
	fails := func() int {
		n := 0
		for _, c := range fake.Calls() {
			if c.Method == "message/query" && c.Status == 502 {
				n++
			}
		}
		return n
	}
	if err := fake.Wait(testutil.Context(t, 0), func() bool { return fails() == 1 }); err != nil {
		t.Fatal("the adapter never met the failed check")
	}
	queries := fake.CallCount("message/query")
	if err := fake.Wait(testutil.Context(t, 0), func() bool { return fake.CallCount("message/query") > queries }); err != nil {
		t.Fatal("the adapter did not come back after the failed check")
	}
	release()
	final, err := r.client.Watch(ctx, h.ID, nil)
	if err != nil || final.State != "completed" || final.Destination != imHome.Key() {
		t.Fatalf("handoff %+v %v", final, err)
	}
	greeting := imHomeSays("Hi on iMessage")
	imSent(t, fake, "the greeting", greeting)
	notice := imSent(t, fake, "the notice", imHomeSays("/resume "+old[:8]))
	if !strings.Contains(notice.Text, "Trip planning") {
		t.Errorf("the notice does not name the session now active: %q", notice.Text)
	}
	sent := fake.Sent()
	if last := sent[len(sent)-1]; !greeting(last) || !strings.Contains(sent[len(sent)-2].Text, "/resume "+old[:8]) {
		t.Errorf("the notice does not come first, just before the greeting: %+v", sent)
	}
	n := 0
	for _, m := range fake.Sent() {
		if greeting(m) {
			n++
		}
	}
	if n != 1 {
		t.Errorf("the greeting arrived %d times", n)
	}
	if s, err := r.st.GetSession(ctx, old); err != nil || !s.Open() {
		t.Fatalf("the home chat's session was ended or lost: %+v %v", s, err)
	}

	r.model.Push(llmtest.Reply{Text: "Done, it is booked."})
	fake.Receive(imOwner, imHome.Chat, "book it please")
	imSent(t, fake, "the answer", imHomeSays("Done, it is booked."))
	msgs := settled(t, r, sess.ID, "Done, it is booked.")
	if m := msgs[len(msgs)-2]; m.Content != "book it please" || m.Platform != "imessage" {
		t.Fatalf("the reply went to %+v", m)
	}

	// A stranger gets no turn.
	before := len(fake.Sent())
	fake.Receive(imStranger, imessagetest.DM(imStranger), "what is the owner up to?")
	r.model.Push(llmtest.Reply{Text: "Marker answered."})
	fake.Receive(imOwner, imHome.Chat, "marker")
	imSent(t, fake, "the marker's answer", imHomeSays("Marker answered."))
	for _, m := range fake.Sent()[before:] {
		if !imHomeSays("Marker answered.")(m) {
			t.Errorf("sent %+v after a stranger's message", m)
		}
	}
	for _, id := range []string{sess.ID, old} {
		msgs, _ := r.st.Transcript(ctx, id)
		for _, m := range msgs {
			if strings.Contains(m.Content, "owner up to") {
				t.Errorf("a stranger's message reached session %s", id[:8])
			}
		}
	}

	fake.Receive(imOwner, imHome.Chat, "/handoff cli")
	imSent(t, fake, "the handoff answer", imHomeSays("baton resume"))
	waiting, err := r.st.PendingHandoffs(ctx, gateway.TerminalPlatform)
	if err != nil || len(waiting) != 1 || waiting[0].SessionID != sess.ID || waiting[0].FromPlatform != "imessage" {
		t.Fatalf("waiting %+v %v", waiting, err)
	}
	fake.Receive(imOwner, imHome.Chat, "/resume "+old[:8])
	imSent(t, fake, "the resume answer", imHomeSays("now continues session "+old[:8]))
	if b, _ := r.st.LookupBinding(ctx, imHome.Key()); b.SessionID != old {
		t.Fatalf("/resume did not rebind the home chat: %s", b.SessionID)
	}
}
