package telegram

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
	if spec.Name != Name || spec.Display != "Telegram" || spec.Trusted {
		t.Fatalf("spec %+v", spec)
	}
	ctx := t.Context()
	if _, err := spec.Open(ctx, setup("", nil)); !errors.Is(err, platform.ErrNotConfigured) {
		t.Errorf("no token: %v", err)
	}
	if _, err := spec.Open(ctx, setup("server_url: http://127.0.0.1:1\n", nil)); !errors.Is(err, platform.ErrNotConfigured) {
		t.Errorf("section without a token: %v", err)
	}
	a, err := spec.Open(ctx, setup("", map[string]string{EnvToken: "1:env"}))
	if err != nil || a.(*Adapter).cfg.Token != "1:env" {
		t.Errorf("token from the environment: %v", err)
	}
	a, err = spec.Open(ctx, setup("token: 1:config\nserver_url: http://127.0.0.1:1\n", map[string]string{EnvToken: "1:env"}))
	if err != nil || a.(*Adapter).cfg.Token != "1:config" || a.(*Adapter).cfg.ServerURL != "http://127.0.0.1:1" {
		t.Errorf("token from config wins: %v", err)
	}
	if _, err := spec.Open(ctx, setup("tokn: x\n", nil)); err == nil || !strings.Contains(err.Error(), "tokn") {
		t.Errorf("unknown field accepted: %v", err)
	}
}
