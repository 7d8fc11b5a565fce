package place_test

import (
	"errors"
	"testing"

	"github.com/baton-agent/baton/internal/place"
)

func TestUnknown(t *testing.T) {
	err := place.Unknown("nowhere", "cli", []string{"web", "telegram", "slack"})
	if !errors.Is(err, place.ErrUnknown) || err.Error() != `unknown place "nowhere": the places are cli (the terminal), web, telegram and slack` {
		t.Errorf("got %v", err)
	}
	if got := place.NotSetUp("Discord", []string{"web", "telegram"}); got != "Discord is not set up in the gateway (set up there: web, telegram); README.md tells how to set it up" {
		t.Errorf("got %q", got)
	}
	if err := place.Unknown("x", "cli", nil); err.Error() != `unknown place "x": the places are cli (the terminal)` {
		t.Errorf("got %v", err)
	}
}
