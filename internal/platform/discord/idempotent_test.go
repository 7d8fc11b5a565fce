package discord_test

import (
	"strings"
	"testing"

	"github.com/baton-agent/baton/internal/platform"
	"github.com/baton-agent/baton/internal/platform/discord"
	"github.com/baton-agent/baton/internal/platform/discord/discordtest"
	"github.com/baton-agent/baton/internal/testutil"
)

// A stored delivery sent again — after its answer was lost, and by a new
// adapter as after a restart — is one message: each message of it carries
// an enforced nonce from the delivery key, and Discord gives back the
// message it made. A reply of two messages whose first answer was lost is
// two messages, not three.
func TestRepeatedDeliveryIsOneMessage(t *testing.T) {
	fake := discordtest.New(t, token)
	a := newAdapter(t, fake, token)
	home := platform.Address{Platform: "discord", Kind: platform.Group, Chat: fake.Home()}
	ctx := testutil.Context(t, 0)
	once := platform.WithDeliveryKey(ctx, "in:1:part:0")

	fake.LoseNext(discordtest.RouteCreateMessage)
	if _, err := a.Send(once, home, "said once"); err == nil {
		t.Fatal("Send whose answer was lost succeeded")
	}
	first, err := a.Send(once, home, "said once")
	if err != nil {
		t.Fatal(err)
	}
	restarted := newAdapter(t, fake, token)
	again, err := restarted.Send(once, home, "said once")
	if err != nil {
		t.Fatal(err)
	}
	if again != first {
		t.Errorf("the same delivery made messages %s and %s", first, again)
	}

	// Two messages in one Send (the text is over the limit): the first
	// one's answer is lost, so the try fails after Discord took it.
	long := strings.Repeat("long ", discord.MaxMessageLen/5) + "tail"
	twoParts := platform.WithDeliveryKey(ctx, "in:2:part:0")
	fake.LoseNext(discordtest.RouteCreateMessage)
	if _, err := a.Send(twoParts, home, long); err == nil {
		t.Fatal("Send whose first answer was lost succeeded")
	}
	for _, ad := range []*discord.Adapter{a, restarted} {
		if _, err := ad.Send(twoParts, home, long); err != nil {
			t.Fatal(err)
		}
	}

	// The same words as another delivery, or with no key, are new messages.
	if other, err := a.Send(platform.WithDeliveryKey(ctx, "in:3:part:0"), home, "said once"); err != nil || other == first {
		t.Fatalf("another delivery: %s, %v", other, err)
	}
	if _, err := a.Send(ctx, home, "said once"); err != nil {
		t.Fatal(err)
	}

	var bodies []string
	for _, p := range fake.Shown() {
		bodies = append(bodies, p.Content)
	}
	count := map[string]int{}
	for _, b := range bodies {
		switch {
		case strings.HasPrefix(b, "long"):
			count["long"]++
		case strings.HasSuffix(b, "tail"):
			count["tail"]++
		default:
			count[b]++
		}
	}
	if want := map[string]int{"said once": 3, "long": 1, "tail": 1}; len(bodies) != 5 || count["said once"] != want["said once"] || count["long"] != 1 || count["tail"] != 1 {
		t.Errorf("shown %v, want %v", count, want)
	}
	if n := fake.CallCount(discordtest.RouteCreateMessage); n != 10 {
		t.Errorf("%d create requests, want 10 (5 of them repeats)", n)
	}
	for _, p := range fake.Posts() {
		switch {
		case p.Nonce == "" && p.Content == "said once":
			// the Send without a delivery key
		case len(p.Nonce) > 25 || !p.Enforced:
			t.Errorf("message %s: nonce %q (enforced %v)", p.MessageID, p.Nonce, p.Enforced)
		}
	}
}
