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
	"github.com/baton-agent/baton/internal/testutil"
)

// longTask is what the person asks for in the mid-turn tests; the model
// answers it slowly, word by word, for far longer than a move takes.
const longTask = "a long task, please"

// lastStep is the last word of the long answer: 200 words, 10 s.
const lastStep = 200

// midTurnRig is `baton gateway` with the Telegram fake, the owner's
// private chat with the bot, and a model that answers longTask slowly,
// the handoff's turn with a greeting and everything else by echo.
type midTurnRig struct {
	fake  *telegramtest.Server
	owner telegramtest.User
	srv   *llmtest.Server
	env   []string
	work  string
	st    store.Store
}

func newMidTurnRig(t *testing.T, token string) *midTurnRig {
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
	home, work := t.TempDir(), t.TempDir()
	env := cleanEnv(home, modelEnv(srv)...)
	batonHome := filepath.Join(home, "baton")
	writeConfig(t, batonHome, fmt.Sprintf("telegram:\n  token: %q\n  server_url: %q\ngateway:\n  owners:\n    telegram: [\"1\"]\n", token, fake.URL()))
	startGateway(t, env, batonHome)
	c := control.NewClient(control.SocketPath(batonHome))
	testutil.Eventually(t, hangGuard, func() bool {
		s, err := c.Status(context.Background())
		p, ok := s.Platform("telegram")
		return err == nil && ok && p.Live
	}, "telegram to be live in the gateway")
	return &midTurnRig{fake: fake, owner: telegramtest.User{ID: 1, FirstName: "Owner"}, srv: srv, env: env, work: work, st: openStore(t, home)}
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
	r := newMidTurnRig(t, "123456:midturn-terminal")
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
	r := newMidTurnRig(t, "123456:midturn-gateway")
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
