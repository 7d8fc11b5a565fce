package discord

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
	if spec.Name != Name || spec.Display != "Discord" || spec.Trusted {
		t.Fatalf("spec %+v", spec)
	}
	ctx := t.Context()
	if _, err := spec.Open(ctx, setup("", nil)); !errors.Is(err, platform.ErrNotConfigured) {
		t.Errorf("no token: %v", err)
	}
	if _, err := spec.Open(ctx, setup("api_url: http://127.0.0.1:1/api/v10\n", nil)); !errors.Is(err, platform.ErrNotConfigured) {
		t.Errorf("section without a token: %v", err)
	}
	a, err := spec.Open(ctx, setup("", map[string]string{EnvToken: "env-token"}))
	if err != nil || a.(*Adapter).cfg.Token != "env-token" {
		t.Errorf("token from the environment: %v", err)
	}
	a, err = spec.Open(ctx, setup("token: config-token\napi_url: http://127.0.0.1:1/api/v10\ncdn_url: http://127.0.0.1:2/cdn\n", map[string]string{EnvToken: "env-token"}))
	if err != nil || a.(*Adapter).cfg.Token != "config-token" || a.(*Adapter).cfg.APIURL != "http://127.0.0.1:1/api/v10" || a.(*Adapter).cfg.CDNURL != "http://127.0.0.1:2/cdn" {
		t.Errorf("token from config wins: %v", err)
	}
	if _, err := spec.Open(ctx, setup("tokn: x\n", nil)); err == nil || !strings.Contains(err.Error(), "tokn") {
		t.Errorf("unknown field accepted: %v", err)
	}
}

func TestConfigHidesToken(t *testing.T) {
	c := Config{Token: "very-secret", APIURL: "http://x"}
	if strings.Contains(c.String(), "very-secret") || strings.Contains(c.LogValue().String(), "very-secret") {
		t.Errorf("the token shows: %s / %s", c.String(), c.LogValue())
	}
}

func TestThreadName(t *testing.T) {
	long := strings.Repeat("word ", 40)
	got := threadName(long)
	if n := len([]rune(got)); n != maxThreadName || !strings.HasSuffix(got, "…") {
		t.Errorf("a long title became %d characters: %q", n, got)
	}
	if got := threadName("  Trip\n planning  "); got != "Trip planning" {
		t.Errorf("threadName = %q", got)
	}
	if got := threadName("  "); got != "baton" {
		t.Errorf("an empty title became %q", got)
	}
}
