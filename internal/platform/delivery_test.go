package platform_test

import (
	"context"
	"testing"

	"github.com/baton-agent/baton/internal/platform"
)

// A delivery's token is stable for one (place, delivery, part) and
// differs when any of them does; a Send with no delivery key has none.
func TestDeliveryToken(t *testing.T) {
	home := platform.Address{Platform: "matrix", Kind: platform.Group, Chat: "!room:localhost"}
	other := platform.Address{Platform: "matrix", Kind: platform.Group, Chat: "!other:localhost"}
	ctx := platform.WithDeliveryKey(context.Background(), "in:7:part:0")

	if tok, ok := platform.DeliveryToken(context.Background(), home, 0, 24); ok || tok != "" {
		t.Errorf("no delivery key gave a token %q", tok)
	}
	first, ok := platform.DeliveryToken(ctx, home, 0, 24)
	if !ok || len(first) != 24 {
		t.Fatalf("token %q (ok %v), want 24 hex digits", first, ok)
	}
	// Another Send of the same delivery, as after a restart: a fresh
	// context carrying the same key.
	again, _ := platform.DeliveryToken(platform.WithDeliveryKey(context.Background(), "in:7:part:0"), home, 0, 24)
	if again != first {
		t.Errorf("a second try got %q, the first %q", again, first)
	}
	seen := map[string]string{first: "first"}
	for name, got := range map[string]func() (string, bool){
		"next part":   func() (string, bool) { return platform.DeliveryToken(ctx, home, 1, 24) },
		"other place": func() (string, bool) { return platform.DeliveryToken(ctx, other, 0, 24) },
		"other delivery": func() (string, bool) {
			return platform.DeliveryToken(platform.WithDeliveryKey(ctx, "in:7:part:1"), home, 0, 24)
		},
	} {
		tok, _ := got()
		if prev, dup := seen[tok]; dup {
			t.Errorf("%s has the token of %s: %q", name, prev, tok)
		}
		seen[tok] = name
	}
	if tok, _ := platform.DeliveryToken(ctx, home, 0, 1000); len(tok) != 64 {
		t.Errorf("a token longer than the digest: %d digits", len(tok))
	}
	if short, _ := platform.DeliveryToken(ctx, home, 0, 8); short != first[:8] {
		t.Errorf("a shorter token %q is not a prefix of %q", short, first)
	}
}
