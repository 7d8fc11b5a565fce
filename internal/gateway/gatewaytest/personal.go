package gatewaytest

import (
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/platform"
	"github.com/baton-agent/baton/internal/platform/imessage"
	"github.com/baton-agent/baton/internal/platform/imessage/imessagetest"
	"github.com/baton-agent/baton/internal/platform/signal"
	"github.com/baton-agent/baton/internal/platform/signal/signaltest"
	"github.com/baton-agent/baton/internal/platform/whatsapp"
	"github.com/baton-agent/baton/internal/platform/whatsapp/whatsapptest"
	"github.com/baton-agent/baton/internal/testutil"
)

// The platforms on the owner's own account (or one Apple ID): no threads,
// the home is a direct chat, and a stranger writes from their own.

// Signal is the signal-cli daemon fake, linked to the owner's number: the
// home is Note to Self.
func Signal() Harness { return signalHarness{} }

const (
	signalAccount = "+4915550000"
	signalFriend  = "+4915559999"
)

type signalHarness struct{}

func (signalHarness) Caps() Caps { return Caps{Drops: true} }

func (signalHarness) Start(t testing.TB) Service {
	t.Helper()
	fake := signaltest.New(t, signalAccount)
	return &signalService{fake: fake, t: t}
}

type signalService struct {
	fake *signaltest.Server
	t    testing.TB
}

func (s *signalService) adapters(platform.Memory) []platform.Adapter {
	a, err := signal.New(signal.Config{URL: s.fake.URL(), Account: signalAccount, Logger: quiet()})
	if err != nil {
		s.t.Fatal(err)
	}
	return []platform.Adapter{a}
}

func (s *signalService) Setup() Setup {
	return Setup{
		Platform: "signal", Display: "Signal", Personal: true,
		Adapters: s.adapters,
		Owners:   []string{signalAccount},
		Home:     platform.Address{Platform: "signal", Kind: platform.DM, Chat: signalAccount},
	}
}

// Say waits for the event stream first: the daemon sends a new stream only
// what comes after it opened.
func (s *signalService) Say(t testing.TB, at platform.Address, who Person, text string) {
	t.Helper()
	testutil.Eventually(t, testutil.Patience, func() bool { return s.fake.Streams() > 0 }, "the adapter to open the event stream")
	if who == Stranger {
		s.fake.PushMessage(signalFriend, "Eve", "", text)
		return
	}
	s.fake.PushSent(at.Chat, text)
}

func (s *signalService) Shown() []Shown {
	var out []Shown
	for _, m := range s.fake.Sent() {
		chat := m.GroupID
		if len(m.Recipients) == 1 {
			chat = m.Recipients[0]
		}
		out = append(out, Shown{At: platform.Address{Platform: "signal", Chat: chat}, Text: m.Message})
	}
	return out
}

func (s *signalService) Command(line string) string { return line }
func (s *signalService) Mention(text string) string { return text }
func (s *signalService) RefuseThreads()             {}

func (s *signalService) OwnerWritesElsewhere(t testing.TB, text string) {
	s.fake.PushSent(signalFriend, text)
}

// DropDuringHandoff holds the handoff's first message in the daemon while
// the event stream drops and comes back.
func (s *signalService) DropDuringHandoff(t testing.TB) func(testing.TB) {
	release := s.fake.HoldSends()
	t.Cleanup(release)
	return func(t testing.TB) {
		t.Helper()
		testutil.Eventually(t, testutil.Patience, func() bool { return s.fake.Held() > 0 }, "the handoff to send something")
		streams := s.fake.Opened()
		s.fake.DropStreams()
		testutil.Eventually(t, testutil.Patience, func() bool { return s.fake.Opened() > streams && s.fake.Streams() > 0 }, "the adapter to reopen the event stream")
		release()
	}
}

// IMessage is the BlueBubbles server fake on baton's Apple ID: the home is
// the owner's direct chat with it.
func IMessage() Harness { return imessageHarness{} }

const (
	imessagePassword = "bb-server-password"
	imessageOwner    = "+15550001111"
	imessageStranger = "+15559999999"
)

type imessageHarness struct{}

func (imessageHarness) Caps() Caps { return Caps{Drops: true} }

func (imessageHarness) Start(t testing.TB) Service {
	t.Helper()
	fake := imessagetest.New(t, imessagePassword)
	return &imessageService{fake: fake, t: t}
}

type imessageService struct {
	fake *imessagetest.Server
	t    testing.TB
}

// adapters points the server's webhook at the new adapter.
func (s *imessageService) adapters(mem platform.Memory) []platform.Adapter {
	a, err := imessage.New(imessage.Config{URL: s.fake.URL(), Password: imessagePassword, Listen: "127.0.0.1:0",
		WebhookSecret: "hook-secret", CheckEvery: 20 * time.Millisecond, Memory: mem, Logger: quiet()})
	if err != nil {
		s.t.Fatal(err)
	}
	s.t.Cleanup(func() { a.Close() })
	s.fake.SetWebhook(a.WebhookURL())
	return []platform.Adapter{a}
}

