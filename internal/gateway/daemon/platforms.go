package daemon

import (
	"log/slog"

	"github.com/baton-agent/baton/internal/config"
	"github.com/baton-agent/baton/internal/platform"
)

// chatAdapters builds the chat-service adapters the configuration enables.
func chatAdapters(cfg config.Config, env func(string) string, log *slog.Logger) ([]platform.Adapter, error) {
	_, _, _ = cfg, env, log
	return nil, nil
}
