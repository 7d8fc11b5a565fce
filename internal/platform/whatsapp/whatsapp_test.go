package whatsapp_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/baton-agent/baton/internal/platform"
	"github.com/baton-agent/baton/internal/platform/platformtest"
	"github.com/baton-agent/baton/internal/platform/whatsapp"
	"github.com/baton-agent/baton/internal/platform/whatsapp/whatsapptest"
	"github.com/baton-agent/baton/internal/store/sqlite"
	"github.com/baton-agent/baton/internal/testutil"
)

func TestSendFormatsForWhatsApp(t *testing.T) {
	fake := whatsapptest.New(self)
	a := newAdapter(t, fake, "")
	id, err := a.Send(testutil.Context(t, 0), whatsapp.HomeAddress(self), "**Booked**: the *9:40*, not ~~10:10~~; ref `AB12`.\n\n```\nseat 42\n```")
	if err != nil {
		t.Fatal(err)
	}
	sent := fake.Sent()
	if len(sent) != 1 || sent[0].ID != id || sent[0].Chat != self {
		t.Fatalf("sent %+v, id %q", sent, id)
	}
	want := "*Booked*: the _9:40_, not ~10:10~; ref `AB12`.\n\n```\nseat 42\n```"
	if sent[0].Text != want {
		t.Errorf("sent %q, want %q", sent[0].Text, want)
	}
}

func TestSendSplitsLongReplies(t *testing.T) {
	fake := whatsapptest.New(self)
	a := newAdapter(t, fake, "")
	para := strings.Repeat("ä", 1500)
	text := strings.Join([]string{para, para, para, para}, "\n\n") // 6000+ runes
	if _, err := a.Send(testutil.Context(t, 0), whatsapp.HomeAddress(self), text); err != nil {
		t.Fatal(err)
	}
	sent := fake.Sent()
	if len(sent) < 2 {
		t.Fatalf("a %d-rune reply went as %d message(s)", utf8.RuneCountInString(text), len(sent))
	}
	total := 0
	for _, m := range sent {
		n := utf8.RuneCountInString(m.Text)
		if n > whatsapp.MaxMessageLen {
			t.Errorf("a part of %d runes exceeds %d", n, whatsapp.MaxMessageLen)
		}
		total += strings.Count(m.Text, "ä")
	}
	if total != 6000 {
		t.Errorf("the parts carry %d of 6000 letters", total)
	}
}

func TestTypingIsComposing(t *testing.T) {
	fake := whatsapptest.New(self)
	a := newAdapter(t, fake, "")
	if err := a.Typing(testutil.Context(t, 0), whatsapp.HomeAddress(self)); err != nil {
		t.Fatal(err)
	}
	if got := fake.ComposingIn(); len(got) != 1 || got[0] != self {
		t.Errorf("composing shown in %v", got)
	}
	fake.NoPresence()
	err := a.Typing(testutil.Context(t, 0), whatsapp.HomeAddress(self))
	if cl, _ := platform.Classify(err); cl != platform.ClassUnsupported {
		t.Errorf("a refused presence: %v, class %v", err, cl)
	}
}

func TestSendRefusesOtherAddresses(t *testing.T) {
	a := newAdapter(t, whatsapptest.New(self), "")
	for _, to := range []platform.Address{
		{Platform: "signal", Kind: platform.DM, Chat: self},
		{Platform: whatsapp.Name, Kind: platform.Group, Chat: "120363@g.us", Thread: "7"},
		{Platform: whatsapp.Name, Kind: platform.DM, Chat: "no-jid"},
	} {
		_, err := a.Send(testutil.Context(t, 0), to, "hi")
		if cl, _ := platform.Classify(err); cl != platform.ClassPermanent {
			t.Errorf("Send to %s: %v, class %v; want permanent", to.Key(), err, cl)
		}
	}
}

// Only the owner's chat with themselves (and a configured home) is
// baton's: what others write, and what the owner writes to them, is not
// handed over — yet it is acknowledged, so nothing waits on it.
func TestOnlyTheOwnChatIsHandedOver(t *testing.T) {
	const group = "120363025@g.us"
	const friend = "4915559999@s.whatsapp.net"
	fake := whatsapptest.New(self)
	a := newAdapter(t, fake, group)
	got := make(chan platform.Event, 10)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- a.Run(ctx, platform.ReceiverFunc(func(_ context.Context, ev platform.Event) error { got <- ev; return nil }))
	}()
	defer func() {
		cancel()
		if err := testutil.Receive(t, done, "Run to return"); err != nil {
			t.Errorf("Run after cancel: %v", err)
		}
	}()
	private := []string{
		fake.PushFrom(friend, friend, "Eve", "are you free tonight?"),                                              // a friend to the owner
		fake.Push(whatsapp.Message{Chat: friend, Sender: self, FromMe: true, Text: "yes, at eight"}),               // the owner to a friend
		fake.PushFrom("120363999@g.us", friend, "Eve", "family group chatter"),                                     // another group
		fake.Push(whatsapp.Message{Chat: self, Sender: friend, Text: "impossible, but not from the owner anyway"}), // not FromMe
	}
	own := fake.PushSelf("hello baton")
	inHome := fake.PushFrom(group, self, "Owner", "in the home group")
	ev := testutil.Receive(t, got, "an event")
	if ev.ID != self+"/"+own || ev.Text != "hello baton" || ev.SenderID != self || ev.At != whatsapp.HomeAddress(self) {
		t.Errorf("first event %+v", ev)
	}
	ev = testutil.Receive(t, got, "an event")
	if ev.ID != group+"/"+inHome || ev.At.Kind != platform.Group || ev.At.Chat != group {
		t.Errorf("second event %+v", ev)
	}
	for _, id := range private {
		if !fake.Acked(id) {
			t.Errorf("private message %s was not acknowledged", id)
		}
	}
	select {
	case ev := <-got:
		t.Errorf("a private message was handed over: %+v", ev)
	default:
	}
}

