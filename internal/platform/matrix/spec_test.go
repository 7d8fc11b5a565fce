package matrix

import (
	"errors"
	"strings"
	"testing"

	"github.com/baton-agent/baton/internal/platform"
	"github.com/baton-agent/baton/internal/platform/platformtest"
)

func TestSpecOpen(t *testing.T) {
	setup := func(section string, env map[string]string) platform.Setup {
		s := platformtest.Setup(t, Name, section, env)
		s.Owners = []string{"@me:example.org"}
		return s
	}
	spec := Spec()
	if spec.Name != Name || spec.Display != "Matrix" || spec.Trusted {
		t.Fatalf("spec %+v", spec)
	}
	ctx := t.Context()
	if _, err := spec.Open(ctx, setup("", nil)); !errors.Is(err, platform.ErrNotConfigured) {
		t.Errorf("no token: %v", err)
	}
	if _, err := spec.Open(ctx, setup("homeserver: https://matrix.example.org\n", nil)); !errors.Is(err, platform.ErrNotConfigured) {
		t.Errorf("section without a token: %v", err)
	}
	if _, err := spec.Open(ctx, setup("", map[string]string{EnvToken: "syt_x"})); err == nil || !strings.Contains(err.Error(), "homeserver") {
		t.Errorf("a token without a homeserver: %v", err)
	}
	a, err := spec.Open(ctx, setup("", map[string]string{EnvToken: "syt_env", EnvHomeserver: "https://env.example.org", EnvUserID: "@bot:env.example.org"}))
	if err != nil {
		t.Fatalf("from the environment: %v", err)
	}
	c := a.(*Adapter).cfg
	if c.AccessToken != "syt_env" || c.HomeserverURL != "https://env.example.org" || c.UserID != "@bot:env.example.org" || len(c.Owners) != 1 {
		t.Errorf("from the environment: %v owners %v", c, c.Owners)
	}
	a, err = spec.Open(ctx, setup("homeserver: https://matrix.example.org\nuser_id: \"@baton:example.org\"\naccess_token: syt_config\n",
		map[string]string{EnvToken: "syt_env", EnvHomeserver: "https://env.example.org"}))
	if err != nil {
		t.Fatal(err)
	}
	if c := a.(*Adapter).cfg; c.AccessToken != "syt_config" || c.HomeserverURL != "https://matrix.example.org" || c.UserID != "@baton:example.org" {
		t.Errorf("the section wins: %v", c)
	}
	if _, err := spec.Open(ctx, setup("acess_token: x\n", nil)); err == nil || !strings.Contains(err.Error(), "acess_token") {
		t.Errorf("unknown field accepted: %v", err)
	}
}
