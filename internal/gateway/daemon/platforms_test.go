package daemon

import (
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/config"
	"github.com/baton-agent/baton/internal/gateway/control"
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

func TestPlatformStateForPeople(t *testing.T) {
	now := time.Date(2026, 11, 23, 14, 2, 0, 0, time.Local)
	for _, tc := range []struct {
		p    control.Platform
		want string
	}{
		{control.Platform{State: "live", Live: true, Since: now}, "live"},
		{control.Platform{State: "starting"}, "starting"},
		{control.Platform{State: "down", Since: now, NextTry: now.Add(30 * time.Second), Error: "getMe: 502 Bad Gateway"},
			"down since 14:02:00, next try in 30s: getMe: 502 Bad Gateway"},
		{control.Platform{State: "refused", Since: now, Error: "Telegram refused the bot token (401 Unauthorized)"},
			"refused since 14:02:00: Telegram refused the bot token (401 Unauthorized)"},
		{control.Platform{Live: false, Error: "old gateway"}, "down: old gateway"},
	} {
		if got := platformState(tc.p, now); got != tc.want {
			t.Errorf("platformState(%+v) = %q, want %q", tc.p, got, tc.want)
		}
	}
}
