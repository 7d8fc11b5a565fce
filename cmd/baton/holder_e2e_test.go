package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/baton-agent/baton/internal/gateway/control"
	"github.com/baton-agent/baton/internal/llm/llmtest"
	"github.com/baton-agent/baton/internal/platform/telegram/telegramtest"
	"github.com/baton-agent/baton/internal/store"
	"github.com/baton-agent/baton/internal/store/sqlite"
	"github.com/baton-agent/baton/internal/testutil"
)

// TestOneHolderTerminalTelegramWebTerminal is the one-place must-show,
// with real processes: `baton gateway` with the Telegram fake and the web
// chat; one session goes terminal → Telegram topic → web page (headless
// Chromium) → terminal. Each move stores its note; a place left behind
// answers only with where the conversation is and runs no turn. A message
// typed in the old web conversation is kept and carried along by
// /continue there; then `baton -c` asks to move it back and yes does,
// telling the page.
func TestOneHolderTerminalTelegramWebTerminal(t *testing.T) {
	chromium(t)
	const forum = -100777
	pr := newPlacesRig(t, "123456:one-holder", forum)
	fake, owner, srv, env, work, gw, st := pr.fake, pr.owner, pr.srv, pr.env, pr.work, pr.gw, pr.st
	holder := func(id string) store.Session { return pr.session(t, id) }
	modelCalls := func() int { return len(srv.Requests()) }

	// 1. The terminal: a turn, then /handoff telegram.
	tm := startTerm(t, env, work)
	tm.line("hello from the desk")
	tm.expect("echo: hello from the desk")
	tm.line("/handoff telegram")
	tm.expect("This conversation now continues in Telegram")
	if err := tm.wait(); err != nil {
		t.Fatalf("the terminal did not detach: %v\n%s", err, tm.Screen())
	}
	sid, topic, inTopic := landedInTopic(t, st, fake)
	if h := holder(sid).Holder; h != fmt.Sprintf("telegram:thread:%d:%d", forum, topic) {
		t.Fatalf("holder after /handoff telegram: %q", h)
	}

	// 2. Telegram: a turn in the topic, then /handoff web.
	fake.PushMessage(forum, topic, owner, "hello from the phone")
	waitSent(t, fake, "the answer in the topic", inTopic("echo: hello from the phone"))
	fake.PushMessage(forum, topic, owner, "/handoff web")
	waitSent(t, fake, "the outcome in the topic", inTopic("now continues in the web chat"))
	testutil.Eventually(t, hangGuard, func() bool { return strings.HasPrefix(holder(sid).Holder, "web:") }, "the web chat to hold the session")
	webKey := holder(sid).Holder

	// 3. The web page shows the whole conversation and runs a turn.
	ctx := browser(t)
	if err := chromedp.Do(ctx, chromedp.Navigate(gw.webURL)); err != nil {
		t.Fatal(err)
	}
	text := pageText(ctx, t, "Hello, picked up here.\n")
	assertInOrder(t, text, "hello from the desk", "echo: hello from the desk", "Hello, picked up here.",
		"hello from the phone", "echo: hello from the phone", "Handoff note", "Hello, picked up here.")
	pageSay(ctx, t, "hello from the browser")
	pageText(ctx, t, "echo: hello from the browser")

	// The topic, left behind, answers with one line and runs no turn.
	calls := modelCalls()
	fake.PushMessage(forum, topic, owner, "anyone in the topic?")
	waitSent(t, fake, "the line in the topic", inTopic("This conversation is in the web chat now, since"))
	if n := modelCalls(); n != calls {
		t.Errorf("the old topic ran %d model calls", n-calls)
	}

	// 4. /handoff cli from the page; the terminal takes it on Enter.
	pageSay(ctx, t, "/handoff cli")
	pageText(ctx, t, "Handing off to the terminal")
	tm = startTerm(t, env, work)
	tm.expect("Press Enter to continue it here")
	tm.answer("")
	tm.expect("Continuing")
	tm.expect("hello from the browser")
	tm.line("back at the desk")
	tm.expect("echo: back at the desk")
	if h := holder(sid).Holder; !strings.HasPrefix(h, "cli:") {
		t.Fatalf("holder after /handoff cli: %q", h)
	}

	// 5. The old web conversation: one line, no turn, the message kept.
	calls = modelCalls()
	pageSay(ctx, t, "still there, page?")
	pageText(ctx, t, "This conversation is in the terminal now, since")
	if n := modelCalls(); n != calls {
		t.Errorf("the old page ran %d model calls", n-calls)
	}
	testutil.Eventually(t, hangGuard, func() bool {
		all, _ := st.Transcript(t.Context(), sid)
		for _, m := range all {
			if m.Content == "still there, page?" {
				return false
			}
		}
		parked, _ := st.Parked(t.Context(), webKey)
		return len(parked) == 1 && parked[0].Text == "still there, page?"
	}, "the page's message to be kept out of the transcript")

	// /continue on the page brings the session there and answers it.
	pageSay(ctx, t, "/continue")
	pageText(ctx, t, "echo: still there, page?")
	if h := holder(sid).Holder; !strings.HasPrefix(h, "web:") {
		t.Fatalf("holder after /continue on the page: %q", h)
	}
	// The terminal, no longer holding it, runs no turn either; quitting
	// there leaves the session open in the web chat.
	// It was told at once; typing waits for that line, since a key typed
	// while the line is drawn can be taken by the terminal's own reply
	// to readline's cursor query.
	tm.expect("This conversation continues in the web chat now.")
	// The prompt is drawn again below that line, asking where the cursor
	// is; keys typed before the answer came are taken with it.
	tm.waitFor("the prompt drawn below the line", func(raw string) bool {
		rest := raw[strings.LastIndex(raw, "continues in the web chat now."):]
		return strings.Contains(rest, "\x1b[6n") && strings.LastIndex(rest, "\x1b[?25h") > strings.LastIndex(rest, "\x1b[6n")
	})
	calls = modelCalls()
	tm.line("/retry")
	tm.expect("This conversation is in the web chat now, since")
	tm.line("/quit")
	tm.expect("It stays in the web chat")
	if err := tm.wait(); err != nil {
		t.Fatalf("quit: %v\n%s", err, tm.Screen())
	}
	if n := modelCalls(); n != calls {
		t.Errorf("the terminal not holding the session ran %d model calls", n-calls)
	}
	if s := holder(sid); !s.Open() {
		t.Fatalf("quitting a terminal that did not hold the session ended it: %+v", s)
	}

	// 6. `baton -c` asks; yes moves it here and the page is told.
	tm = startTerm(t, env, work, "-c")
	tm.expect("It is in the web chat — move it here? [Y/n]")
	tm.answer("y")
	tm.expect("Brought ")
	tm.expect("here from the web chat.")
	tm.line("the last word")
	tm.expect("echo: the last word")
	pageText(ctx, t, "This conversation continues in the terminal now.")
	tm.line("/quit")
	if err := tm.wait(); err != nil {
		t.Fatalf("quit: %v\n%s", err, tm.Screen())
	}
	if h := holder(sid).Holder; !strings.HasPrefix(h, "cli:") {
		t.Fatalf("holder after baton -c: %q", h)
	}

	// One session, nothing else started or ended; every message in order.
	ss, _ := st.ListSessions(t.Context(), store.SessionFilter{})
	if len(ss) != 1 || ss[0].ID != sid {
		t.Fatalf("the conversation split into sessions: %+v", ss)
	}
	msgs, _ := st.Transcript(t.Context(), sid)
	var said []string
	for _, m := range msgs {
		if m.Role == store.RoleUser && m.Kind != store.KindHandoff && !strings.HasPrefix(m.Content, "/") {
			said = append(said, m.Platform+":"+m.Content)
		}
	}
	want := "cli:hello from the desk|telegram:hello from the phone|web:hello from the browser|cli:back at the desk|web:still there, page?|cli:the last word"
	if got := strings.Join(said, "|"); got != want {
		t.Errorf("user messages\n got %s\nwant %s", got, want)
	}
	// Five moves: → Telegram, → web, → terminal, /continue → web, -c → terminal.
	notes := assertNotes(t, st, sid, 5)
	var dests []string
	for _, n := range notes {
		h, _ := st.GetHandoff(t.Context(), n.HandoffID)
		dests = append(dests, h.Platform)
	}
	if got := strings.Join(dests, ","); got != "telegram,web,cli,web,cli" {
		t.Errorf("the notes are of handoffs to %s", got)
	}
	if ps, _ := st.Parked(t.Context(), webKey); len(ps) != 0 {
		t.Errorf("carried messages still parked: %+v", ps)
	}
}