func TestLoggedOutIsRefusedWithTheLinkHint(t *testing.T) {
	fake := whatsapptest.New(self)
	a := newAdapter(t, fake, "")
	fake.LogOut()
	err := a.Run(testutil.Context(t, 0), platform.ReceiverFunc(func(context.Context, platform.Event) error { return nil }))
	if cl, _ := platform.Classify(err); cl != platform.ClassRefused || !strings.Contains(err.Error(), "baton whatsapp link") {
		t.Errorf("Run of a logged-out device: %v, class %v", err, cl)
	}
	_, err = a.Send(testutil.Context(t, 0), whatsapp.HomeAddress(self), "hi")
	if cl, _ := platform.Classify(err); cl != platform.ClassPermanent || !errors.Is(err, whatsapp.ErrLoggedOut) {
		t.Errorf("Send from a logged-out device: %v, class %v", err, cl)
	}
}

func TestSpec(t *testing.T) {
	spec := whatsapp.Spec()
	if spec.Name != whatsapp.Name || !spec.Personal || spec.Trusted {
		t.Errorf("spec %+v", spec)
	}
	var subs []string
	for _, c := range spec.Subcommands {
		subs = append(subs, c.Name)
	}
	if strings.Join(subs, " ") != "link unlink" {
		t.Errorf("subcommands %v", subs)
	}
	asProgram(t)
	home := t.TempDir()
	file := filepath.Join(home, "state.db")
	open := func(section string) (platform.Adapter, error) {
		s := platformtest.Setup(t, whatsapp.Name, section, nil)
		s.Home, s.StoreFile = home, file
		return spec.Open(testutil.Context(t, 0), s)
	}
	const enabled = "enabled: true\n"
	if _, err := open(""); !errors.Is(err, platform.ErrNotConfigured) {
		t.Errorf("not enabled: %v", err)
	}
	if _, err := open("enabled: false\n"); !errors.Is(err, platform.ErrNotConfigured) {
		t.Errorf("enabled: false: %v", err)
	}
	if _, err := open(enabled); err == nil || errors.Is(err, platform.ErrNotConfigured) {
		t.Errorf("enabled without baton's store: %v", err)
	}
	if _, err := os.Stat(file); !os.IsNotExist(err) {
		t.Errorf("the adapter created the store itself: %v", err)
	}
	// A store on a Postgres server gives no file: that is said.
	noFile := platformtest.Setup(t, whatsapp.Name, enabled, nil)
	noFile.Home = home
	if _, err := spec.Open(testutil.Context(t, 0), noFile); err == nil || !strings.Contains(err.Error(), "Postgres") {
		t.Errorf("enabled with the store on a server: %v", err)
	}
	st, err := sqlite.Open(testutil.Context(t, 0), file)
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	_, err = open(enabled)
	if !errors.Is(err, platform.ErrNotConfigured) || !strings.Contains(err.Error(), "baton whatsapp link") {
		t.Errorf("enabled, not linked: %v", err)
	}
	if strings.Contains(err.Error(), whatsapp.LegacyStoreFile) {
		t.Errorf("hint names a device file that is not there: %v", err)
	}
	// A device file from before the device moved into state.db is named.
	if err := os.WriteFile(filepath.Join(home, whatsapp.LegacyStoreFile), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := open(enabled); err == nil || !strings.Contains(err.Error(), whatsapp.LegacyStoreFile) {
		t.Errorf("old device file not named: %v", err)
	}
	if _, err := open(enabled + "home: family\n"); err == nil || errors.Is(err, platform.ErrNotConfigured) {
		t.Errorf("a home that is no JID: %v", err)
	}

	// Without baton-whatsapp the rest of the gateway runs, and the
	// warning says what to install.
	t.Setenv("BATON_WHATSAPP", filepath.Join(home, "nowhere", whatsapp.ProgramName))
	_, err = open(enabled)
	if !errors.Is(err, platform.ErrNotConfigured) || !errors.Is(err, whatsapp.ErrNoProgram) || !strings.Contains(err.Error(), "go install") {
		t.Errorf("enabled, no baton-whatsapp: %v", err)
	}
}

func TestConfigFor(t *testing.T) {
	got := whatsapp.ConfigFor(self)
	for _, want := range []string{"enabled: true", `whatsapp: ["` + self + `"]`, `"whatsapp:dm:` + self + `"`} {
		if !strings.Contains(got, want) {
			t.Errorf("config lines %q lack %q", got, want)
		}
	}
}
