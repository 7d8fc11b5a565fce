package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/agent"
	"github.com/baton-agent/baton/internal/gateway/control"
	"github.com/baton-agent/baton/internal/llm/llmtest"
	"github.com/baton-agent/baton/internal/platform/telegram/telegramtest"
	"github.com/baton-agent/baton/internal/store"
	"github.com/baton-agent/baton/internal/store/postgres"
	"github.com/baton-agent/baton/internal/store/postgres/pgtest"
	"github.com/baton-agent/baton/internal/testutil"
)

// longTask is what the person asks for in the mid-turn tests; the model
// answers it slowly, word by word, for far longer than a move takes.
const longTask = "a long task, please"

// lastStep is the last word of the long answer: 200 words, 10 s.
const lastStep = 200

// midTurnRig is `baton gateway` with the Telegram fake, the owner's
// private chat with the bot, and a model that answers longTask slowly,
// the handoff's turn with a greeting and everything else by echo. The
// terminal runs with env: on one machine the gateway's own home; for
// the desk and the server (newDeskServerRig) a home of its own on
// another "machine", sharing only the Postgres store.
type midTurnRig struct {
	fake  *telegramtest.Server
	owner telegramtest.User
	srv   *llmtest.Server
	env   []string // the terminal's
	work  string
	st    store.Store
}

// newMidTurnRig is one machine: the gateway and the terminal share a
// home and its SQLite store.
func newMidTurnRig(t *testing.T, token string) *midTurnRig {
	r, home := midTurnParts(t, token)
	r.env = cleanEnv(home, modelEnv(r.srv)...)
	startMidTurnGateway(t, r, r.env, filepath.Join(home, "baton"), "")
	r.st = openStore(t, home)
	return r
}

// newDeskServerRig is the desk and the server: the gateway in one home,
// the terminal in another, one Postgres database between them and
// nothing else; a move must stop a turn on the other machine.
func newDeskServerRig(t *testing.T, token string) *midTurnRig {
	db := pgtest.NewDatabase(t)
	r, server := midTurnParts(t, token)
	common := fmt.Sprintf("store: %q\n", db)
	startMidTurnGateway(t, r, cleanEnv(server, modelEnv(r.srv)...), filepath.Join(server, "baton"), common)
	desk := t.TempDir()
	writeConfig(t, filepath.Join(desk, "baton"), common)
	r.env = cleanEnv(desk, modelEnv(r.srv)...)
	st, err := postgres.Open(t.Context(), db)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	r.st = st
	return r
}

func midTurnParts(t *testing.T, token string) (*midTurnRig, string) {
	fake := telegramtest.New(t, token)
	srv := handoffModel(t, "Hello, picked up here.")
	var words []string
	for i := 1; i <= lastStep; i++ {
		words = append(words, fmt.Sprintf("step%d", i))
	}
	srv.Aside(func(r llmtest.Request) bool { return r.LastUserText() == longTask },
		func(llmtest.Request) llmtest.Step {
			return llmtest.Reply{Text: strings.Join(words, " "), Delay: 50 * time.Millisecond}
		})
	return &midTurnRig{fake: fake, owner: telegramtest.User{ID: 1, FirstName: "Owner"}, srv: srv, work: t.TempDir()}, t.TempDir()
}

// startMidTurnGateway starts the gateway in batonHome, its config the
// Telegram bot's after extra, and waits until Telegram is live.
func startMidTurnGateway(t *testing.T, r *midTurnRig, env []string, batonHome, extra string) {
	writeConfig(t, batonHome, extra+fmt.Sprintf("telegram:\n  token: %q\n  server_url: %q\ngateway:\n  owners:\n    telegram: [\"1\"]\n", r.fake.Token(), r.fake.URL()))
	startGateway(t, env, batonHome)
	c := control.NewClient(control.SocketPath(batonHome))
	testutil.Eventually(t, hangGuard, func() bool {
		s, err := c.Status(context.Background())
		p, ok := s.Platform("telegram")
		return err == nil && ok && p.Live
	}, "telegram to be live in the gateway")
}

// say is the owner writing in their private chat with the bot.
func (r *midTurnRig) say(text string) { r.fake.PushMessage(1, 0, r.owner, text) }

// shown waits until the private chat shows a message containing sub.
func (r *midTurnRig) shown(t *testing.T, what, sub string) {
	t.Helper()
	waitSent(t, r.fake, what, func(m telegramtest.SentMessage) bool { return m.ChatID == "1" && strings.Contains(m.Plain, sub) })
}

// onlySession is the one session of the store.
func (r *midTurnRig) onlySession(t *testing.T) string {
	t.Helper()
	ss, err := r.st.ListSessions(t.Context(), store.SessionFilter{})
	if err != nil || len(ss) != 1 {
		t.Fatalf("sessions %+v %v", ss, err)
	}
	return ss[0].ID
}

