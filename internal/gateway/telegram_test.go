package gateway_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/gateway/control"
	"github.com/baton-agent/baton/internal/llm/llmtest"
	"github.com/baton-agent/baton/internal/platform"
	"github.com/baton-agent/baton/internal/platform/telegram"
	"github.com/baton-agent/baton/internal/platform/telegram/telegramtest"
	"github.com/baton-agent/baton/internal/platform/web"
	"github.com/baton-agent/baton/internal/store"
	"github.com/baton-agent/baton/internal/testutil"
)

const (
	botToken = "123456:test-token"
	ownerTG  = 42
	forum    = -100777
)

var ownerUser = telegramtest.User{ID: ownerTG, FirstName: "Owner"}

func telegramRig(t *testing.T, fake *telegramtest.Server, home string) *rig {
	t.Helper()
	tg, err := telegram.New(telegram.Config{Token: botToken, ServerURL: fake.URL(), PollTimeout: time.Second,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	r := newRig(t, rigOpts{
		extra:  []platform.Adapter{tg},
		owners: map[string][]string{"telegram": {"42"}},
		homes:  map[string]string{"web": web.Home.Key(), "telegram": home},
	})
	r.waitLive(t, "telegram")
	return r
}

// sentWhere waits for a message the bot sent that matches.
func sentWhere(t *testing.T, fake *telegramtest.Server, what string, match func(telegramtest.SentMessage) bool) telegramtest.SentMessage {
	t.Helper()
	var found telegramtest.SentMessage
	if !testutil.Poll(testutil.Context(t, 0), func() bool {
		for _, m := range fake.Shown() {
			if match(m) {
				found = m
				return true
			}
		}
		return false
	}) {
		t.Fatalf("the bot never sent %s; it sent %+v", what, fake.Shown())
	}
	return found
}

func countSent(fake *telegramtest.Server, match func(telegramtest.SentMessage) bool) int {
	n := 0
	for _, m := range fake.Shown() {
		if match(m) {
			n++
		}
	}
	return n
}

func TestTelegramHandoffTopicAndBack(t *testing.T) {
	fake := telegramtest.New(t, botToken)
	fake.AddChat(telegramtest.Chat{ID: forum, Type: "supergroup", Title: "baton", IsForum: true})
	r := telegramRig(t, fake, "telegram:group:-100777")
	sess := r.terminalSession(t)
	ctx := context.Background()

	// Terminal → /handoff telegram: a topic named after the session, the
	// agent's confirmation in it.
	r.model.Push(llmtest.Reply{Text: "Hi on Telegram — we were booking the 9:40 train."})
	h, err := r.client.RequestHandoff(ctx, control.HandoffRequest{SessionID: sess.ID, From: "cli", To: "telegram"})
	if err != nil {
		t.Fatal(err)
	}
	final, err := r.client.Watch(ctx, h.ID, nil)
	if err != nil || final.State != "completed" {
		t.Fatalf("handoff %+v %v", final, err)
	}
	topics := fake.Topics()
	if len(topics) != 1 || !strings.HasPrefix(topics[0].Name, "Trip planning") {
		t.Fatalf("topics %+v", topics)
	}
	topic := topics[0].ThreadID
	dest, err := platform.ParseKey(final.Destination)
	if err != nil || dest.Kind != platform.Thread || dest.Thread != itoa(int64(topic)) {
		t.Fatalf("destination %q (%v), topic %d", final.Destination, err, topic)
	}
	// The terminal gets the topic's t.me address to open.
	if want := "https://t.me/c/777/" + itoa(int64(topic)); final.Link != want {
		t.Errorf("link %q, want %q", final.Link, want)
	}
	inTopic := func(sub string) func(telegramtest.SentMessage) bool {
		return func(m telegramtest.SentMessage) bool { return m.ThreadID == topic && strings.Contains(m.Plain, sub) }
	}
	sentWhere(t, fake, "the confirmation in the topic", inTopic("Hi on Telegram"))

	// The person's reply in the topic continues the same session.
	r.model.Push(llmtest.Reply{Text: "Done, it is booked."})
	fake.PushMessage(forum, topic, ownerUser, "book it please")
	sentWhere(t, fake, "the answer", inTopic("Done, it is booked."))
	msgs := settled(t, r, sess.ID, "Done, it is booked.")
	if m := msgs[len(msgs)-2]; m.Content != "book it please" || m.Platform != "telegram" {
		t.Fatalf("the topic's message went to %+v", m)
	}

	// A 429 with retry_after delays delivery, then everything arrives once.
	fake.FailNext("sendMessage", 429, 1)
	r.model.Push(llmtest.Reply{Text: "Rate-limited but delivered."})
	fake.PushMessage(forum, topic, ownerUser, "and now?")
	sentWhere(t, fake, "the rate-limited answer", inTopic("Rate-limited but delivered."))
	if n := countSent(fake, inTopic("Rate-limited but delivered.")); n != 1 {
		t.Errorf("the rate-limited answer was posted %d times", n)
	}

	// A repeated update is answered once: same update id, and the same
	// message under a new update id.
	r.model.Push(llmtest.Reply{Text: "Answer to the repeated message."})
	upd, msgID := fake.PushMessage(forum, topic, ownerUser, "repeated message")
	sentWhere(t, fake, "the answer to the repeated message", inTopic("Answer to the repeated message."))
	fake.PushUpdate(map[string]any{"update_id": upd, "message": map[string]any{
		"message_id": msgID, "message_thread_id": topic, "is_topic_message": true, "date": time.Now().Unix(), "text": "repeated message",
		"chat": map[string]any{"id": forum, "type": "supergroup", "title": "baton", "is_forum": true},
		"from": map[string]any{"id": ownerTG, "is_bot": false, "first_name": "Owner"},
	}})
	fake.PushMessageID(forum, topic, ownerUser, "repeated message", msgID)
	// A marker message after the repeats: once it is answered, the
	// repeats were processed (or dropped) before it.
	r.model.Push(llmtest.Reply{Text: "Marker answered."})
	fake.PushMessage(forum, topic, ownerUser, "marker")
	sentWhere(t, fake, "the marker's answer", inTopic("Marker answered."))
	if n := countSent(fake, inTopic("Answer to the repeated message.")); n != 1 {
		t.Errorf("a repeated update was answered %d times", n)
	}
	users := 0
	msgs = settled(t, r, sess.ID, "Marker answered.")
	for _, m := range msgs {
		if m.Content == "repeated message" {
			users++
		}
	}
	if users != 1 {
		t.Errorf("the repeated message is in the transcript %d times", users)
	}

	// In a direct chat, a stranger's /start gets a pairing code, there only.
	sentBefore := len(fake.Shown())
	fake.PushMessage(99, 0, telegramtest.User{ID: 99, FirstName: "Eve"}, "/start")
	sentWhere(t, fake, "the refusal", func(m telegramtest.SentMessage) bool {
		return m.ChatID == "99" && strings.Contains(m.Plain, "Your pairing code is")
	})
	for _, m := range fake.Shown()[sentBefore:] {
		if m.ChatID != "99" {
			t.Errorf("the bot answered the stranger elsewhere: %+v", m)
		}
	}
	if got := fake.Commands(); len(got) == 0 || !strings.Contains(string(got[len(got)-1]), "handoff") {
		t.Errorf("command menu not published: %s", got)
	}
}

// Against a Bot API server that supports none of the optional methods, a
// handoff lands in the home chat and completes.
func TestTelegramHandoffWithoutOptionalMethods(t *testing.T) {
	fake := telegramtest.New(t, botToken)
	fake.Unsupported("createForumTopic", "sendChatAction", "setMyCommands", "editMessageText")
	r := telegramRig(t, fake, "telegram:dm:42")
	sess := r.terminalSession(t)
	ctx := context.Background()

	r.model.Push(llmtest.Reply{Text: "Landed in your DM."})
	h, err := r.client.RequestHandoff(ctx, control.HandoffRequest{SessionID: sess.ID, From: "cli", To: "telegram"})
	if err != nil {
		t.Fatal(err)
	}
	final, err := r.client.Watch(ctx, h.ID, nil)
	if err != nil || final.State != "completed" || final.Destination != "telegram:dm:42" {
		t.Fatalf("handoff %+v %v", final, err)
	}
	sentWhere(t, fake, "the confirmation in the DM", func(m telegramtest.SentMessage) bool {
		return m.ChatID == "42" && m.ThreadID == 0 && strings.Contains(m.Plain, "Landed in your DM.")
	})
	// The DM is bound to the session: a reply there continues it.
	r.model.Push(llmtest.Reply{Text: "Still the same session."})
	fake.PushMessage(ownerTG, 0, ownerUser, "hello again")
	sentWhere(t, fake, "the answer", func(m telegramtest.SentMessage) bool { return strings.Contains(m.Plain, "Still the same session.") })
	msgs := settled(t, r, sess.ID, "Still the same session.")
	if msgs[len(msgs)-2].Content != "hello again" {
		t.Fatalf("the DM's message went elsewhere: %+v", msgs[len(msgs)-2])
	}
}

// /handoff <platform> typed in one chat moves the session to another.
func TestChatToChatHandoff(t *testing.T) {
	fake := telegramtest.New(t, botToken)
	fake.AddChat(telegramtest.Chat{ID: forum, Type: "supergroup", Title: "baton", IsForum: true})
	r := telegramRig(t, fake, "telegram:group:-100777")
	pg := r.openPage(t)
	ctx := context.Background()

	r.model.Push(llmtest.Reply{Text: "Noted from the web."})
	pg.send(map[string]any{"type": "say", "key": web.Home.Key(), "text": "note this down", "id": "w1"})
	pg.await("answer", func(f map[string]any) bool { return f["type"] == "message" && f["text"] == "Noted from the web." })
	b, err := r.st.LookupBinding(ctx, web.Home.Key())
	if err != nil {
		t.Fatal(err)
	}

	// A handoff left waiting for the terminal is replaced by the new one.
	pg.send(map[string]any{"type": "say", "key": web.Home.Key(), "text": "/handoff cli", "id": "w1b"})
	pg.await("waiting for the terminal", func(f map[string]any) bool {
		return f["type"] == "message" && strings.Contains(f["text"].(string), "Handing off to the terminal")
	})
	waiting, _ := r.st.HandoffState(ctx, b.SessionID)

	r.model.Push(llmtest.Reply{Text: "Here on Telegram now."})
	pg.send(map[string]any{"type": "say", "key": web.Home.Key(), "text": "/handoff telegram", "id": "w2"})
	pg.await("handoff answer", func(f map[string]any) bool {
		return f["type"] == "message" && strings.Contains(f["text"].(string), "Handing off to Telegram")
	})
	msg := sentWhere(t, fake, "the greeting in a new topic", func(m telegramtest.SentMessage) bool { return strings.Contains(m.Plain, "Here on Telegram now.") })
	if msg.ThreadID == 0 || len(fake.Topics()) != 1 {
		t.Fatalf("greeting %+v, topics %+v", msg, fake.Topics())
	}
	h, _ := r.st.HandoffState(ctx, b.SessionID)
	final, err := r.client.Watch(ctx, h.ID, nil) // the greeting is sent just before completion
	if err != nil || final.State != "completed" || h.FromPlatform != "web" || h.Platform != "telegram" {
		t.Fatalf("handoff %+v, final %+v, %v", h, final, err)
	}
	// The web chat hears where the conversation went.
	pg.await("the outcome", func(f map[string]any) bool {
		return f["type"] == "message" && strings.Contains(f["text"].(string), "now continues in Telegram")
	})
	old, _ := r.st.GetHandoff(ctx, waiting.ID)
	if waiting.Platform != "cli" || old.State != store.HandoffFailed || !strings.Contains(old.Error, "replaced by a handoff to telegram") {
		t.Errorf("the handoff that waited for the terminal: %+v", old)
	}
}

// A reply Telegram refuses for good (403: the bot was blocked) is
// abandoned, not retried forever, and does not hold back later replies.
func TestPermanentSendFailureDoesNotBlock(t *testing.T) {
	fake := telegramtest.New(t, botToken)
	r := telegramRig(t, fake, "telegram:dm:42")
	ctx := context.Background()

	fake.Forbid("This one is refused.")
	r.model.Push(llmtest.Reply{Text: "This one is refused."})
	fake.PushMessage(ownerTG, 0, ownerUser, "first")
	testutil.Eventually(t, 0, func() bool { return fake.CallCount("sendMessage") >= 1 }, "the refused reply to be tried")
	r.model.Push(llmtest.Reply{Text: "This one arrives."})
	fake.PushMessage(ownerTG, 0, ownerUser, "second")
	sentWhere(t, fake, "the second reply", func(m telegramtest.SentMessage) bool { return strings.Contains(m.Plain, "This one arrives.") })
	if n := countSent(fake, func(m telegramtest.SentMessage) bool { return strings.Contains(m.Plain, "refused") }); n != 0 {
		t.Errorf("the refused reply was posted %d times", n)
	}
	// Both answers are in the transcript: nothing the agent said is lost.
	b, _ := r.st.LookupBinding(ctx, "telegram:dm:42")
	msgs := settled(t, r, b.SessionID, "This one arrives.")
	waitAllSent(t, r.st)
	var said []string
	for _, m := range msgs {
		said = append(said, m.Content)
	}
	if strings.Join(said, "|") != "first|This one is refused.|second|This one arrives." {
		t.Errorf("transcript %q", said)
	}
}

// A bot whose token Telegram refuses is never live: its error shows in the
// status and handoffs to it are refused.
func TestTelegramWithRefusedTokenIsNotLive(t *testing.T) {
	fake := telegramtest.New(t, botToken)
	tg, err := telegram.New(telegram.Config{Token: "999:wrong", ServerURL: fake.URL(), PollTimeout: time.Second,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	r := newRig(t, rigOpts{extra: []platform.Adapter{tg}, homes: map[string]string{"web": web.Home.Key(), "telegram": "telegram:dm:42"}})
	ctx := context.Background()
	p := r.waitPlatform(t, "telegram", "reported an error", func(p control.Platform) bool { return p.Live || p.Error != "" })
	if p.Live {
		t.Fatalf("a bot with a refused token is reported live: %+v", p)
	}
	if strings.Contains(p.Error, "999:wrong") {
		t.Errorf("the token leaked into the status: %q", p.Error)
	}
	sess := r.terminalSession(t)
	_, err = r.client.RequestHandoff(ctx, control.HandoffRequest{SessionID: sess.ID, From: "cli", To: "telegram"})
	if !errors.Is(err, control.ErrNotLive) {
		t.Fatalf("handoff to a bot that is not live: %v", err)
	}
}

// Three strangers holding every waiting pairing place do not keep a
// fourth out: the fourth gets a code, the oldest code makes room, and its
// holder is not handed a new one at once.
func TestStrangersCannotFillThePairingDoor(t *testing.T) {
	fake := telegramtest.New(t, botToken)
	telegramRig(t, fake, "telegram:group:-100777")
	codeFor := func(id int64) telegramtest.SentMessage {
		return sentWhere(t, fake, fmt.Sprintf("a pairing code to %d", id), func(m telegramtest.SentMessage) bool {
			return m.ChatID == fmt.Sprint(id) && strings.Contains(m.Plain, "Your pairing code is")
		})
	}
	for id := int64(91); id <= 93; id++ {
		fake.PushMessage(id, 0, telegramtest.User{ID: id, FirstName: "Stranger"}, "/start")
		codeFor(id)
	}
	friend := telegramtest.User{ID: 94, FirstName: "Friend"}
	fake.PushMessage(94, 0, friend, "hi, it's me")
	codeFor(94)
	fake.PushMessage(91, 0, telegramtest.User{ID: 91, FirstName: "Stranger"}, "/start")
	sentWhere(t, fake, "the first stranger told their code ran out", func(m telegramtest.SentMessage) bool {
		return m.ChatID == "91" && strings.Contains(m.Plain, "ran out without an approval")
	})
	if n := countSent(fake, func(m telegramtest.SentMessage) bool {
		return m.ChatID == "91" && strings.Contains(m.Plain, "Your pairing code is")
	}); n != 1 {
		t.Errorf("the first stranger was given %d codes", n)
	}
}
