package gateway_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/agent"
	"github.com/baton-agent/baton/internal/app"
	"github.com/baton-agent/baton/internal/cli"
	"github.com/baton-agent/baton/internal/config"
	"github.com/baton-agent/baton/internal/llm/llmtest"
	"github.com/baton-agent/baton/internal/llm/provider"
	"github.com/baton-agent/baton/internal/platform/telegram/telegramtest"
	"github.com/baton-agent/baton/internal/platform/web"
	"github.com/baton-agent/baton/internal/store"
)

// slowTask is asked in the mid-turn tests; the model answers it word by
// word, far slower than a move takes.
const slowTask = "the slow task"

func slowAnswers(r llmtest.Request) llmtest.Step {
	if r.LastUserText() == slowTask {
		var words []string
		for i := 1; i <= 200; i++ {
			words = append(words, fmt.Sprintf("w%d", i))
		}
		return llmtest.Reply{Text: strings.Join(words, " "), Delay: 50 * time.Millisecond}
	}
	if strings.HasPrefix(r.LastUserText(), "[baton handoff]") {
		return llmtest.Reply{Text: "Greetings after the move."}
	}
	return llmtest.EchoReply(r)
}

// terminalApp is the terminal's side of the rig's BATON_HOME and store,
// as `baton` would open it: its own agent and turn locks.
func terminalApp(t *testing.T, r *rig) *app.App {
	t.Helper()
	mc := config.ModelConfig{Provider: config.ProviderOpenAI, BaseURL: r.model.URL, APIKey: "k", Name: "m"}
	p, err := provider.New(mc, provider.Options{NoRetry: true})
	if err != nil {
		t.Fatal(err)
	}
	return &app.App{Home: r.home, Model: mc, Store: r.st, Owner: r.owner, Provider: p}
}

// oneAnswerPerTurn checks that each message to the agent in the session
// got exactly one answer, and that the slow task's answer is stored cut
// off, marked.
func oneAnswerPerTurn(t *testing.T, st store.Store, sessionID string) {
	t.Helper()
	msgs, err := st.Transcript(context.Background(), sessionID)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	answers := -1
	for _, m := range msgs {
		lines = append(lines, fmt.Sprintf("%s: %.50q", m.Role, m.Content))
		switch m.Role {
		case store.RoleUser:
			if answers == 0 {
				t.Errorf("no answer before %.50q", m.Content)
			}
			answers = 0
		case store.RoleAssistant:
			if answers++; answers > 1 {
				t.Errorf("a turn answered %d times: %.50q", answers, m.Content)
			}
			if strings.HasPrefix(m.Content, "w1 ") && !strings.HasSuffix(m.Content, agent.InterruptedMarker) {
				t.Errorf("the slow task's answer was not cut off by the move")
			}
		}
	}
	if answers != 1 {
		t.Errorf("the last turn has %d answers", answers)
	}
	if t.Failed() {
		t.Logf("transcript:\n%s", strings.Join(lines, "\n"))
	}
}

// A terminal's turn runs when /continue on the page takes the
// conversation: the gateway's worker stops it before the handoff's note
// and turn (the terminal's turn ends saying where it went), and its answer
// so far is stored once, marked.
func TestPageContinueStopsTheTerminalsTurn(t *testing.T) {
	r := newRig(t, rigOpts{answer: slowAnswers})
	ta := terminalApp(t, r)
	sess := r.terminalSession(t)
	desk, err := ta.NewAgent(nil)
	if err != nil {
		t.Fatal(err)
	}
	streaming := make(chan struct{}, 1)
	ended := make(chan error, 1)
	go func() {
		_, err := desk.Run(context.Background(), sess.ID, store.Message{Role: store.RoleUser, Content: slowTask, Platform: "cli"}, func(ev agent.Event) {
			if ev.Kind == agent.EventTextDelta {
				select {
				case streaming <- struct{}{}:
				default:
				}
			}
		})
		ended <- err
	}()
	<-streaming

	pg := r.openPage(t)
	pg.send(map[string]any{"type": "say", "key": web.Home.Key(), "text": "/continue", "id": "c1"})
	pg.await("the greeting", isMsg("Greetings after the move."))
	var err2 error
	select {
	case err2 = <-ended:
	case <-time.After(time.Minute):
		t.Fatal("the terminal's turn went on after the move")
	}
	pg.send(map[string]any{"type": "say", "key": web.Home.Key(), "text": "on the page now", "id": "c2"})
	pg.await("the page's answer", isMsg("echo: on the page now"))
	oneAnswerPerTurn(t, r.st, sess.ID)
	var moved *agent.MovedError
	if !errors.As(err2, &moved) || moved.To != web.Home.Key() {
		t.Fatalf("the terminal's turn ended with %v; want it stopped by the move to the page", err2)
	}
}

