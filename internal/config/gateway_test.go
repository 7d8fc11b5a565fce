package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestLoadGateway(t *testing.T) {
	home := t.TempDir()
	write := func(s string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(home, FileName), []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("gateway:\n  owners:\n    telegram: [\"42\"]\n  homes:\n    telegram: \"telegram:dm:42\"\n  handoff_lease: 5s\nweb:\n  listen: 127.0.0.1:9999\ntelegram:\n  server_url: http://127.0.0.1:1\n")
	c, err := Load(home)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Gateway.Owners["telegram"]; len(got) != 1 || got[0] != "42" {
		t.Errorf("owners = %v", c.Gateway.Owners)
	}
	if c.Gateway.Homes["telegram"] != "telegram:dm:42" || c.Web.Addr() != "127.0.0.1:9999" || !c.Web.On() {
		t.Errorf("loaded %+v", c)
	}
	if g := c.Gateway.WithDefaults(); g.HandoffLease != 5*time.Second || g.ShutdownGrace != 10*time.Second {
		t.Errorf("defaults %+v", g)
	}
	if tok := c.TelegramToken(envOf(map[string]string{"TELEGRAM_BOT_TOKEN": "t"})); tok != "t" {
		t.Errorf("token from env = %q", tok)
	}

	write("web:\n  listen: 0.0.0.0:80\n")
	if _, err := Load(home); err == nil || !strings.Contains(err.Error(), "allow_remote") {
		t.Errorf("remote listen accepted: %v", err)
	}
	write("web:\n  listen: 0.0.0.0:80\n  allow_remote: true\n")
	if _, err := Load(home); err != nil {
		t.Errorf("allowed remote listen refused: %v", err)
	}
	write("web:\n  enabled: false\n  listen: nonsense\n")
	if c, err := Load(home); err != nil || c.Web.On() {
		t.Errorf("disabled web: %+v %v", c.Web, err)
	}
	write("gateway:\n  homes:\n    telegram: \"12345\"\n")
	if _, err := Load(home); err == nil || !strings.Contains(err.Error(), "telegram:dm:12345") {
		t.Errorf("bad home key accepted: %v", err)
	}
}
