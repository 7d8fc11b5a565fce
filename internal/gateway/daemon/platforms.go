package daemon

import (
	"log/slog"

	"github.com/baton-agent/baton/internal/config"
	"github.com/baton-agent/baton/internal/platform"
	"github.com/baton-agent/baton/internal/platform/telegram"
)

// chatAdapters builds the chat-service adapters the configuration enables:
// each one whose credentials are set.
func chatAdapters(cfg config.Config, env func(string) string, log *slog.Logger) ([]platform.Adapter, error) {
	var out []platform.Adapter
	if tok := cfg.TelegramToken(env); tok != "" {
		a, err := telegram.New(telegram.Config{Token: tok, ServerURL: cfg.Telegram.ServerURL, Logger: log})
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, nil
}
