package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/baton-agent/baton/internal/gateway"
	"github.com/baton-agent/baton/internal/gateway/control"
	"github.com/baton-agent/baton/internal/platform/telegram/telegramtest"
	"github.com/baton-agent/baton/internal/store"
	"github.com/baton-agent/baton/internal/store/postgres"
	"github.com/baton-agent/baton/internal/store/postgres/pgtest"
	"github.com/baton-agent/baton/internal/testutil"
)

// TestDeskAndServer is the desk and the server with real processes: one
// Postgres database, and two machines that share nothing else — the
// server (its own BATON_HOME: `baton gateway` with the Telegram fake) and
// the desk (its own BATON_HOME, no gateway, no socket: the terminal in a
// pty). /handoff telegram on the desk lands in a Telegram topic; a reply
// there; /handoff cli there, and the desk's terminal, idle at its prompt,
// is told it is waited for and takes the session back. A pairing
// approved on the desk is welcomed by the server's gateway.
func TestDeskAndServer(t *testing.T) { deskAndServer(t, "") }

// TestDeskAndServerWokenOnlyBySignals is the same with both machines
// reading the store for work only once an hour: every wake-up — the
// gateway taking the desk's handoff, the desk following it, the desk
// told of the handoff back, the topic told the session left, the
// welcome of a pairing approved on the desk — can only have come over
// NOTIFY.
func TestDeskAndServerWokenOnlyBySignals(t *testing.T) { deskAndServer(t, "1h") }

func deskAndServer(t *testing.T, poll string) {
	db := pgtest.NewDatabase(t)
	const forum, botToken = -100779, "123456:desk-and-server"
	fake := telegramtest.New(t, botToken)
	fake.AddChat(telegramtest.Chat{ID: forum, Type: telegramtest.Supergroup, Title: "baton", IsForum: true})
	owner := telegramtest.User{ID: 1, FirstName: "Owner"}
	srv := handoffModel(t, "Hello, picked up here.")
	common := fmt.Sprintf("store: %q\n", db)
	if poll != "" {
		common += "gateway:\n  poll_every: " + poll + "\n"
	} else {
		common += "gateway:\n"
	}

	// The server: the gateway, with Telegram and its home.
	server := t.TempDir()
	serverHome := filepath.Join(server, "baton")
	writeConfig(t, serverHome, common+fmt.Sprintf("  owners:\n    telegram: [\"1\"]\n  homes:\n    telegram: \"telegram:group:%d\"\n"+
		"web:\n  listen: 127.0.0.1:0\ntelegram:\n  token: %q\n  server_url: %q\n", forum, botToken, fake.URL()))
	gw := startGateway(t, cleanEnv(server, modelEnv(srv)...), serverHome)
	c := control.NewClient(control.SocketPath(serverHome))
	testutil.Eventually(t, hangGuard, func() bool {
		s, err := c.Status(context.Background())
		p, ok := s.Platform("telegram")
		return err == nil && ok && p.Live
	}, "telegram to be live in the gateway")

	// The desk: only the store's URL.
	desk, work := t.TempDir(), t.TempDir()
	deskHome := filepath.Join(desk, "baton")
	writeConfig(t, deskHome, common)
	deskEnv := cleanEnv(desk, modelEnv(srv)...)
	st, err := postgres.Open(t.Context(), db)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })

	// 1. The desk: a turn, then /handoff telegram through the store.
	tm := startTerm(t, deskEnv, work)
	tm.line("hello from the desk")
	tm.expect("echo: hello from the desk")
	tm.line("/handoff telegram")
	tm.expect("waits in the store for a gateway elsewhere to take it")
	tm.expect("claimed by the gateway")
	tm.expect("This conversation now continues in Telegram")
	if err := tm.wait(); err != nil {
		t.Fatalf("the terminal did not detach: %v\n%s\ngateway:\n%s", err, tm.Screen(), gw.Log())
	}
	if _, err := os.Stat(control.SocketPath(deskHome)); !os.IsNotExist(err) {
		t.Fatalf("the desk has a control socket (%v): the test means no gateway there", err)
	}
	if files, _ := filepath.Glob(filepath.Join(deskHome, "*.db")); len(files) > 0 {
		t.Fatalf("the desk keeps a store of its own: %v", files)
	}
	sid, topic, inTopic := landedInTopic(t, st, fake)
	if h := sessionIn(t, st, sid).Holder; h != fmt.Sprintf("telegram:thread:%d:%d", forum, topic) {
		t.Fatalf("holder after /handoff telegram: %q", h)
	}

	// 2. Telegram: a reply, then /handoff cli. The desk's terminal, open
	// at its prompt in no conversation, is told it is waited for.
	fake.PushMessage(forum, topic, owner, "hello from the phone")
	waitSent(t, fake, "the answer in the topic", inTopic("echo: hello from the phone"))
	tm = startTerm(t, deskEnv, work)
	// The prompt drawn whole first (the cursor shown after readline's
	// position query): a line shown while that query waits for its
	// answer can take the answer's place.
	tm.waitFor("the prompt drawn", func(raw string) bool {
		return strings.Contains(raw, "› ") && strings.LastIndex(raw, "\x1b[?25h") > strings.LastIndex(raw, "\x1b[6n")
	})
	fake.PushMessage(forum, topic, owner, "/handoff cli")
	waitSent(t, fake, "the handoff in the topic", inTopic("Handing off to the terminal"))
	tm.expect(fmt.Sprintf("Waiting for you here: session %s, handed off from Telegram. /resume %s continues it here.", sid[:8], sid[:8]))

	// 3. The desk takes it back: the whole conversation, the topic told.
	// The prompt is drawn again below that line (asking where the cursor
	// is); keys typed before it is are taken for the answer.
	tm.waitFor("the prompt drawn below the line", func(raw string) bool {
		rest := raw[strings.LastIndex(raw, "continues it here."):]
		return strings.Contains(rest, "\x1b[6n") && strings.LastIndex(rest, "\x1b[?25h") > strings.LastIndex(rest, "\x1b[6n")
	})
	typeThenEnter(tm, "/resume "+sid[:8])
	tm.expect("hello from the phone")
	tm.expect("Brought session " + sid[:8] + " here from Telegram")
	waitSent(t, fake, "the notice in the topic", inTopic("This conversation continues in the terminal now."))
	tm.line("back at the desk")
	tm.expect("echo: back at the desk")
	if h := sessionIn(t, st, sid).Holder; !strings.HasPrefix(h, "cli:") {
		t.Fatalf("holder after /handoff cli: %q", h)
	}
	tm.line("/quit")
	if err := tm.wait(); err != nil {
		t.Fatalf("quit: %v\n%s", err, tm.Screen())
	}

	// 4. A stranger writes to the bot on the server; approved on the
	// desk, they are welcomed at once by the server's gateway.
	friend := telegramtest.User{ID: 77, FirstName: "Friend"}
	fake.AddChat(telegramtest.Chat{ID: 77, Type: telegramtest.Private})
	fake.PushMessage(77, 0, friend, "hello baton")
	codeMsg := waitSent(t, fake, "a pairing code", func(m telegramtest.SentMessage) bool { return m.ChatID == "77" && codeRE.MatchString(m.Plain) })
	code := codeRE.FindStringSubmatch(codeMsg.Plain)[1]
	if out := pairingCmd(t, deskEnv, "approve", code); !strings.Contains(out, "Approved Friend (77) on telegram") || !strings.Contains(out, "they are told so") {
		t.Errorf("approve on the desk:\n%s", out)
	}
	waitSent(t, fake, "the welcome", func(m telegramtest.SentMessage) bool {
		return m.ChatID == "77" && m.Plain == gateway.PairingWelcome
	})
}

