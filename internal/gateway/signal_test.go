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
	"github.com/baton-agent/baton/internal/platform/signal"
	"github.com/baton-agent/baton/internal/platform/signal/signaltest"
	"github.com/baton-agent/baton/internal/platform/web"
	"github.com/baton-agent/baton/internal/store"
	"github.com/baton-agent/baton/internal/testutil"
)

const (
	signalAccount = "+4915550000" // the owner's own number: signal-cli is linked to it
	signalFriend  = "+4915559999"
)

// signalHome is the owner's Note to Self, where handoffs land.
var signalHome = platform.Address{Platform: "signal", Kind: platform.DM, Chat: signalAccount}

func signalRig(t *testing.T, fake *signaltest.Server) *rig {
	t.Helper()
	a, err := signal.New(signal.Config{URL: fake.URL(), Account: signalAccount, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	r := newRig(t, rigOpts{
		personal: []string{"signal"},
		extra:    []platform.Adapter{a},
		owners:   map[string][]string{"signal": {signalAccount}},
		homes:    map[string]string{"web": web.Home.Key(), "signal": signalHome.Key()},
	})
	r.waitLive(t, "signal")
	// The daemon sends a new stream only what comes after it opened.
	if err := fake.Wait(testutil.Context(t, 0), func() bool { return fake.Streams() > 0 }); err != nil {
		t.Fatal("the adapter never opened the event stream")
	}
	return r
}

// signalSent waits for a message the daemon sent that matches.
func signalSent(t *testing.T, fake *signaltest.Server, what string, match func(signaltest.Sent) bool) signaltest.Sent {
	t.Helper()
	var found signaltest.Sent
	if err := fake.Wait(testutil.Context(t, 0), func() bool {
		for _, m := range fake.Sent() {
			if match(m) {
				found = m
				return true
			}
		}
		return false
	}); err != nil {
		t.Fatalf("the daemon never sent %s; it sent %+v", what, fake.Sent())
	}
	return found
}

func toSelf(sub string) func(signaltest.Sent) bool {
	return func(m signaltest.Sent) bool {
		return len(m.Recipients) == 1 && m.Recipients[0] == signalAccount && strings.Contains(m.Message, sub)
	}
}

func countSignal(fake *signaltest.Server, match func(signaltest.Sent) bool) int {
	n := 0
	for _, m := range fake.Sent() {
		if match(m) {
			n++
		}
	}
	return n
}

// Terminal → /handoff signal lands in Note to Self, which holds a session
// of its own: that one is kept, resumable, and the first message says so.
// The event stream drops mid-handoff; the adapter reconnects and the
// greeting arrives once. The reply continues the session, a stranger gets
// no turn, /handoff cli hands it back, /resume brings the old one back.
func TestSignalHandoffToHomeChatAndBack(t *testing.T) {
	fake := signaltest.New(t, signalAccount)
	r := signalRig(t, fake)
	ctx := context.Background()

	// Note to Self already holds a conversation.
	r.model.Push(llmtest.Reply{Text: "Morning chat answer."})
	fake.PushSent(signalAccount, "good morning")
	signalSent(t, fake, "the morning answer", toSelf("Morning chat answer."))
	b, err := r.st.LookupBinding(ctx, signalHome.Key())
	if err != nil {
		t.Fatal(err)
	}
	old := b.SessionID

	// The handoff; its first message waits in the daemon while the event
	// stream drops and comes back.
	sess := r.terminalSession(t)
	release := fake.HoldSends()
	defer release()
	r.model.Push(llmtest.Reply{Text: "Hi on Signal — we were booking the 9:40 train."})
	h, err := r.client.RequestHandoff(ctx, control.HandoffRequest{SessionID: sess.ID, From: "cli", To: "signal"})
	if err != nil {
		t.Fatal(err)
	}
	if err := fake.Wait(testutil.Context(t, 0), func() bool { return fake.Held() > 0 }); err != nil {
		t.Fatal("the handoff never sent anything")
	}
	streams := fake.Opened()
	fake.DropStreams()
	if err := fake.Wait(testutil.Context(t, 0), func() bool { return fake.Opened() > streams && fake.Streams() > 0 }); err != nil {
		t.Fatal("the adapter did not reconnect after the stream dropped")
	}
	release()
	final, err := r.client.Watch(ctx, h.ID, nil)
	if err != nil || final.State != "completed" || final.Destination != signalHome.Key() {
		t.Fatalf("handoff %+v %v", final, err)
	}
	greeting := toSelf("Hi on Signal")
	signalSent(t, fake, "the greeting", greeting)
	notice := signalSent(t, fake, "the notice", toSelf("/resume "+old[:8]))
	if !strings.Contains(notice.Message, "Trip planning") {
		t.Errorf("the notice does not name the session now active: %q", notice.Message)
	}
	sent := fake.Sent()
	if last := sent[len(sent)-1]; !greeting(last) || !strings.Contains(sent[len(sent)-2].Message, "/resume "+old[:8]) {
		t.Errorf("the notice does not come first, just before the greeting: %+v", sent)
	}
	if n := countSignal(fake, greeting); n != 1 {
		t.Errorf("the greeting arrived %d times", n)
	}
	if s, err := r.st.GetSession(ctx, old); err != nil || !s.Open() {
		t.Fatalf("the home chat's session was ended or lost: %+v %v", s, err)
	}

	// The person's reply continues the handed-off session.
	r.model.Push(llmtest.Reply{Text: "Done, it is booked."})
	fake.PushSent(signalAccount, "book it please")
	signalSent(t, fake, "the answer", toSelf("Done, it is booked."))
	msgs := settled(t, r, sess.ID, "Done, it is booked.")
	if m := msgs[len(msgs)-2]; m.Content != "book it please" || m.Platform != "signal" {
		t.Fatalf("the reply went to %+v", m)
	}

	// A stranger writing to the owner gets no turn; what the owner writes
	// to a friend is not baton's.
	before := len(fake.Sent())
	fake.PushMessage(signalFriend, "Eve", "", "what is the owner up to?")
	fake.PushSent(signalFriend, "see you at eight")
	r.model.Push(llmtest.Reply{Text: "Marker answered."})
	fake.PushSent(signalAccount, "marker")
	signalSent(t, fake, "the marker's answer", toSelf("Marker answered."))
	for _, m := range fake.Sent()[before:] {
		if !toSelf("Marker answered.")(m) {
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
	fake.PushSent(signalAccount, "/handoff cli")
	signalSent(t, fake, "the handoff answer", toSelf("baton resume"))
	waiting, err := r.st.PendingHandoffs(ctx, gateway.TerminalPlatform)
	if err != nil || len(waiting) != 1 || waiting[0].SessionID != sess.ID || waiting[0].FromPlatform != "signal" {
		t.Fatalf("waiting %+v %v", waiting, err)
	}

	// The earlier conversation of the home chat is still there to resume.
	fake.PushSent(signalAccount, "/resume "+old[:8])
	signalSent(t, fake, "the resume answer", toSelf("now continues session "+old[:8]))
	if b, _ := r.st.LookupBinding(ctx, signalHome.Key()); b.SessionID != old {
		t.Fatalf("/resume did not rebind the home chat: %s", b.SessionID)
	}
	if h, _ := r.st.HandoffState(ctx, sess.ID); h.State != store.HandoffPending || h.Platform != gateway.TerminalPlatform {
		t.Errorf("resuming the old session here disturbed the handoff to the terminal: %+v", h)
	}
}
