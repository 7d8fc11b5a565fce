package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func envOf(kv map[string]string) Env { return func(k string) string { return kv[k] } }

func TestLoad(t *testing.T) {
	home := t.TempDir()
	c, err := Load(home)
	if err != nil || c.Model.Provider != "" {
		t.Fatalf("missing file: %+v, %v", c, err)
	}
	os.WriteFile(filepath.Join(home, FileName), []byte("model:\n  provider: anthropic\n  name: claude-x\n  context_window: 1000\ntools:\n  allow: [read_file, \"shell:git status\"]\n  shell_timeout: 30s\n"), 0o600)
	c, err = Load(home)
	if err != nil {
		t.Fatal(err)
	}
	if c.Model.Provider != "anthropic" || c.Model.Name != "claude-x" || c.Model.ContextWindow != 1000 ||
		len(c.Tools.Allow) != 2 || c.Tools.ShellTimeout != 30*time.Second {
		t.Fatalf("loaded %+v", c)
	}
	os.WriteFile(filepath.Join(home, FileName), []byte("model:\n  provder: openai\n"), 0o600)
	if _, err := Load(home); err == nil || !strings.Contains(err.Error(), "provder") {
		t.Fatalf("misspelt key: %v", err)
	}
	os.WriteFile(filepath.Join(home, FileName), []byte("model:\n  provider: gpt\n"), 0o600)
	if _, err := Load(home); err == nil || !strings.Contains(err.Error(), "not one of") {
		t.Fatalf("bad provider: %v", err)
	}
	os.WriteFile(filepath.Join(home, FileName), []byte("model: [\n"), 0o600)
	if _, err := Load(home); err == nil {
		t.Fatal("broken YAML accepted")
	}
}

func TestResolve(t *testing.T) {
	ctx := t.Context()
	cases := []struct {
		name string
		in   ModelConfig
		env  map[string]string
		want ModelConfig
	}{
		{"anthropic key", ModelConfig{}, map[string]string{"ANTHROPIC_API_KEY": "a", "OPENAI_API_KEY": "o"},
			ModelConfig{Provider: ProviderAnthropic, APIKey: "a", Name: DefaultAnthropicModel}},
		{"openai base url only", ModelConfig{}, map[string]string{"OPENAI_BASE_URL": "http://127.0.0.1:9/v1", "BATON_MODEL": "llama"},
			ModelConfig{Provider: ProviderOpenAI, BaseURL: "http://127.0.0.1:9/v1", Name: "llama"}},
		{"openrouter", ModelConfig{}, map[string]string{"OPENROUTER_API_KEY": "r"},
			ModelConfig{Provider: ProviderOpenRouter, APIKey: "r", BaseURL: OpenRouterBaseURL, Name: DefaultOpenRouterModel}},
		{"config wins", ModelConfig{Provider: ProviderOpenAI, APIKey: "cfg", Name: "m"}, map[string]string{"OPENAI_API_KEY": "env"},
			ModelConfig{Provider: ProviderOpenAI, APIKey: "cfg", Name: "m"}},
		{"explicit offline", ModelConfig{Provider: ProviderOffline}, map[string]string{"OPENAI_API_KEY": "o"},
			ModelConfig{Provider: ProviderOffline}},
	}
	for _, c := range cases {
		got := Resolve(ctx, c.in, envOf(c.env))
		c.want.ContextWindow = DefaultContextWindow
		if got != c.want {
			t.Errorf("%s: got %+v, want %+v", c.name, got, c.want)
		}
	}
}