// landedInTopic waits for the one session of st, handed off to Telegram,
// to greet in the one forum topic opened for it: its id, the topic, and
// a match of what is sent there.
func landedInTopic(t *testing.T, st store.Store, fake *telegramtest.Server) (sid string, topic int, inTopic func(sub string) func(telegramtest.SentMessage) bool) {
	t.Helper()
	ss, err := st.ListSessions(t.Context(), store.SessionFilter{})
	if err != nil || len(ss) != 1 {
		t.Fatalf("sessions %+v %v", ss, err)
	}
	topics := fake.Topics()
	if len(topics) != 1 {
		t.Fatalf("topics %+v", topics)
	}
	topic = topics[0].ThreadID
	inTopic = func(sub string) func(telegramtest.SentMessage) bool {
		return func(m telegramtest.SentMessage) bool { return m.ThreadID == topic && strings.Contains(m.Plain, sub) }
	}
	waitSent(t, fake, "the greeting in the topic", inTopic("Hello, picked up here."))
	return ss[0].ID, topic, inTopic
}

// sessionIn reads a session from st.
func sessionIn(t *testing.T, st store.Store, id string) store.Session {
	t.Helper()
	s, err := st.GetSession(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// typeThenEnter types text at the prompt and presses Enter only once the
// line is drawn whole. Completing a session id redraws the line with
// hints, asking where the cursor is at each key; Enter asks again, and a
// key arriving in the same read as an answer is dropped.
func typeThenEnter(tm *term, text string) {
	tm.tb.Helper()
	drawn := func(raw string) bool {
		return strings.LastIndex(raw, "\x1b[?25h") > strings.LastIndex(raw, "\x1b[6n")
	}
	tm.waitFor("the prompt drawn", drawn)
	tm.send(text)
	tm.waitFor("the line drawn", func(raw string) bool {
		return strings.HasSuffix(strings.TrimRight(ansi.ReplaceAllString(raw, ""), " "), text) && drawn(raw)
	})
	tm.send("\r")
	tm.expect(text)
}
