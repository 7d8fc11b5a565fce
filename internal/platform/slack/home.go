package slack

import (
	"fmt"
	"strings"

	"github.com/baton-agent/baton/internal/platform"
)

// homeForm is how a home is written in config.yaml.
const homeForm = "slack:group:C0123456789 (a DM: slack:dm:D0123456789)"

// checkAddress refuses what no Slack channel or thread is: a channel is
// named by its id (C…, G…, D…: capitals and digits), never by #name, and
// a thread by its root message's ts (digits, '.', digits).
func checkAddress(a platform.Address) error {
	if a.Chat == "" || strings.TrimFunc(a.Chat, func(r rune) bool { return r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' }) != "" {
		return fmt.Errorf("slack: %q is not a channel id (C…, G… or D…; the channel's details in Slack show it), not its name", a.Chat)
	}
	if sec, frac, ok := strings.Cut(a.Thread, "."); a.Thread != "" && (!ok || !digits(sec) || !digits(frac)) {
		return fmt.Errorf("slack: %q is not a thread's ts, like 1700000000.123456", a.Thread)
	}
	return nil
}

func digits(s string) bool {
	return s != "" && strings.Trim(s, "0123456789") == ""
}
