package discord

import (
	"fmt"
	"strconv"

	"github.com/baton-agent/baton/internal/platform"
)

// homeForm is how a home is written in config.yaml.
const homeForm = "discord:group:<channel id>, e.g. discord:group:1234567890123456789"

// checkAddress refuses what no Discord channel or thread is: Discord names
// both by numeric ids (Developer Mode → Copy Channel ID), never by name.
func checkAddress(a platform.Address) error {
	for _, id := range []string{a.Chat, a.Thread} {
		if _, err := strconv.ParseUint(id, 10, 64); id != "" && err != nil {
			return fmt.Errorf("discord: %q is not a channel or thread id, which is a number (Developer Mode, then right-click → Copy Channel ID)", id)
		}
	}
	return nil
}
