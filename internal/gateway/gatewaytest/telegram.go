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

func (telegramHarness) Caps() Caps { return Caps{Threads: true, Refuses: true} }

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
	return s.adaptersWith(telegramToken)
}

func (s *telegramService) adaptersWith(token string) []platform.Adapter {
	a, err := telegram.New(telegram.Config{Token: token, ServerURL: s.fake.URL(), PollTimeout: time.Second, Logger: quiet()})
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
	chat, thread := s.place(t, at)
	from := telegramOwner
	if who == Stranger {
		from = telegramStranger
	}
	s.fake.PushMessage(chat, thread, from, text)
}

// place is the chat and topic of at.
func (s *telegramService) place(t testing.TB, at platform.Address) (chat int64, thread int) {
	t.Helper()
	chat, err := strconv.ParseInt(at.Chat, 10, 64)
	if err != nil {
		t.Fatalf("telegram chat %q: %v", at.Chat, err)
	}
	if at.Thread != "" {
		if thread, err = strconv.Atoi(at.Thread); err != nil {
			t.Fatalf("telegram topic %q: %v", at.Thread, err)
		}
	}
	return chat, thread
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

// WantLink is the topic's t.me address: a supergroup's id without its
// -100, then the topic.
func (s *telegramService) WantLink(at platform.Address) string {
	return "https://t.me/c/" + strings.TrimPrefix(at.Chat, "-100") + "/" + at.Thread
}

func (s *telegramService) TypingShownAt(at platform.Address) bool {
	for _, c := range s.fake.Calls() {
		if c.Method == "sendChatAction" && c.Params["chat_id"] == at.Chat && c.Params["message_thread_id"] == at.Thread {
			return true
		}
	}
	return false
}

func (s *telegramService) CommandMenu() string {
	cmds := s.fake.Commands()
	if len(cmds) == 0 {
		return ""
	}
	return string(cmds[len(cmds)-1])
}

// RateLimitNextPost answers the next sendMessage 429, retry after 1 s.
func (s *telegramService) RateLimitNextPost() { s.fake.FailNext("sendMessage", 429, 1) }

// SayRepeated: again hands the update over twice more, under its own
// update id and as the same message under a new one.
func (s *telegramService) SayRepeated(t testing.TB, at platform.Address, text string) func(testing.TB) {
	t.Helper()
	chat, thread := s.place(t, at)
	upd, msgID := s.fake.PushMessage(chat, thread, telegramOwner, text)
	return func(testing.TB) {
		s.fake.PushUpdate(map[string]any{"update_id": upd, "message": map[string]any{
			"message_id": msgID, "message_thread_id": thread, "is_topic_message": true, "date": time.Now().Unix(), "text": text,
			"chat": map[string]any{"id": chat, "type": "supergroup", "title": "baton", "is_forum": true},
			"from": map[string]any{"id": telegramOwner.ID, "is_bot": false, "first_name": telegramOwner.FirstName},
		}})
		s.fake.PushMessageID(chat, thread, telegramOwner, text, msgID)
	}
}

// StrangerSaysDirect: in a private chat its id is the person's.
func (s *telegramService) StrangerSaysDirect(t testing.TB, n int, text string) platform.Address {
	id := int64(91 + n)
	s.fake.PushMessage(id, 0, telegramtest.User{ID: id, FirstName: "Stranger"}, text)
	return platform.Address{Platform: "telegram", Kind: platform.DM, Chat: strconv.FormatInt(id, 10)}
}

// RefuseForGood: 403, the bot was blocked.
func (s *telegramService) RefuseForGood(sub string) { s.fake.Forbid(sub) }

func (s *telegramService) RefusedCredentials() (func(platform.Memory) []platform.Adapter, string) {
	const wrong = "999:wrong"
	return func(platform.Memory) []platform.Adapter { return s.adaptersWith(wrong) }, wrong
}

// RefuseOptional: a Bot API server with none of the optional methods.
func (s *telegramService) RefuseOptional() {
	s.fake.Unsupported("createForumTopic", "sendChatAction", "setMyCommands", "editMessageText")
}

func (s *telegramService) Edits() int { return s.fake.CallCount("editMessageText") }