// pageSay types text into the web page and sends it.
func pageSay(ctx context.Context, t *testing.T, text string) {
	t.Helper()
	if err := chromedp.Do(ctx, chromedp.SendKeys("#input", text), chromedp.Click("#send")); err != nil {
		t.Fatalf("type %q into the page: %v", text, err)
	}
}

// TestTwoTerminalsOneSession: a second real terminal on a session the
// first has open is told so (with the first's pid), runs no turn and
// ends nothing; what is typed there is kept and answered before the
// first's next message; after the first leaves, `baton -c` types into it
// again.
// A first terminal killed outright frees the session too.
func TestTwoTerminalsOneSession(t *testing.T) {
	srv := llmtest.Start(t)
	home, work := t.TempDir(), t.TempDir()
	env := cleanEnv(home, modelEnv(srv)...)

	first := startTerm(t, env, work)
	first.line("hello from the first")
	first.expect("echo: hello from the first")
	calls := len(srv.Requests())

	second := startTerm(t, env, work, "-c")
	second.expect(fmt.Sprintf("This conversation is open in another terminal (pid %d); here it is read-only until that terminal leaves it.", first.cmd.Process.Pid))
	second.line("typed in the second")
	second.expect("open in another terminal")
	second.expect("(kept: answered before the next message in the terminal that has it)")
	second.line("/quit")
	second.expect("It stays open in the other terminal.")
	if err := second.wait(); err != nil {
		t.Fatalf("second terminal: %v\n%s", err, second.Screen())
	}
	if n := len(srv.Requests()); n != calls {
		t.Errorf("the second terminal ran %d model calls", n-calls)
	}

	// What the second kept is answered first, in order.
	first.line("still mine")
	first.expect("echo: typed in the second")
	first.expect("echo: still mine")
	_ = first.cmd.Process.Kill() // no goodbye: the kernel frees the lock
	_ = first.wait()

	third := startTerm(t, env, work, "-c")
	third.line("my turn now")
	third.expect("echo: my turn now")
	third.line("/quit")
	if err := third.wait(); err != nil {
		t.Fatalf("third terminal: %v\n%s", err, third.Screen())
	}
	if strings.Contains(third.Screen(), "open in another terminal") {
		t.Errorf("a killed terminal kept the session locked:\n%s", third.Screen())
	}
	st := openStore(t, home)
	ss, _ := st.ListSessions(t.Context(), store.SessionFilter{})
	if len(ss) != 1 {
		t.Fatalf("sessions %+v", ss)
	}
	msgs, _ := st.Transcript(t.Context(), ss[0].ID)
	var said []string
	for _, m := range msgs {
		if m.Role == store.RoleUser {
			said = append(said, m.Content)
		}
	}
	if got := strings.Join(said, "|"); got != "hello from the first|typed in the second|still mine|my turn now" {
		t.Errorf("user messages %q", got)
	}
}

