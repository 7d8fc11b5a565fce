package gateway_test

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/baton-agent/baton/internal/gateway"
	"github.com/baton-agent/baton/internal/gateway/control"
	"github.com/baton-agent/baton/internal/llm/llmtest"
	"github.com/baton-agent/baton/internal/platform"
	"github.com/baton-agent/baton/internal/platform/web"
	"github.com/baton-agent/baton/internal/platform/whatsapp"
	"github.com/baton-agent/baton/internal/platform/whatsapp/whatsapptest"
	"github.com/baton-agent/baton/internal/store"
	"github.com/baton-agent/baton/internal/testutil"
)

const (
	waSelf   = "4915550000@s.whatsapp.net" // the owner's account: baton is one of its linked devices
	waFriend = "4915559999@s.whatsapp.net"
)

// waHome is the owner's chat with themselves, where handoffs land.
var waHome = whatsapp.HomeAddress(waSelf)

// whatsappRig runs the gateway with the WhatsApp adapter on the in-memory
// fake (no fake WhatsApp server is practical: see whatsapptest).
func whatsappRig(t *testing.T, fake *whatsapptest.Fake) *rig {
	t.Helper()
	a, err := whatsapp.New(whatsapp.Config{Client: fake, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	r := newRig(t, rigOpts{
		personal: []string{"whatsapp"},
		extra:    []platform.Adapter{a},
		owners:   map[string][]string{"whatsapp": {waSelf}},
		homes:    map[string]string{"web": web.Home.Key(), "whatsapp": waHome.Key()},
	})
	r.waitLive(t, "whatsapp")
	return r
}

func waSent(t *testing.T, fake *whatsapptest.Fake, what string, match func(whatsapptest.Sent) bool) whatsapptest.Sent {
	t.Helper()
	var found whatsapptest.Sent
	if err := fake.Wait(testutil.Context(t, 0), func() bool {
		for _, m := range fake.Sent() {
			if match(m) {
				found = m
				return true
			}
		}
		return false
	}); err != nil {
		t.Fatalf("WhatsApp never got %s; it got %+v", what, fake.Sent())
	}
	return found
}

func waToSelf(sub string) func(whatsapptest.Sent) bool {
	return func(m whatsapptest.Sent) bool { return m.Chat == waSelf && strings.Contains(m.Text, sub) }
}

// Terminal → /handoff whatsapp lands in the owner's own chat, which holds
// a session of its own: that one is kept, resumable, and the first
// message says so. The connection drops mid-handoff; the adapter
// reconnects and the greeting arrives once. The reply continues the
// session, strangers get no turn and no answer, /handoff cli hands it
// back, /resume brings the old one back.
func TestWhatsAppHandoffToHomeChatAndBack(t *testing.T) {
	fake := whatsapptest.New(waSelf)
	r := whatsappRig(t, fake)
	ctx := context.Background()

	// The own chat already holds a conversation.
	r.model.Push(llmtest.Reply{Text: "Morning chat answer."})
	fake.PushSelf("good morning")
	waSent(t, fake, "the morning answer", waToSelf("Morning chat answer."))
	b, err := r.st.LookupBinding(ctx, waHome.Key())
	if err != nil {
		t.Fatal(err)
	}
	old := b.SessionID

	// The handoff; its first message waits while the connection drops
	// and comes back.
	sess := r.terminalSession(t)
	release := fake.HoldSends()
	defer release()
	r.model.Push(llmtest.Reply{Text: "Hi on **WhatsApp** — we were booking the 9:40 train."})
	h, err := r.client.RequestHandoff(ctx, control.HandoffRequest{SessionID: sess.ID, From: "cli", To: "whatsapp"})
	if err != nil {
		t.Fatal(err)
	}
	if err := fake.Wait(testutil.Context(t, 0), func() bool { return fake.Held() > 0 }); err != nil {
		t.Fatal("the handoff never sent anything")
	}
	connects := fake.Connects()
	fake.Drop()
	if err := fake.Wait(testutil.Context(t, 0), func() bool { return fake.Connects() > connects && fake.Listening() > 0 }); err != nil {
		t.Fatal("the adapter did not reconnect after the connection dropped")
	}
	release()
	final, err := r.client.Watch(ctx, h.ID, nil)
	if err != nil || final.State != "completed" || final.Destination != waHome.Key() {
		t.Fatalf("handoff %+v %v", final, err)
	}
	greeting := waToSelf("Hi on *WhatsApp*") // in WhatsApp's own bold
	waSent(t, fake, "the greeting", greeting)
	notice := waSent(t, fake, "the notice", waToSelf("/resume "+old[:8]))
	if !strings.Contains(notice.Text, "Trip planning") {
		t.Errorf("the notice does not name the session now active: %q", notice.Text)
	}
	sent := fake.Sent()
	if last := sent[len(sent)-1]; !greeting(last) || !strings.Contains(sent[len(sent)-2].Text, "/resume "+old[:8]) {
		t.Errorf("the notice does not come first, just before the greeting: %+v", sent)
	}
	n := 0
	for _, m := range sent {
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

	// The owner's reply continues the handed-off session.
	r.model.Push(llmtest.Reply{Text: "Done, it is booked."})
	fake.PushSelf("book it please")
	waSent(t, fake, "the answer", waToSelf("Done, it is booked."))
	msgs := settled(t, r, sess.ID, "Done, it is booked.")
	if m := msgs[len(msgs)-2]; m.Content != "book it please" || m.Platform != "whatsapp" {
		t.Fatalf("the reply went to %+v", m)
	}

	// A stranger writing to the owner gets no turn and no answer; what
	// the owner writes to a friend is not baton's.
	before := len(fake.Sent())
	fake.PushFrom(waFriend, waFriend, "Eve", "what is the owner up to?")
	fake.Push(whatsapp.Message{Chat: waFriend, Sender: waSelf, FromMe: true, Text: "see you at eight"})
	r.model.Push(llmtest.Reply{Text: "Marker answered."})
	fake.PushSelf("marker")
	waSent(t, fake, "the marker's answer", waToSelf("Marker answered."))
	for _, m := range fake.Sent()[before:] {
		if !waToSelf("Marker answered.")(m) {
			t.Errorf("sent %+v after a stranger's message", m)
		}
	}
	for _, id := range []string{sess.ID, old} {
		msgs, _ := r.st.Transcript(ctx, id)
		for _, m := range msgs {
			if strings.Contains(m.Content, "owner up to") || strings.Contains(m.Content, "see you at eight") {
				t.Errorf("%q reached session %s", m.Content, id[:8])
			}
		}
	}

	// /handoff cli from the home chat leaves the session for the terminal.
	fake.PushSelf("/handoff cli")
	waSent(t, fake, "the handoff answer", waToSelf("baton resume"))
	waiting, err := r.st.PendingHandoffs(ctx, gateway.TerminalPlatform)
	if err != nil || len(waiting) != 1 || waiting[0].SessionID != sess.ID || waiting[0].FromPlatform != "whatsapp" {
		t.Fatalf("waiting %+v %v", waiting, err)
	}

	// The earlier conversation of the home chat is still there to resume.
	fake.PushSelf("/resume " + old[:8])
	waSent(t, fake, "the resume answer", waToSelf("now continues session "+old[:8]))
	if b, _ := r.st.LookupBinding(ctx, waHome.Key()); b.SessionID != old {
		t.Fatalf("/resume did not rebind the home chat: %s", b.SessionID)
	}
	if h, _ := r.st.HandoffState(ctx, sess.ID); h.State != store.HandoffPending || h.Platform != gateway.TerminalPlatform {
		t.Errorf("resuming the old session here disturbed the handoff to the terminal: %+v", h)
	}
}
