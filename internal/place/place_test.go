package place_test

import (
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/place"
)

func TestWording(t *testing.T) {
	now := time.Date(2026, 11, 23, 18, 40, 0, 0, time.Local)
	cases := []struct{ got, want string }{
		{place.Moment(now.Add(-time.Hour), now), "17:40"},
		{place.Moment(now.Add(-48*time.Hour), now), "Nov 21 18:40"},
		{place.Moment(time.Time{}, now), "a while"},
		{place.Elsewhere("Telegram", now.Add(-time.Minute), now), "This conversation is in Telegram now, since 18:39. /continue to bring it here."},
		{place.Left("the terminal"), "This conversation continues in the terminal now. /continue to bring it back here."},
		{place.Here("session ab12", now, now), "Session ab12 is here, since 18:40."},
		{place.Here(`"Trip" (ab12)`, now, now), `"Trip" (ab12) is here, since 18:40.`},
		{place.OnItsWay("the terminal"), "This conversation is on its way to the terminal; what you type here is kept until /continue brings it back."},
		{place.Leaving("session ab12", "Telegram"), "Session ab12 is on its way to Telegram."},
	}
	for _, c := range cases {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}

func TestName(t *testing.T) {
	display := map[string]string{"telegram": "Telegram", "imessage": "iMessage"}
	for key, want := range map[string]string{
		"cli:dm:owner":    "the terminal",
		"telegram:dm:42":  "Telegram",
		"imessage:dm:x":   "iMessage",
		"zulip:group:abc": "Zulip",
		"":                "another place",
	} {
		if got := place.NameOf(key, "cli", display); got != want {
			t.Errorf("NameOf(%q) = %q, want %q", key, got, want)
		}
	}
}
