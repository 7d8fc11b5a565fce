package whatsapp

import (
	"fmt"
	"strings"

	"github.com/baton-agent/baton/internal/platform"
)

// homeForm is how a home is written in config.yaml.
const homeForm = "whatsapp:dm:4915550000@s.whatsapp.net (your own chat; a group: whatsapp:group:120363…@g.us)"

// checkAddress refuses what no WhatsApp chat is: chats are named by JIDs,
// user@server, never by a bare phone number.
func checkAddress(a platform.Address) error {
	if user, server, ok := strings.Cut(a.Chat, "@"); !ok || user == "" || server == "" {
		return fmt.Errorf("whatsapp: %q is not a chat JID, like 4915550000@s.whatsapp.net", a.Chat)
	}
	return nil
}