// The page's turn runs when the terminal takes the conversation (`baton
// -c` and yes, or /continue there): the pick-up stops it first, the page
// is told at once, with what it saw written, and the answer so far is
// stored once, marked, before the terminal's turns.
func TestTerminalPickUpStopsThePagesTurn(t *testing.T) {
	r := newRig(t, rigOpts{answer: slowAnswers})
	pg := r.openPage(t)
	key := web.Home.Key()
	pg.send(map[string]any{"type": "say", "key": key, "text": "hello page", "id": "p1"})
	pg.await("the first answer", isMsg("echo: hello page"))
	b, err := r.st.LookupBinding(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	pg.send(map[string]any{"type": "say", "key": key, "text": slowTask, "id": "p2"})
	pg.await("the slow answer streaming", typ("delta"))

	ta := terminalApp(t, r)
	hf, err := r.st.RequestHandoffTo(context.Background(), b.SessionID, "web", "cli", ta.TerminalKey())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := (&cli.Handoffs{App: ta}).PickUp(context.Background(), hf); err != nil {
		t.Fatal(err)
	}
	// However the page's turn ends (stopped, or written to the end), its
	// answer is on the page before the stored answers are counted; the
	// page hears at once where the conversation went.
	var told []string
	for len(told) < 2 {
		f := pg.await("the page's turn to end, and the notice", func(f map[string]any) bool {
			return isMsg("Stopped here")(f) || isMsg("w200")(f) || isMsg("This conversation continues in the terminal now.")(f)
		})
		told = append(told, f["text"].(string))
	}
	desk, err := ta.NewAgent(nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := desk.Run(context.Background(), b.SessionID, store.Message{Role: store.RoleUser, Content: "at the desk", Platform: "cli"}, nil); err != nil {
		t.Fatal(err)
	}
	oneAnswerPerTurn(t, r.st, b.SessionID)
	if !strings.Contains(strings.Join(told, "\n"), "Stopped here: this conversation moved to the terminal") {
		t.Errorf("the page was told %q; want that its turn stopped and where the conversation went", told)
	}
}

// The page's turn runs when /continue in a Telegram chat takes the
// conversation: the worker stops it rather than wait for its end, the
// page is told at once where the conversation went, and the greeting
// follows the part written, stored once.
func TestChatContinueStopsThePagesTurn(t *testing.T) {
	fake := telegramtest.New(t, botToken)
	fake.AddChat(telegramtest.Chat{ID: ownerTG, Type: "private"})
	r := telegramRig(t, fake, "telegram:group:-100777")
	r.model.SetDefault(slowAnswers)
	pg := r.openPage(t)
	key := web.Home.Key()
	pg.send(map[string]any{"type": "say", "key": key, "text": "hello page", "id": "p1"})
	pg.await("the first answer", isMsg("echo: hello page"))
	b, err := r.st.LookupBinding(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	pg.send(map[string]any{"type": "say", "key": key, "text": slowTask, "id": "p2"})
	pg.await("the slow answer streaming", typ("delta"))

	fake.PushMessage(ownerTG, 0, ownerUser, "/continue")
	pg.await("the stop on the page", isMsg("Stopped here: this conversation moved to Telegram"))
	waitFor(t, "the greeting in the chat", fake.Shown, func(m telegramtest.SentMessage) bool {
		return m.ChatID == "42" && strings.Contains(m.Plain, "Greetings after the move.")
	})
	fake.PushMessage(ownerTG, 0, ownerUser, "on the phone")
	waitFor(t, "the answer in the chat", fake.Shown, func(m telegramtest.SentMessage) bool {
		return m.ChatID == "42" && strings.Contains(m.Plain, "echo: on the phone")
	})
	oneAnswerPerTurn(t, r.st, b.SessionID)
}