// placesRig is `baton gateway` with the Telegram fake (a forum as its
// home) and the web chat, the store it uses, and a folder for terminals.
type placesRig struct {
	fake  *telegramtest.Server
	owner telegramtest.User
	srv   *llmtest.Server
	env   []string
	work  string
	gw    *gatewayProc
	c     *control.Client
	st    *sqlite.Store
}

// newPlacesRig starts a gateway with the Telegram fake and the web chat;
// extra is more of config.yaml.
func newPlacesRig(t *testing.T, botToken string, forum int64, extra ...string) *placesRig {
	t.Helper()
	fake := telegramtest.New(t, botToken)
	fake.AddChat(telegramtest.Chat{ID: forum, Type: telegramtest.Supergroup, Title: "baton", IsForum: true})
	srv := handoffModel(t, "Hello, picked up here.")
	home, work := t.TempDir(), t.TempDir()
	env := cleanEnv(home, modelEnv(srv)...)
	batonHome := filepath.Join(home, "baton")
	writeConfig(t, batonHome, fmt.Sprintf("web:\n  listen: 127.0.0.1:0\ntelegram:\n  token: %q\n  server_url: %q\n"+
		"gateway:\n  owners:\n    telegram: [\"1\"]\n  homes:\n    telegram: \"telegram:group:%d\"\n%s", botToken, fake.URL(), forum, strings.Join(extra, "")))
	gw := startGateway(t, env, batonHome)
	c := control.NewClient(control.SocketPath(batonHome))
	testutil.Eventually(t, hangGuard, func() bool {
		s, err := c.Status(context.Background())
		p, ok := s.Platform("telegram")
		return err == nil && ok && p.Live
	}, "telegram to be live in the gateway")
	return &placesRig{fake: fake, owner: telegramtest.User{ID: 1, FirstName: "Owner"}, srv: srv, env: env, work: work,
		gw: gw, c: c, st: openStore(t, home)}
}

// session reads a session from the store.
func (r *placesRig) session(t *testing.T, id string) store.Session {
	t.Helper()
	s, err := r.st.GetSession(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
