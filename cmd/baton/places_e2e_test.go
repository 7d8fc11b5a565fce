package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/baton-agent/baton/internal/platform/telegram/telegramtest"
	"github.com/baton-agent/baton/internal/store"
	"github.com/baton-agent/baton/internal/testutil"
)

// TestEveryPlaceKnowsWhereItIs is the one-place must-show with every
// place left open: `baton gateway` with the Telegram fake and the web
// chat, a terminal in a pty that stays open throughout, and the page in
// headless Chromium. One session goes terminal → web → Telegram →
// terminal; at each move every other open place shows at once, with
// nothing typed there, where the conversation went. What is typed where
// it is not (the terminal, a topic it is leaving) is kept and answered
// once it is there.
func TestEveryPlaceKnowsWhereItIs(t *testing.T) {
	chromium(t)
	const forum = -100777
	pr := newPlacesRig(t, "123456:every-place", forum)
	fake, owner, srv, env, work, gw, st := pr.fake, pr.owner, pr.srv, pr.env, pr.work, pr.gw, pr.st
	session := func(id string) store.Session { return pr.session(t, id) }
	modelCalls := func() int { return len(srv.Requests()) }

	// The terminal starts the conversation and stays open.
	tm := startTerm(t, env, work)
	tm.line("hello from the desk")
	tm.expect("echo: hello from the desk")
	ss, err := st.ListSessions(t.Context(), store.SessionFilter{})
	if err != nil || len(ss) != 1 {
		t.Fatalf("sessions %+v %v", ss, err)
	}
	sid := ss[0].ID

	// 1. terminal → web: /continue on the page takes it; the terminal,
	// idle at its prompt, is told at once.
	page := browser(t)
	if err := chromedp.Do(page, chromedp.Navigate(gw.webURL)); err != nil {
		t.Fatal(err)
	}
	pageSay(page, t, "/continue")
	pageText(page, t, "Hello, picked up here.")
	tm.expect("This conversation continues in the web chat now. /continue to bring it back here.")
	testutil.Eventually(t, hangGuard, func() bool { return strings.HasPrefix(session(sid).Holder, "web:") }, "the page to hold the session")

	// 2. web → Telegram: /handoff telegram on the page; the page hears the
	// outcome, the topic is greeted, the terminal is told at once.
	pageSay(page, t, "/handoff telegram")
	pageText(page, t, "now continues in Telegram")
	topics := fake.Topics()
	if len(topics) != 1 {
		t.Fatalf("topics %+v", topics)
	}
	topic := topics[0].ThreadID
	inTopic := func(sub string) func(telegramtest.SentMessage) bool {
		return func(m telegramtest.SentMessage) bool { return m.ThreadID == topic && strings.Contains(m.Plain, sub) }
	}
	waitSent(t, fake, "the greeting in the topic", inTopic("Hello, picked up here."))
	tm.expect("This conversation is in Telegram now, since")
	topicKey := fmt.Sprintf("telegram:thread:%d:%d", forum, topic)
	testutil.Eventually(t, hangGuard, func() bool { return session(sid).Holder == topicKey }, "the topic to hold the session")

	// 3. Telegram → terminal: /handoff cli in the topic. The terminal is
	// told at once it is on its way there; the topic runs no turn
	// meanwhile and keeps what is typed; so does the terminal.
	fake.PushMessage(forum, topic, owner, "/handoff cli")
	waitSent(t, fake, "the handoff in the topic", inTopic("Handing off to the terminal"))
	tm.expect("is on its way to the terminal. /continue picks it up here.")
	calls := modelCalls()
	fake.PushMessage(forum, topic, owner, "one more thing from the phone")
	waitSent(t, fake, "the line in the topic", inTopic("This conversation is on its way to the terminal"))
	if n := modelCalls(); n != calls {
		t.Errorf("the topic ran %d model calls while the session was leaving it", n-calls)
	}
	tm.line("typed while it travels")
	tm.expect("is on its way to the terminal. /continue picks it up here.")
	tm.expect("(kept: answered once /continue brings the conversation here)")
	if n := modelCalls(); n != calls {
		t.Errorf("the terminal ran %d model calls while the session was not here", n-calls)
	}

	// The terminal picks it up: the note, then what it kept, answered;
	// the topic is told at once.
	tm.line("/continue")
	tm.expect("here from Telegram.")
	tm.expect("Handoff note")
	tm.expect("echo: typed while it travels")
	waitSent(t, fake, "the notice in the topic", inTopic("This conversation continues in the terminal now."))
	tm.line("back at the desk")
	tm.expect("echo: back at the desk")
	if h := session(sid).Holder; !strings.HasPrefix(h, "cli:") {
		t.Fatalf("holder after /continue in the terminal: %q", h)
	}

	// A page opened now says where the conversation is.
	if err := chromedp.Do(page, chromedp.Navigate(gw.webURL)); err != nil {
		t.Fatal(err)
	}
	pageText(page, t, "This conversation is in the terminal now, since")

	// Each move is recorded from where the session was to where it went.
	var moves []string
	for id := int64(1); ; id++ {
		h, err := st.GetHandoff(t.Context(), id)
		if err != nil {
			break
		}
		if h.SessionID == sid && h.State == store.HandoffCompleted {
			moves = append(moves, h.FromPlatform+"→"+h.Platform)
		}
	}
	if got := strings.Join(moves, " "); got != "cli→web web→telegram telegram→cli" {
		t.Errorf("moves recorded as %s", got)
	}
	if ps, _ := st.Parked(t.Context(), topicKey); len(ps) != 1 || ps[0].Text != "one more thing from the phone" {
		t.Errorf("kept in the topic: %+v", ps)
	}
	tm.line("/quit")
	if err := tm.wait(); err != nil {
		t.Fatalf("quit: %v\n%s", err, tm.Screen())
	}
}
