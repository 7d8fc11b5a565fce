package gateway_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/llm/llmtest"
	"github.com/baton-agent/baton/internal/owner"
	"github.com/baton-agent/baton/internal/platform/telegram/telegramtest"
	"github.com/baton-agent/baton/internal/platform/web"
	"github.com/baton-agent/baton/internal/store"
	"github.com/baton-agent/baton/internal/testutil"
)

// One place holds a session at a time: web → Telegram → back to the web
// page with /continue. The place left behind runs no turn: it answers
// with where the conversation is, keeps what was typed, and /continue
// carries that along.
func TestOneHolderWebTelegramAndBack(t *testing.T) {
	fake := telegramtest.New(t, botToken)
	fake.AddChat(telegramtest.Chat{ID: forum, Type: "supergroup", Title: "baton", IsForum: true})
	r := telegramRig(t, fake, "telegram:group:-100777")
	pg := r.openPage(t)
	ctx := context.Background()
	key := web.Home.Key()
	holder := func(id string) string {
		t.Helper()
		s, err := r.st.GetSession(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return s.Holder
	}

	// A conversation started in the web chat is held there.
	r.model.Push(llmtest.Reply{Text: "Hello from the page."})
	pg.send(map[string]any{"type": "say", "key": key, "text": "hi", "id": "w1"})
	pg.await("the answer", isMsg("Hello from the page."))
	b, err := r.st.LookupBinding(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	sid := b.SessionID
	if got := holder(sid); got != key {
		t.Fatalf("holder of a session started on the page: %q", got)
	}

	// /handoff telegram from the page moves the holder to the new topic.
	r.model.Push(llmtest.Reply{Text: "Hi on Telegram."})
	pg.send(map[string]any{"type": "say", "key": key, "text": "/handoff telegram", "id": "w2"})
	pg.await("the outcome", isMsg("now continues in Telegram. /continue to bring it back here."))
	topics := fake.Topics()
	if len(topics) != 1 {
		t.Fatalf("topics %+v", topics)
	}
	topic := topics[0].ThreadID
	inTopic := func(sub string) func(telegramtest.SentMessage) bool {
		return func(m telegramtest.SentMessage) bool { return m.ThreadID == topic && strings.Contains(m.Plain, sub) }
	}
	waitFor(t, "the greeting", fake.Shown, inTopic("Hi on Telegram."))
	topicKey := holder(sid)
	if !strings.HasPrefix(topicKey, "telegram:thread:") {
		t.Fatalf("holder after the handoff: %q", topicKey)
	}

	// The page no longer runs turns: one line, no model call, nothing in
	// the transcript; commands that would change it get the same line.
	calls := len(r.model.Requests())
	pg.send(map[string]any{"type": "say", "key": key, "text": "are you there?", "id": "w3"})
	line := pg.await("where it is", isMsg("This conversation is in Telegram now, since "))
	if !strings.Contains(line["text"].(string), "/continue to bring it here") {
		t.Errorf("the line does not offer /continue: %q", line["text"])
	}
	pg.send(map[string]any{"type": "say", "key": key, "text": "/retry", "id": "w4"})
	pg.await("retry refused", isMsg("This conversation is in Telegram now"))
	if n := len(r.model.Requests()); n != calls {
		t.Fatalf("the old place ran %d model calls", n-calls)
	}
	msgs, _ := r.st.Transcript(ctx, sid)
	for _, m := range msgs {
		if m.Content == "are you there?" {
			t.Fatal("a message from the old place entered the transcript before /continue")
		}
	}
	pg.send(map[string]any{"type": "say", "key": key, "text": "/where", "id": "w5"})
	pg.await("where", isMsg("is in Telegram now"))

	// /continue on the page brings it back through the handoff worker: the
	// greeting, then the kept message is answered, in order.
	r.model.Push(llmtest.Reply{Text: "Back on the page."}, llmtest.Reply{Text: "Yes, still here."})
	pg.send(map[string]any{"type": "say", "key": key, "text": "/continue", "id": "w6"})
	pg.await("the greeting back", isMsg("Back on the page."))
	pg.await("the kept message answered", isMsg("Yes, still here."))
	if got := holder(sid); got != key {
		t.Fatalf("holder after /continue: %q", got)
	}
	msgs = settled(t, r, sid, "Yes, still here.")
	var said []string
	for _, m := range msgs {
		if m.Role == store.RoleUser && m.Kind == "" || m.Role == store.RoleAssistant && m.Content != "" {
			said = append(said, m.Content)
		}
	}
	want := []string{"hi", "Hello from the page.", "Hi on Telegram.", "Back on the page.", "are you there?", "Yes, still here."}
	if strings.Join(said, "|") != strings.Join(want, "|") {
		t.Errorf("transcript\n got %q\nwant %q", said, want)
	}

	// The topic was told where the conversation went, and now answers
	// only with the line.
	waitFor(t, "the notice in the topic", fake.Shown, inTopic("continues in"))
	calls = len(r.model.Requests())
	fake.PushMessage(forum, topic, ownerUser, "hello topic")
	waitFor(t, "the line in the topic", fake.Shown, inTopic("/continue to bring it here"))
	testutil.Eventually(t, testutil.Patience, func() bool {
		ps, _ := r.st.Parked(ctx, topicKey)
		return len(ps) == 1 && ps[0].Text == "hello topic"
	}, "the topic's message to be kept")
	if n := len(r.model.Requests()); n != calls {
		t.Fatalf("the topic ran %d model calls", n-calls)
	}
}

// A second account linked to the owner is the owner: it gets turns, and
// /whoami lists it.
func TestLinkedAccountIsTheOwner(t *testing.T) {
	fake := telegramtest.New(t, botToken)
	r := telegramRig(t, fake, "telegram:group:-100777")
	ctx := context.Background()
	second := telegramtest.User{ID: 77, FirstName: "Owner's other phone"}
	fake.AddChat(telegramtest.Chat{ID: 77, Type: "private"})

	calls := len(r.model.Requests())
	fake.PushMessage(77, 0, second, "hello before linking")
	waitFor(t, "the pairing answer", fake.Shown, func(m telegramtest.SentMessage) bool { return m.ChatID == "77" })
	if n := len(r.model.Requests()); n != calls {
		t.Fatalf("an unlinked account got %d model calls", n-calls)
	}

	if err := owner.Link(ctx, r.st, r.owner.ID, "telegram", "77"); err != nil {
		t.Fatal(err)
	}
	r.model.Push(llmtest.Reply{Text: "Hello, other phone."})
	fake.PushMessage(77, 0, second, "hello after linking")
	waitFor(t, "the answer", fake.Shown, func(m telegramtest.SentMessage) bool { return m.ChatID == "77" && m.Plain == "Hello, other phone." })
	fake.PushMessage(77, 0, second, "/whoami")
	waitFor(t, "whoami", fake.Shown, func(m telegramtest.SentMessage) bool {
		return m.ChatID == "77" && strings.Contains(m.Plain, "telegram 77 (linked)") && strings.Contains(m.Plain, "telegram 42 (config.yaml)")
	})
}

// The owner writing in a place that holds no session is offered the one
// they were working on elsewhere; /continue there picks it up.
func TestContinueOfferOnANewPlace(t *testing.T) {
	fake := telegramtest.New(t, botToken)
	r := telegramRig(t, fake, "telegram:group:-100777")
	ctx := context.Background()
	sess := r.terminalSession(t) // "Trip planning", held by the terminal
	fake.AddChat(telegramtest.Chat{ID: ownerTG, Type: "private"})

	r.model.Push(llmtest.Reply{Text: "Hello on Telegram."})
	fake.PushMessage(ownerTG, 0, ownerUser, "hi")
	dm := func(sub string) func(telegramtest.SentMessage) bool {
		return func(m telegramtest.SentMessage) bool { return m.ChatID == "42" && strings.Contains(m.Plain, sub) }
	}
	// The offer ends the first answer, in the same message.
	answer := waitFor(t, "the answer", fake.Shown, dm("Hello on Telegram."))
	if !strings.Contains(answer.Plain, "Hello on Telegram.\n\nYou were working on «Trip planning") ||
		!strings.HasSuffix(answer.Plain, "in the terminal just now — /continue to pick it up here.") {
		t.Errorf("the first answer %q does not end with the offer", answer.Plain)
	}

	// The second message is no new place: no second offer.
	r.model.Push(llmtest.Reply{Text: "Still here."})
	fake.PushMessage(ownerTG, 0, ownerUser, "again")
	waitFor(t, "the second answer", fake.Shown, dm("Still here."))

	r.model.Push(llmtest.Reply{Text: "Picked up the trip."})
	fake.PushMessage(ownerTG, 0, ownerUser, "/continue")
	waitFor(t, "the greeting", fake.Shown, dm("Picked up the trip."))
	testutil.Eventually(t, testutil.Patience, func() bool {
		s, _ := r.st.GetSession(ctx, sess.ID)
		return s.Holder == "telegram:dm:42"
	}, "the trip to be held in the Telegram chat")
	if n := countMatching(fake.Shown(), dm("You were working on")); n != 1 {
		t.Errorf("offered %d times", n)
	}

	// A stranger is offered nothing.
	stranger := telegramtest.User{ID: 555, FirstName: "Stranger"}
	fake.AddChat(telegramtest.Chat{ID: 555, Type: "private"})
	fake.PushMessage(555, 0, stranger, "hi")
	waitFor(t, "the stranger's pairing answer", fake.Shown, func(m telegramtest.SentMessage) bool { return m.ChatID == "555" })
	if n := countMatching(fake.Shown(), func(m telegramtest.SentMessage) bool {
		return m.ChatID == "555" && (strings.Contains(m.Plain, "You were working on") || strings.Contains(m.Plain, "Trip"))
	}); n != 0 {
		t.Errorf("the stranger was offered the owner's session")
	}
}

// Approvals follow the holder: once the session moved from the page to a
// Telegram topic, a tool approval is asked in the topic, never on the
// page; an /approve typed on the page answers nothing and says where
// the conversation is; /approve in the topic lets the call run once. The
// question is stored as a delivery, sent once, and nothing of it is left
// pending after the answer.
func TestApprovalAskedWhereTheSessionIsHeld(t *testing.T) {
	var runs atomic.Int32
	fake := telegramtest.New(t, botToken)
	fake.AddChat(telegramtest.Chat{ID: forum, Type: "supergroup", Title: "baton", IsForum: true})
	r := telegramRig(t, fake, "telegram:group:-100777", func(o *rigOpts) { o.tools = touchTool(t, &runs) })
	pg := r.openPage(t)
	ctx := context.Background()
	key := web.Home.Key()

	r.model.Push(llmtest.Reply{Text: "Hello from the page."}, llmtest.Reply{Text: "Hi on Telegram."})
	pg.send(map[string]any{"type": "say", "key": key, "text": "hi", "id": "p1"})
	pg.await("the answer", isMsg("Hello from the page."))
	pg.send(map[string]any{"type": "say", "key": key, "text": "/handoff telegram", "id": "p2"})
	pg.await("the outcome", isMsg("now continues in Telegram"))
	topics := fake.Topics()
	if len(topics) != 1 {
		t.Fatalf("topics %+v", topics)
	}
	topic := topics[0].ThreadID
	inTopic := func(sub string) func(telegramtest.SentMessage) bool {
		return func(m telegramtest.SentMessage) bool { return m.ThreadID == topic && strings.Contains(m.Plain, sub) }
	}
	waitFor(t, "the greeting", fake.Shown, inTopic("Hi on Telegram."))
	b, _ := r.st.LookupBinding(ctx, key)
	topicKey := fmt.Sprintf("telegram:thread:%d:%d", forum, topic)
	if s, _ := r.st.GetSession(ctx, b.SessionID); s.Holder != topicKey {
		t.Fatalf("holder %q, want the topic", s.Holder)
	}

	// A turn in the topic needs approval: asked there.
	r.model.Push(llmtest.Reply{ToolCalls: []llmtest.Call{{Name: "touch", Args: `{}`}}}, llmtest.Reply{Text: "Touched it."})
	fake.PushMessage(forum, topic, ownerUser, "touch the notes")
	waitFor(t, "the question in the topic", fake.Shown, inTopic("May I run"))

	// The page, not holding the session, cannot answer it.
	pg.send(map[string]any{"type": "say", "key": key, "text": "/approve", "id": "p3"})
	pg.await("where it is", func(f map[string]any) bool {
		if isMsg("May I run")(f) {
			t.Errorf("the question was asked on the page: %v", f["text"])
		}
		return isMsg("Nothing is waiting for approval here. This conversation is in Telegram now")(f)
	})
	if runs.Load() != 0 {
		t.Fatalf("an /approve from the page ran the tool")
	}

	fake.PushMessage(forum, topic, ownerUser, "/approve")
	waitFor(t, "the answer in the topic", fake.Shown, inTopic("Touched it."))
	if runs.Load() != 1 {
		t.Fatalf("tool ran %d times after /approve", runs.Load())
	}
	questions := 0
	for _, m := range fake.Shown() {
		if strings.Contains(m.Plain, "May I run") {
			questions++
			if m.ThreadID != topic {
				t.Errorf("a question outside the topic: %+v", m)
			}
		}
	}
	if questions != 1 {
		t.Errorf("the question was sent %d times", questions)
	}
	testutil.Eventually(t, testutil.Patience, func() bool {
		pending, err := r.st.PendingDeliveries(ctx, topicKey, 0)
		return err == nil && len(pending) == 0
	}, "nothing left pending in the topic")
	// A later /approve in the topic finds nothing waiting.
	fake.PushMessage(forum, topic, ownerUser, "/approve")
	waitFor(t, "nothing waiting", fake.Shown, inTopic("Nothing is waiting for approval."))
}

// A /continue is recorded as coming from the place that held the
// session when it was asked, not from its destination: the handoff's
// origin, and the words the model is given.
func TestContinueRecordsTheHolderAsOrigin(t *testing.T) {
	fake := telegramtest.New(t, botToken)
	fake.AddChat(telegramtest.Chat{ID: forum, Type: "supergroup", Title: "baton", IsForum: true})
	r := telegramRig(t, fake, "telegram:group:-100777")
	pg := r.openPage(t)
	ctx := context.Background()
	key := web.Home.Key()

	b := pageToTelegram(t, r, pg, "o1")

	r.model.Push(llmtest.Reply{Text: "Back on the page."})
	pg.send(map[string]any{"type": "say", "key": key, "text": "/continue", "id": "o3"})
	pg.await("the greeting back", isMsg("Back on the page."))
	h, err := r.st.HandoffState(ctx, b.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	if h.FromPlatform != "telegram" || h.Platform != "web" {
		t.Errorf("the /continue is recorded from %q to %q, want from telegram to web", h.FromPlatform, h.Platform)
	}
	msgs, _ := r.st.Transcript(ctx, b.SessionID)
	var said string
	for _, m := range msgs {
		if m.Kind == store.KindHandoff {
			said = m.Content
		}
	}
	if !strings.Contains(said, "handed off from Telegram to the web chat") {
		t.Errorf("the model is told %q", said)
	}
	// The topic it left is told, as after any move.
	topic := fake.Topics()[0].ThreadID
	waitFor(t, "the notice in the topic", fake.Shown, func(m telegramtest.SentMessage) bool {
		return m.ThreadID == topic && strings.Contains(m.Plain, "continues in the web chat now")
	})
}

// While a handoff out of the page is pending (/handoff cli, not yet
// picked up), the page runs no turn: what is typed is kept, and /where
// says where the conversation is going. Once the terminal takes it the
// page is told at once, and a page opened afterwards ends with where it is.
func TestPendingHandoffOutOfThePage(t *testing.T) {
	r := newRig(t, rigOpts{})
	pg := r.openPage(t)
	ctx := context.Background()
	key := web.Home.Key()

	r.model.Push(llmtest.Reply{Text: "Hello from the page."})
	pg.send(map[string]any{"type": "say", "key": key, "text": "hi", "id": "q1"})
	pg.await("the answer", isMsg("Hello from the page."))
	pg.send(map[string]any{"type": "say", "key": key, "text": "/handoff cli", "id": "q2"})
	pg.await("the handoff", isMsg("Handing off to the terminal."))
	b, _ := r.st.LookupBinding(ctx, key)
	sid := b.SessionID

	calls := len(r.model.Requests())
	pg.send(map[string]any{"type": "say", "key": key, "text": "one more thing", "id": "q3"})
	pg.await("the line", isMsg("This conversation is on its way to the terminal"))
	pg.send(map[string]any{"type": "say", "key": key, "text": "/retry", "id": "q4"})
	pg.await("retry refused", isMsg("This conversation is on its way to the terminal"))
	pg.send(map[string]any{"type": "say", "key": key, "text": "/where", "id": "q5"})
	pg.await("where", isMsg("is on its way to the terminal"))
	if n := len(r.model.Requests()); n != calls {
		t.Fatalf("the page ran %d model calls while its session was leaving", n-calls)
	}
	testutil.Eventually(t, testutil.Patience, func() bool {
		ps, _ := r.st.Parked(ctx, key)
		return len(ps) == 1 && ps[0].Text == "one more thing"
	}, "the message to be kept")

	// The terminal picks it up, as `baton resume` does: it completes the
	// handoff, stores the notice for the page and kicks the gateway.
	h, _ := r.st.HandoffState(ctx, sid)
	const claimer = "cli:test"
	if _, ok, err := r.st.ClaimHandoff(ctx, h.ID, claimer, time.Minute); err != nil || !ok {
		t.Fatalf("claim: %v %v", ok, err)
	}
	cliKey := "cli:dm:" + r.owner.ID
	if ok, err := r.st.SetHandoffDestination(ctx, h.ID, claimer, cliKey); err != nil || !ok {
		t.Fatalf("destination: %v %v", ok, err)
	}
	if ok, err := r.st.CompleteHandoff(ctx, h.ID, claimer); err != nil || !ok {
		t.Fatalf("complete: %v %v", ok, err)
	}
	if _, err := r.st.EnqueueDeliveries(ctx, store.Delivery{Key: fmt.Sprintf("handoff:%d:left:part:0", h.ID), AddressKey: key,
		Text: "This conversation continues in the terminal now. /continue to bring it back here."}); err != nil {
		t.Fatal(err)
	}
	r.gw.Kick()
	pg.await("the notice", isMsg("This conversation continues in the terminal now."))

	// A page opened now ends with where the conversation is.
	again := r.openPage(t)
	again.send(map[string]any{"type": "open", "key": key})
	hist := again.await("the history", typ("history"))
	lines, _ := hist["lines"].([]any)
	if len(lines) == 0 {
		t.Fatalf("history %v", hist)
	}
	last, _ := lines[len(lines)-1].(map[string]any)
	if text, _ := last["text"].(string); !strings.Contains(text, "This conversation is in the terminal now, since") {
		t.Errorf("the history ends with %v", last)
	}
}

// A message a terminal keeps (an inbound row of the terminal's own) is
// the terminal's to answer: a gateway starting with one stored, as after
// a terminal stopped between storing and parking it, runs nothing for it.
func TestGatewayLeavesTheTerminalsKeptMessages(t *testing.T) {
	r := newRig(t, rigOpts{beforeRun: func(st store.Store, owner store.User) {
		if _, _, err := st.AddInbound(context.Background(), store.Inbound{Platform: "cli", AddressKey: "cli:thread:" + owner.ID + ":s1", SenderID: owner.ID, Text: "kept in a terminal"}); err != nil {
			t.Fatal(err)
		}
	}})
	pg := r.openPage(t)
	r.model.Push(llmtest.Reply{Text: "Hello from the page."})
	pg.send(map[string]any{"type": "say", "key": web.Home.Key(), "text": "hi", "id": "k1"})
	pg.await("the answer", isMsg("Hello from the page."))
	ss, _ := r.st.ListSessions(context.Background(), store.SessionFilter{})
	if len(ss) != 1 || len(r.model.Requests()) != 1 {
		t.Errorf("the gateway ran the terminal's kept message: %d sessions, %d model calls", len(ss), len(r.model.Requests()))
	}
}

// A place that loses its session to another place on the same service
// (a Telegram topic, to the owner's direct chat with /continue) is told
// at once where it went, like any other.
func TestTopicIsToldWhenTheDirectChatTakesIt(t *testing.T) {
	fake := telegramtest.New(t, botToken)
	fake.AddChat(telegramtest.Chat{ID: forum, Type: "supergroup", Title: "baton", IsForum: true})
	fake.AddChat(telegramtest.Chat{ID: ownerTG, Type: "private"})
	r := telegramRig(t, fake, "telegram:group:-100777")
	pg := r.openPage(t)
	ctx := context.Background()
	key := web.Home.Key()

	r.model.Push(llmtest.Reply{Text: "Hello from the page."}, llmtest.Reply{Text: "Hi in the topic."})
	pg.send(map[string]any{"type": "say", "key": key, "text": "hi", "id": "t1"})
	pg.await("the answer", isMsg("Hello from the page."))
	pg.send(map[string]any{"type": "say", "key": key, "text": "/handoff telegram", "id": "t2"})
	pg.await("the outcome", isMsg("now continues in Telegram."))
	topic := fake.Topics()[0].ThreadID
	b, _ := r.st.LookupBinding(ctx, key)
	topicKey := fmt.Sprintf("telegram:thread:%d:%d", forum, topic)
	testutil.Eventually(t, testutil.Patience, func() bool {
		s, _ := r.st.GetSession(ctx, b.SessionID)
		return s.Holder == topicKey
	}, "the topic to hold the session")

	r.model.Push(llmtest.Reply{Text: "Hi in the direct chat."})
	fake.PushMessage(ownerTG, 0, ownerUser, "/continue")
	waitFor(t, "the greeting in the direct chat", fake.Shown, func(m telegramtest.SentMessage) bool {
		return m.ChatID == "42" && strings.Contains(m.Plain, "Hi in the direct chat.")
	})
	waitFor(t, "the notice in the topic", fake.Shown, func(m telegramtest.SentMessage) bool {
		return m.ThreadID == topic && strings.Contains(m.Plain, "This conversation continues in Telegram now.")
	})
}

// Only the place holding a session sends it on: /handoff typed where it
// is not held says where it is and moves nothing.
func TestHandoffOnlyFromTheHolder(t *testing.T) {
	fake := telegramtest.New(t, botToken)
	fake.AddChat(telegramtest.Chat{ID: forum, Type: "supergroup", Title: "baton", IsForum: true})
	r := telegramRig(t, fake, "telegram:group:-100777")
	pg := r.openPage(t)
	ctx := context.Background()
	key := web.Home.Key()

	b := pageToTelegram(t, r, pg, "h1")
	before, _ := r.st.HandoffState(ctx, b.SessionID)

	pg.send(map[string]any{"type": "say", "key": key, "text": "/handoff cli", "id": "h3"})
	pg.await("where it is", isMsg("This conversation is in Telegram now, since"))
	if h, _ := r.st.HandoffState(ctx, b.SessionID); h.ID != before.ID {
		t.Errorf("a place not holding the session handed it off: %+v", h)
	}
}

// pageToTelegram says hi on the page's home conversation, hands it off to
// Telegram with /handoff, and waits for the topic to hold the session; the
// page's two messages take ids prefix+"1" and prefix+"2".
func pageToTelegram(t *testing.T, r *rig, pg *page, first string) store.Binding {
	t.Helper()
	ctx := context.Background()
	key := web.Home.Key()
	second := first[:len(first)-1] + "2"
	r.model.Push(llmtest.Reply{Text: "Hello from the page."}, llmtest.Reply{Text: "Hi on Telegram."})
	pg.send(map[string]any{"type": "say", "key": key, "text": "hi", "id": first})
	pg.await("the answer", isMsg("Hello from the page."))
	pg.send(map[string]any{"type": "say", "key": key, "text": "/handoff telegram", "id": second})
	pg.await("the outcome", isMsg("now continues in Telegram."))
	b, err := r.st.LookupBinding(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, testutil.Patience, func() bool {
		s, _ := r.st.GetSession(ctx, b.SessionID)
		return strings.HasPrefix(s.Holder, "telegram:")
	}, "the topic to hold the session")
	return b
}
