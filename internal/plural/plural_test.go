package plural_test

import (
	"testing"

	"github.com/baton-agent/baton/internal/plural"
)

func TestCount(t *testing.T) {
	for _, c := range []struct {
		n    int
		want string
	}{
		{0, "0 replies"},
		{1, "1 reply"},
		{2, "2 replies"},
		{-1, "-1 replies"},
	} {
		if got := plural.Count(c.n, "reply", "replies"); got != c.want {
			t.Errorf("Count(%d) = %q, want %q", c.n, got, c.want)
		}
	}
	if got := plural.Word(1, "waits", "wait"); got != "waits" {
		t.Errorf("Word(1) = %q", got)
	}
}
