package discord_test

import (
	"strings"
	"testing"

	"github.com/baton-agent/baton/internal/platform"
	"github.com/baton-agent/baton/internal/platform/discord"
	"github.com/baton-agent/baton/internal/platform/discord/discordtest"
	"github.com/baton-agent/baton/internal/testutil"
)

// Each message of a stored delivery carries an enforced nonce of at most
// 25 characters from the delivery key, the same on every try; a message
// not stored carries none. (That a repeat is shown once is the
// conformance suite's RepeatedDeliveryShownOnce.)
func TestDeliveryNonces(t *testing.T) {
	fake := discordtest.New(t, token)
	a := newAdapter(t, fake, token)
	home := platform.Address{Platform: "discord", Kind: platform.Group, Chat: fake.Home()}
	ctx := testutil.Context(t, 0)
	once := platform.WithDeliveryKey(ctx, "in:1:part:0")
	long := strings.Repeat("long ", discord.MaxMessageLen/5) + "tail"
	for _, ad := range []*discord.Adapter{a, newAdapter(t, fake, token)} {
		if _, err := ad.Send(once, home, long); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := a.Send(ctx, home, "not stored"); err != nil {
		t.Fatal(err)
	}
	nonces := map[string]bool{}
	for _, p := range fake.Posts() {
		switch {
		case p.Content == "not stored":
			if p.Nonce != "" {
				t.Errorf("a message not stored carried nonce %q", p.Nonce)
			}
		case p.Nonce == "" || len(p.Nonce) > 25 || !p.Enforced:
			t.Errorf("message %s: nonce %q (enforced %v)", p.MessageID, p.Nonce, p.Enforced)
		default:
			nonces[p.Nonce] = true
		}
	}
	if len(nonces) != 2 {
		t.Errorf("two messages sent twice carried %d nonces, want 2", len(nonces))
	}
}
