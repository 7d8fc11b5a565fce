package gatewaytest

import (
	"io"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/platform"
	"github.com/baton-agent/baton/internal/platform/telegram"
	"github.com/baton-agent/baton/internal/platform/telegram/telegramtest"
)

// Telegram is the Bot API fake with a forum supergroup as the home: a
// handoff opens a topic.
func Telegram() Harness { return telegramHarness{} }

const (
	telegramToken = "123456:test-token"
	telegramForum = -100777
)

var (
	telegramOwner    = telegramtest.User{ID: 42, FirstName: "Owner"}
	telegramStranger = telegramtest.User{ID: 99, FirstName: "Eve"}
)

type telegramHarness struct{}

func (telegramHarness) Caps() Caps { return Caps{Threads: true} }

func (telegramHarness) Start(t testing.TB) Service {
	t.Helper()
	fake := telegramtest.New(t, telegramToken)
	fake.AddChat(telegramtest.Chat{ID: telegramForum, Type: "supergroup", Title: "baton", IsForum: true})
	return &telegramService{fake: fake, t: t}
}

type telegramService struct {
	fake *telegramtest.Server
	t    testing.TB
}

func (s *telegramService) adapters(platform.Memory) []platform.Adapter {
	a, err := telegram.New(telegram.Config{Token: telegramToken, ServerURL: s.fake.URL(), PollTimeout: time.Second, Logger: quiet()})
	if err != nil {
		s.t.Fatal(err)
	}
	return []platform.Adapter{a}
}

func (s *telegramService) Setup() Setup {
	return Setup{
		Platform: "telegram", Display: "Telegram",
		Adapters: s.adapters,
		Owners:   []string{strconv.FormatInt(telegramOwner.ID, 10)},
		Home:     platform.Address{Platform: "telegram", Kind: platform.Group, Chat: strconv.Itoa(telegramForum)},
	}
}

func (s *telegramService) Say(t testing.TB, at platform.Address, who Person, text string) {
	t.Helper()
	chat, err := strconv.ParseInt(at.Chat, 10, 64)
	if err != nil {
		t.Fatalf("telegram chat %q: %v", at.Chat, err)
	}
	thread := 0
	if at.Thread != "" {
		if thread, err = strconv.Atoi(at.Thread); err != nil {
			t.Fatalf("telegram topic %q: %v", at.Thread, err)
		}
	}
	from := telegramOwner
	if who == Stranger {
		from = telegramStranger
	}
	s.fake.PushMessage(chat, thread, from, text)
}

func (s *telegramService) Shown() []Shown {
	var out []Shown
	for _, m := range s.fake.Shown() {
		at := platform.Address{Platform: "telegram", Chat: m.ChatID}
		if m.ThreadID != 0 {
			at.Thread = strconv.Itoa(m.ThreadID)
		}
		out = append(out, Shown{At: at, Text: m.Plain})
	}
	return out
}

// Command names the bot after the command, as Telegram's clients do in a
// group.
func (s *telegramService) Command(line string) string {
	name, rest, _ := strings.Cut(line, " ")
	return strings.TrimSpace(name + "@" + s.fake.BotUsername() + " " + rest)
}

func (s *telegramService) Mention(text string) string { return "@" + s.fake.BotUsername() + " " + text }

// RefuseThreads: a Bot API server without forum topics.
func (s *telegramService) RefuseThreads() { s.fake.Unsupported("createForumTopic") }

func (s *telegramService) ThreadTries() int { return s.fake.CallCount("createForumTopic") }

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func (s *telegramService) ThreadName(at platform.Address) string {
	for _, tp := range s.fake.Topics() {
		if tp.ChatID == at.Chat && strconv.Itoa(tp.ThreadID) == at.Thread {
			return tp.Name
		}
	}
	return ""
}
