package telegram

import (
	"context"

	"github.com/baton-agent/baton/internal/platform"
)

// Section is the telegram: section of config.yaml.
type Section struct {
	// Token is the bot token from @BotFather; TELEGRAM_BOT_TOKEN if empty.
	Token string `yaml:"token"`
	// ServerURL points at a self-hosted Bot API server; default Telegram's.
	ServerURL string `yaml:"server_url"`
}

// Spec registers Telegram: enabled when a bot token is set, in the
// telegram: section or in TELEGRAM_BOT_TOKEN (the section wins).
func Spec() platform.Spec {
	return platform.Spec{Name: Name, Display: "Telegram", Open: open, CheckAddress: checkAddress, HomeForm: homeForm}
}

func open(_ context.Context, s platform.Setup) (platform.Adapter, error) {
	var sec Section
	if err := s.DecodeSection(&sec); err != nil {
		return nil, err
	}
	tok := s.SectionOrEnv(sec.Token, EnvToken)
	if tok == "" {
		return nil, platform.ErrNotConfigured
	}
	return New(Config{Token: tok, ServerURL: sec.ServerURL, Logger: s.Log})
}