// assertOneAnswerPerTurn checks the session's transcript: every person's
// message (and the handoff's) is followed by exactly one answer, and the
// long task's answer is the part written before the move, stored once,
// marked as cut off.
func assertOneAnswerPerTurn(t *testing.T, st store.Store, sessionID string) {
	t.Helper()
	// A place shows an answer as it streams, before it is stored whole:
	// wait for the last turn's answer to be in the store.
	var msgs []store.Message
	testutil.Eventually(t, hangGuard, func() bool {
		var err error
		msgs, err = st.Transcript(t.Context(), sessionID)
		return err == nil && len(msgs) > 0 && msgs[len(msgs)-1].Role == store.RoleAssistant
	}, "the last turn's answer to be stored")
	var lines []string
	answers := -1
	for _, m := range msgs {
		lines = append(lines, fmt.Sprintf("%s: %.60q", m.Role, m.Content))
		switch m.Role {
		case store.RoleUser:
			if answers == 0 {
				t.Errorf("a turn without an answer before %q", m.Content)
			}
			answers = 0
		case store.RoleAssistant:
			if answers++; answers > 1 {
				t.Errorf("a turn answered %d times: %q", answers, m.Content)
			}
		}
		if strings.Contains(m.Content, "step1 ") && m.Role == store.RoleAssistant && !strings.HasSuffix(m.Content, agent.InterruptedMarker) {
			t.Errorf("the long task's answer was not cut off by the move: %.80q…", m.Content)
		}
	}
	if answers != 1 {
		t.Errorf("the last turn has %d answers", answers)
	}
	if t.Failed() {
		t.Logf("transcript:\n%s", strings.Join(lines, "\n"))
	}
}

// TestMoveStopsTheTerminalsTurn: a long task runs at the desk, and
// /continue from the phone takes the conversation while it runs. The
// terminal's turn stops at once, says where the conversation went, and
// its answer so far is stored once, marked, before the handoff's turn:
// nothing of it lands in the session after Telegram holds it.
func TestMoveStopsTheTerminalsTurn(t *testing.T) {
	t.Run("one machine", func(t *testing.T) { moveStopsTheTerminalsTurn(t, newMidTurnRig(t, "123456:midturn-terminal")) })
	t.Run("desk and server", func(t *testing.T) { moveStopsTheTerminalsTurn(t, newDeskServerRig(t, "123456:midturn-desk")) })
}

func moveStopsTheTerminalsTurn(t *testing.T, r *midTurnRig) {
	tm := startTerm(t, r.env, r.work)
	tm.line("hello from the desk")
	tm.expect("echo: hello from the desk")
	sid := r.onlySession(t)
	tm.line(longTask)
	tm.expect("step3 ")

	r.say("/continue")
	r.shown(t, "the greeting in the chat", "Hello, picked up here.")
	// However the terminal's turn ends (stopped, or written to the end),
	// it has ended before the stored answers are counted.
	tm.waitFor("the terminal's turn to end", func(raw string) bool {
		return strings.Contains(raw, "Stopped here") || strings.Contains(raw, fmt.Sprintf("step%d", lastStep))
	})
	r.say("on the phone now")
	r.shown(t, "the answer in the chat", "echo: on the phone now")
	assertOneAnswerPerTurn(t, r.st, sid)
	s, err := r.st.GetSession(t.Context(), sid)
	if err != nil || s.Holder != "telegram:dm:1" {
		t.Fatalf("holder %q, %v", s.Holder, err)
	}
	// The terminal was told at once, by the turn that stopped.
	tm.expect("Stopped here: this conversation moved to Telegram")
	tm.expect("This conversation continues in Telegram now.")
}

// TestMoveStopsTheGatewaysTurn: the phone's chat answers a long task, and
// `baton -c` takes the conversation to the terminal (yes to "move it
// here?"). The chat's turn stops at once and the chat is told; its answer
// so far is stored once, marked; the terminal's turns are the only ones
// after it.
func TestMoveStopsTheGatewaysTurn(t *testing.T) {
	t.Run("one machine", func(t *testing.T) { moveStopsTheGatewaysTurn(t, newMidTurnRig(t, "123456:midturn-gateway")) })
	t.Run("desk and server", func(t *testing.T) { moveStopsTheGatewaysTurn(t, newDeskServerRig(t, "123456:midturn-server")) })
}

func moveStopsTheGatewaysTurn(t *testing.T, r *midTurnRig) {
	r.say("hello from the phone")
	r.shown(t, "the first answer", "echo: hello from the phone")
	sid := r.onlySession(t)
	r.say(longTask)
	r.shown(t, "the long answer streaming", "step3 ")

	tm := startTerm(t, r.env, r.work, "-c")
	tm.expect("move it here? [Y/n]")
	tm.answer("y")
	tm.expect("here from Telegram.")
	// However the chat's turn ends (stopped, or written to the end), it
	// has ended before the stored answers are counted.
	waitSent(t, r.fake, "the chat's turn to end", func(m telegramtest.SentMessage) bool {
		return m.ChatID == "1" && (strings.Contains(m.Plain, "Stopped here") || strings.Contains(m.Plain, fmt.Sprintf("step%d", lastStep)))
	})
	tm.line("back at the desk")
	tm.expect("echo: back at the desk")
	assertOneAnswerPerTurn(t, r.st, sid)
	s, err := r.st.GetSession(t.Context(), sid)
	if err != nil || !strings.HasPrefix(s.Holder, "cli:") {
		t.Fatalf("holder %q, %v", s.Holder, err)
	}
	// The chat was told at once, by the turn that stopped, and where the
	// conversation went.
	r.shown(t, "the stop in the chat", "Stopped here: this conversation moved to the terminal")
	r.shown(t, "the notice in the chat", "This conversation continues in the terminal now.")
}
