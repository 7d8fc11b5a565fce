package whatsapp_test

import (
	"log/slog"
	"regexp"
	"strings"
	"testing"

	"github.com/baton-agent/baton/internal/platform"
	"github.com/baton-agent/baton/internal/platform/whatsapp"
	"github.com/baton-agent/baton/internal/platform/whatsapp/whatsapptest"
	"github.com/baton-agent/baton/internal/testutil"
)

// whatsmeowID is the form of the ids whatsmeow makes up for the messages
// it sends.
var whatsmeowID = regexp.MustCompile(`^3EB0[0-9A-F]{18}$`)

// Every send of one stored delivery — after its acknowledgement was lost,
// and by a new adapter as after a restart — carries the same message ids,
// so the phones show each message once; another delivery of the same
// words gets other ids, and a send not stored leaves the id to the client.
func TestRepeatedDeliveryCarriesOneID(t *testing.T) {
	t.Run("in-process", func(t *testing.T) { repeatedDelivery(t, false) })
	t.Run("through-baton-whatsapp", func(t *testing.T) { repeatedDelivery(t, true) })
}

// repeatedDelivery runs the test with the adapters talking to the fake
// directly, or each through baton-whatsapp's protocol (Serve on pipes).
func repeatedDelivery(t *testing.T, piped bool) {
	fake := whatsapptest.New(self)
	newAdapter := func(t *testing.T, fake *whatsapptest.Fake, home string) *whatsapp.Adapter {
		var client whatsapp.Client = fake
		if piped {
			p, _, err := whatsapp.StartPiped(t.Context(), fake, nil, slog.New(slog.DiscardHandler))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { p.Close() })
			client = p
		}
		a, err := whatsapp.New(whatsapp.Config{Client: client, Home: home, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	a := newAdapter(t, fake, "")
	home := whatsapp.HomeAddress(self)
	ctx := testutil.Context(t, 0)
	once := platform.WithDeliveryKey(ctx, "in:1:part:0")

	fake.LoseNextSend()
	if _, err := a.Send(once, home, "said once"); err == nil {
		t.Fatal("Send whose acknowledgement was lost succeeded")
	}
	first, err := a.Send(once, home, "said once")
	if err != nil {
		t.Fatal(err)
	}
	restarted := newAdapter(t, fake, "")
	again, err := restarted.Send(once, home, "said once")
	if err != nil {
		t.Fatal(err)
	}
	if again != first || !whatsmeowID.MatchString(first) {
		t.Errorf("the same delivery went as %q and %q, want one id shaped as whatsmeow's", first, again)
	}

	// Two messages in one Send, the first one's acknowledgement lost.
	para := strings.Repeat("a", whatsapp.MaxMessageLen-10)
	long := para + "\n\n" + para
	twoParts := platform.WithDeliveryKey(ctx, "in:2:part:0")
	fake.LoseNextSend()
	if _, err := a.Send(twoParts, home, long); err == nil {
		t.Fatal("Send whose first acknowledgement was lost succeeded")
	}
	for _, ad := range []*whatsapp.Adapter{a, restarted} {
		if _, err := ad.Send(twoParts, home, long); err != nil {
			t.Fatal(err)
		}
	}

	other, err := a.Send(platform.WithDeliveryKey(ctx, "in:3:part:0"), home, "said once")
	if err != nil || other == first {
		t.Fatalf("another delivery: %q, %v", other, err)
	}
	if _, err := a.Send(ctx, home, "said once"); err != nil {
		t.Fatal(err)
	}

	sent, shown := fake.Sent(), fake.Shown()
	if len(sent) != 10 {
		t.Errorf("%d sends, want 10", len(sent))
	}
	if len(shown) != 5 {
		var got []string
		for _, m := range shown {
			got = append(got, m.ID)
		}
		t.Errorf("the phone shows %d messages, want 5: ids %q", len(shown), got)
	}
	ids := map[string][]string{} // text → ids sent with it
	for _, m := range sent {
		ids[m.Text] = append(ids[m.Text], m.ID)
	}
	// The first part lost, then both parts twice: ids p0 p0 p1 p0 p1.
	if got := ids[para]; len(got) != 5 || got[0] == got[2] || got[1] != got[0] || got[3] != got[0] || got[4] != got[2] {
		t.Errorf("the two parts went with ids %q", got)
	}
}
