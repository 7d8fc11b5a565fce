package imessage

import (
	"fmt"
	"strings"

	"github.com/baton-agent/baton/internal/platform"
)

// homeForm is how a home is written in config.yaml.
const homeForm = "imessage:dm:iMessage;-;+15550001111 (BlueBubbles' chat guid)"

// checkAddress refuses what no BlueBubbles chat is: chats are named by
// guids, service;-;handle (or ;+; for a group), never by a bare handle.
func checkAddress(a platform.Address) error {
	if strings.Count(a.Chat, ";") < 2 {
		return fmt.Errorf("imessage: %q is not a chat guid, like iMessage;-;+15550001111", a.Chat)
	}
	return nil
}
