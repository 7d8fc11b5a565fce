package slack

import (
	"errors"
	"strings"
	"testing"

	"github.com/baton-agent/baton/internal/platform"
	"github.com/baton-agent/baton/internal/platform/platformtest"
)

func TestSpecOpen(t *testing.T) {
	setup := func(section string, env map[string]string) platform.Setup {
		return platformtest.Setup(t, Name, section, env)
	}
	spec := Spec()
	if spec.Name != Name || spec.Display != "Slack" || spec.Trusted {
		t.Fatalf("spec %+v", spec)
	}
	ctx := t.Context()
	if _, err := spec.Open(ctx, setup("", nil)); !errors.Is(err, platform.ErrNotConfigured) {
		t.Errorf("no tokens: %v", err)
	}
	if _, err := spec.Open(ctx, setup("", map[string]string{EnvAppToken: "xapp-1"})); !errors.Is(err, platform.ErrNotConfigured) {
		t.Errorf("an app token alone in the environment: %v", err)
	}
	if _, err := spec.Open(ctx, setup("", map[string]string{EnvBotToken: "xoxb-1"})); err == nil || !strings.Contains(err.Error(), EnvAppToken) {
		t.Errorf("a bot token without the app token: %v", err)
	}
	a, err := spec.Open(ctx, setup("", map[string]string{EnvBotToken: "xoxb-env", EnvAppToken: "xapp-env"}))
	if err != nil || a.(*Adapter).cfg.BotToken != "xoxb-env" || a.(*Adapter).cfg.AppToken != "xapp-env" {
		t.Fatalf("tokens from the environment: %v", err)
	}
	a, err = spec.Open(ctx, setup("bot_token: xoxb-config\napp_token: xapp-config\napi_url: http://127.0.0.1:1/api\nfiles_url: http://127.0.0.1:2\n",
		map[string]string{EnvBotToken: "xoxb-env", EnvAppToken: "xapp-env"}))
	if err != nil {
		t.Fatal(err)
	}
	if c := a.(*Adapter).cfg; c.BotToken != "xoxb-config" || c.AppToken != "xapp-config" || c.APIURL != "http://127.0.0.1:1/api/" || c.FilesURL != "http://127.0.0.1:2" {
		t.Errorf("config wins: %+v", c)
	}
	if s := a.(*Adapter).cfg.String(); strings.Contains(s, "xoxb") || strings.Contains(s, "xapp") {
		t.Errorf("Config.String shows a token: %s", s)
	}
	if _, err := spec.Open(ctx, setup("bot_tokn: x\n", nil)); err == nil || !strings.Contains(err.Error(), "bot_tokn") {
		t.Errorf("unknown field accepted: %v", err)
	}
}