func (s *imessageService) Setup() Setup {
	return Setup{
		Platform: "imessage", Display: "iMessage", Personal: true,
		Adapters: s.adapters,
		Owners:   []string{imessageOwner},
		Home:     platform.Address{Platform: "imessage", Kind: platform.DM, Chat: imessagetest.DM(imessageOwner)},
	}
}

func (s *imessageService) Say(t testing.TB, at platform.Address, who Person, text string) {
	if who == Stranger {
		s.fake.Receive(imessageStranger, imessagetest.DM(imessageStranger), text)
		return
	}
	s.fake.Receive(imessageOwner, at.Chat, text)
}

func (s *imessageService) Shown() []Shown {
	var out []Shown
	for _, m := range s.fake.Sent() {
		at := platform.Address{Platform: "imessage"}
		if len(m.Chats) == 1 {
			at.Chat = m.Chats[0].GUID
		}
		out = append(out, Shown{At: at, Text: m.Text})
	}
	return out
}

func (s *imessageService) Command(line string) string { return line }
func (s *imessageService) Mention(text string) string { return text }
func (s *imessageService) RefuseThreads()             {}

// DropDuringHandoff holds the handoff's first message while the server
// fails the adapter's health check: the adapter's run ends and is
// restarted.
func (s *imessageService) DropDuringHandoff(t testing.TB) func(testing.TB) {
	release := s.fake.HoldSends()
	t.Cleanup(release)
	return func(t testing.TB) {
		t.Helper()
		testutil.Eventually(t, testutil.Patience, func() bool { return s.fake.Held() > 0 }, "the handoff to send something")
		s.fake.FailNext("message/query", 502, 0)
		failed := func() bool {
			for _, c := range s.fake.Calls() {
				if c.Method == "message/query" && c.Status == 502 {
					return true
				}
			}
			return false
		}
		testutil.Eventually(t, testutil.Patience, failed, "the adapter to meet the failed check")
		queries := s.fake.CallCount("message/query")
		testutil.Eventually(t, testutil.Patience, func() bool { return s.fake.CallCount("message/query") > queries }, "the adapter back after the failed check")
		release()
	}
}

// WhatsApp is the in-memory account fake (no fake WhatsApp server is
// practical: see whatsapptest): the home is the owner's chat with
// themselves.
func WhatsApp() Harness { return whatsappHarness{} }

const (
	whatsappSelf   = "4915550000@s.whatsapp.net"
	whatsappFriend = "4915559999@s.whatsapp.net"
)

type whatsappHarness struct{}

func (whatsappHarness) Caps() Caps { return Caps{Drops: true} }

func (whatsappHarness) Start(t testing.TB) Service {
	t.Helper()
	fake := whatsapptest.New(whatsappSelf)
	return &whatsappService{fake: fake, t: t}
}

type whatsappService struct {
	fake *whatsapptest.Fake
	t    testing.TB
}

func (s *whatsappService) adapters(platform.Memory) []platform.Adapter {
	a, err := whatsapp.New(whatsapp.Config{Client: s.fake, Logger: quiet()})
	if err != nil {
		s.t.Fatal(err)
	}
	return []platform.Adapter{a}
}

func (s *whatsappService) Setup() Setup {
	return Setup{
		Platform: "whatsapp", Display: "WhatsApp", Personal: true,
		Adapters: s.adapters,
		Owners:   []string{whatsappSelf},
		Home:     whatsapp.HomeAddress(whatsappSelf),
	}
}

func (s *whatsappService) Say(t testing.TB, at platform.Address, who Person, text string) {
	if who == Stranger {
		s.fake.PushFrom(whatsappFriend, whatsappFriend, "Eve", text)
		return
	}
	s.fake.Push(whatsapp.Message{Chat: at.Chat, Sender: whatsappSelf, SenderName: "Owner", FromMe: true, Text: text})
}

func (s *whatsappService) Shown() []Shown {
	var out []Shown
	for _, m := range s.fake.Shown() {
		out = append(out, Shown{At: platform.Address{Platform: "whatsapp", Chat: m.Chat}, Text: m.Text})
	}
	return out
}

func (s *whatsappService) Command(line string) string { return line }
func (s *whatsappService) Mention(text string) string { return text }
func (s *whatsappService) RefuseThreads()             {}

func (s *whatsappService) OwnerWritesElsewhere(t testing.TB, text string) {
	s.fake.Push(whatsapp.Message{Chat: whatsappFriend, Sender: whatsappSelf, FromMe: true, Text: text})
}

// DropDuringHandoff holds the handoff's first message while the
// connection drops and comes back.
func (s *whatsappService) DropDuringHandoff(t testing.TB) func(testing.TB) {
	release := s.fake.HoldSends()
	t.Cleanup(release)
	return func(t testing.TB) {
		t.Helper()
		testutil.Eventually(t, testutil.Patience, func() bool { return s.fake.Held() > 0 }, "the handoff to send something")
		connects := s.fake.Connects()
		s.fake.Drop()
		testutil.Eventually(t, testutil.Patience, func() bool { return s.fake.Connects() > connects && s.fake.Listening() > 0 }, "the adapter to reconnect")
		release()
	}
}
