package telegram

import (
	"fmt"
	"strconv"

	"github.com/baton-agent/baton/internal/platform"
)

// homeForm is how a home is written in config.yaml.
const homeForm = "telegram:dm:123456789 (a group: telegram:group:-1001234567890, a topic: telegram:thread:-1001234567890:42)"

// checkAddress refuses what no Telegram chat or topic is: Telegram names
// both by numbers (a group's starts with -100), never by @username.
func checkAddress(a platform.Address) error {
	if _, err := strconv.ParseInt(a.Chat, 10, 64); err != nil {
		return fmt.Errorf("telegram: %q is not a chat id, which is a number (@userinfobot tells yours)", a.Chat)
	}
	if _, err := strconv.Atoi(a.Thread); a.Thread != "" && err != nil {
		return fmt.Errorf("telegram: %q is not a topic id, which is a number", a.Thread)
	}
	return nil
}
