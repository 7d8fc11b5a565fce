package gatewaytest

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/platform"
	"github.com/baton-agent/baton/internal/platform/slack"
	"github.com/baton-agent/baton/internal/platform/slack/slacktest"
	"github.com/baton-agent/baton/internal/testutil"
)

// Slack is the Web API and Socket Mode fake with a channel as the home: a
// handoff opens a thread under a root message naming the session.
func Slack() Harness { return slackHarness{} }

const (
	slackBot      = "xoxb-1-gateway-test"
	slackApp      = "xapp-1-gateway-test"
	slackOwner    = "U0OWNER"
	slackStranger = "U0EVE"
	slackHome     = "C0HOME"
)

type slackHarness struct{}

func (slackHarness) Caps() Caps {
	return Caps{Threads: true, Refuses: true, ThreadRoot: true, Drops: true, CatchesUp: true}
}

func (slackHarness) Start(t testing.TB) Service {
	t.Helper()
	fake := slacktest.New(t, slackBot, slackApp)
	return &slackService{fake: fake, t: t}
}

type slackService struct {
	fake *slacktest.Server
	t    testing.TB
}

func (s *slackService) adapters(mem platform.Memory) []platform.Adapter {
	return s.adaptersWith(mem, slackBot)
}

func (s *slackService) adaptersWith(mem platform.Memory, bot string) []platform.Adapter {
	a, err := slack.New(slack.Config{BotToken: bot, AppToken: slackApp, APIURL: s.fake.APIURL(), Memory: mem, Logger: quiet()})
	if err != nil {
		s.t.Fatal(err)
	}
	return []platform.Adapter{a}
}

func (s *slackService) Setup() Setup {
	return Setup{
		Platform: "slack", Display: "Slack",
		Adapters: s.adapters,
		Owners:   []string{slackOwner},
		Home:     platform.Address{Platform: "slack", Kind: platform.Group, Chat: slackHome},
	}
}

// Say returns once the bot acknowledged the event (Socket Mode hands
// events over concurrently, so a later message could otherwise overtake
// it), or at once while no gateway is connected.
func (s *slackService) Say(t testing.TB, at platform.Address, who Person, text string) {
	t.Helper()
	user := slackOwner
	if who == Stranger {
		user = slackStranger
	}
	s.say(t, slacktest.Message{Channel: at.Chat, User: user, Text: text, ThreadTS: at.Thread})
}

func (s *slackService) say(t testing.TB, m slacktest.Message) {
	t.Helper()
	m.Mention = strings.Contains(m.Text, "<@"+slacktest.BotUserID+">")
	_, env := s.fake.PushMessage(m)
	text := m.Text
	if s.fake.OpenSockets() == 0 {
		return
	}
	testutil.Eventually(t, testutil.Patience, func() bool { return s.fake.Acked(env) }, "Slack's event for "+text+" acknowledged")
}

// Shown: a thread reply broadcast to the channel shows in both.
func (s *slackService) Shown() []Shown {
	var out []Shown
	for _, p := range s.fake.Shown() {
		out = append(out, Shown{At: platform.Address{Platform: "slack", Chat: p.Channel, Thread: p.ThreadTS}, Text: p.Text})
		if p.Broadcast {
			out = append(out, Shown{At: platform.Address{Platform: "slack", Chat: p.Channel}, Text: p.Text})
		}
	}
	return out
}

// Command mentions the bot first: Slack keeps a leading "/" for its own
// commands.
func (s *slackService) Command(line string) string { return s.Mention(line) }

func (s *slackService) Mention(text string) string { return "<@" + slacktest.BotUserID + "> " + text }

// RefuseThreads: Slack refuses the root message a thread would hang from
// (a channel where threads are not allowed).
func (s *slackService) RefuseThreads() {
	s.fake.FailNextWith("chat.postMessage", "restricted_action_non_threadable_channel")
}

// DropDuringHandoff drops the Socket Mode connection once the thread's
// root is posted, and fails the first try to post the greeting with it.
func (s *slackService) DropDuringHandoff(t testing.TB) func(testing.TB) {
	return func(t testing.TB) {
		t.Helper()
		testutil.Eventually(t, testutil.Patience, func() bool { return len(s.fake.Posts()) >= 1 }, "the thread's root posted")
		s.fake.FailNext("chat.postMessage", 502, 0)
		s.fake.DropSockets()
		testutil.Eventually(t, testutil.Patience, func() bool { return s.fake.Connects() >= 2 && s.fake.OpenSockets() == 1 }, "a new connection")
	}
}

func (s *slackService) Closed() bool { return s.fake.OpenSockets() == 0 }

// Forget lets the events never acknowledged expire: Slack stops retrying.
func (s *slackService) Forget(testing.TB) func(testing.TB) {
	s.fake.ExpireUnacked()
	return func(testing.TB) {}
}

// ThreadName is the text of the thread's root message.
func (s *slackService) ThreadName(at platform.Address) string {
	for _, p := range s.fake.Posts() {
		if p.Channel == at.Chat && p.TS == at.Thread {
			return p.Text
		}
	}
	return ""
}

// TypingShownAt: the assistant thread's status (Slack's typing) set there.
func (s *slackService) TypingShownAt(at platform.Address) bool {
	for _, st := range s.fake.Statuses() {
		if st.Channel == at.Chat && st.ThreadTS == at.Thread {
			return true
		}
	}
	return false
}

func (s *slackService) RateLimitNextPost() { s.fake.FailNext("chat.postMessage", 429, time.Second) }

// StrangerSaysDirect: stranger n's DM with the bot.
func (s *slackService) StrangerSaysDirect(t testing.TB, n int, text string) platform.Address {
	t.Helper()
	dm := "D0EVE" + strconv.Itoa(n)
	s.say(t, slacktest.Message{Channel: dm, ChannelType: "im", User: "U0EVE" + strconv.Itoa(n), Text: text})
	return platform.Address{Platform: "slack", Kind: platform.DM, Chat: dm}
}

// RefuseForGood: channel_not_found, which no retry changes.
func (s *slackService) RefuseForGood(sub string) { s.fake.Forbid(sub) }

func (s *slackService) RefusedCredentials() (func(platform.Memory) []platform.Adapter, string) {
	const wrong = "xoxb-9-refused-token"
	return func(mem platform.Memory) []platform.Adapter { return s.adaptersWith(mem, wrong) }, wrong
}

// SayUnacked: Socket Mode hands the envelope over again on the next
// connection until the bot acknowledges it.
func (s *slackService) SayUnacked(t testing.TB, at platform.Address, text string) (func() bool, func() int) {
	_, env := s.fake.PushMessage(slacktest.Message{Channel: at.Chat, User: slackOwner, Text: text, ThreadTS: at.Thread})
	return func() bool { return s.fake.Acked(env) }, func() int { return s.fake.Deliveries(env) }
}

func (s *slackService) Edits() int { return s.fake.CallCount("chat.update") }
