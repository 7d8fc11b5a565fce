package daemon

import (
	"io"
	"log/slog"
	"testing"

	"github.com/baton-agent/baton/internal/config"
)

func TestChatAdaptersFollowCredentials(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

	got, err := chatAdapters(config.Config{}, env(nil), log)
	if err != nil || len(got) != 0 {
		t.Fatalf("no credentials: %d adapters, %v", len(got), err)
	}
	got, err = chatAdapters(config.Config{}, env(map[string]string{"TELEGRAM_BOT_TOKEN": "1:env"}), log)
	if err != nil || len(got) != 1 || got[0].Name() != "telegram" {
		t.Fatalf("token from the environment: %v, %v", got, err)
	}
	var c config.Config
	c.Telegram.Token = "1:config"
	got, err = chatAdapters(c, env(nil), log)
	if err != nil || len(got) != 1 {
		t.Fatalf("token from config: %v, %v", got, err)
	}
}
