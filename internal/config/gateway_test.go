package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func writeConfig(t *testing.T, home, s string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(home, FileName), []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestLoadGateway(t *testing.T) {
	home := t.TempDir()
	writeConfig(t, home, "gateway:\n  owners:\n    telegram: [\"42\"]\n  homes:\n    telegram: \"telegram:dm:42\"\n  handoff_lease: 5s\nweb:\n  listen: 127.0.0.1:9999\ntelegram:\n  server_url: http://127.0.0.1:1\n")
	c, err := Load(home)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Gateway.Owners["telegram"]; len(got) != 1 || got[0] != "42" {
		t.Errorf("owners = %v", c.Gateway.Owners)
	}
	if c.Gateway.Homes["telegram"] != "telegram:dm:42" {
		t.Errorf("loaded %+v", c)
	}
	if g := c.Gateway.WithDefaults(); g.HandoffLease != 5*time.Second || g.ShutdownGrace != 10*time.Second {
		t.Errorf("defaults %+v", g)
	}

	writeConfig(t, home, "gateway:\n  homes:\n    telegram: \"12345\"\n")
	if _, err := Load(home); err == nil || !strings.Contains(err.Error(), "telegram:dm:12345") {
		t.Errorf("bad home key accepted: %v", err)
	}
	// A Matrix room id is not told to be a DM's.
	writeConfig(t, home, "gateway:\n  homes:\n    matrix: \"!roomid:example.org\"\n")
	if _, err := Load(home); err == nil || !strings.Contains(err.Error(), "matrix:group:!roomid:example.org") {
		t.Errorf("a home without its platform: %v; want the group form shown too", err)
	}
}

func TestSection(t *testing.T) {
	home := t.TempDir()
	writeConfig(t, home, "store: \"sqlite:\"\nweb:\n  listen: 127.0.0.1:9999\n  enabled: false\ntelegram:\n  tokn: x\n")
	c, err := Load(home)
	if err != nil {
		t.Fatal(err)
	}
	if c.Store != "sqlite:" {
		t.Errorf("store = %q", c.Store)
	}
	var web struct {
		Listen  string `yaml:"listen"`
		Enabled *bool  `yaml:"enabled"`
	}
	decode, present := c.Section("web")
	if !present {
		t.Fatal("web section not present")
	}
	if err := decode(&web); err != nil || web.Listen != "127.0.0.1:9999" || web.Enabled == nil || *web.Enabled {
		t.Errorf("web section: %+v, %v", web, err)
	}

	var tg struct {
		Token string `yaml:"token"`
	}
	decode, present = c.Section("telegram")
	if err := decode(&tg); !present || err == nil || !strings.Contains(err.Error(), "tokn") {
		t.Errorf("unknown field in a section: present %v, %v", present, err)
	}

	tg.Token = "kept"
	decode, present = c.Section("slack")
	if err := decode(&tg); present || err != nil || tg.Token != "kept" {
		t.Errorf("absent section: present %v, %+v, %v", present, tg, err)
	}
}

func TestCheckSections(t *testing.T) {
	home := t.TempDir()
	writeConfig(t, home, "model:\n  provider: offline\nweb: {}\ntelegarm:\n  token: x\n")
	c, err := Load(home)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.CheckSections([]string{"web", "telegram"}); err != nil {
		if !strings.Contains(err.Error(), `"telegarm"`) || !strings.Contains(err.Error(), "files, gateway, mcp, model, store, telegram, tools, voice, web") {
			t.Errorf("unknown key: %v", err)
		}
	} else {
		t.Error("unknown top-level key accepted")
	}
	delete(c.Platforms, "telegarm")
	if err := c.CheckSections([]string{"web", "telegram"}); err != nil {
		t.Errorf("known keys refused: %v", err)
	}
}
