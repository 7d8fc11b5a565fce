package config

import (
	"errors"
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

func TestConfigErrorsNameTheKey(t *testing.T) {
	home := t.TempDir()
	for _, tc := range []struct{ yaml, want string }{
		{"tools:\n  shell_timeout: 30\n", "line 2: tools.shell_timeout: want a duration like 30s, not 30"},
		{"gateway:\n  shutdown_grace: 10\n", "line 2: gateway.shutdown_grace: want a duration like 30s, not 10"},
		{"model: gpt-4\n", `line 1: model: want a section of "key: value" lines indented below it, not gpt-4`},
		{"model:\n  context_window: big\n", "line 2: model.context_window: want a whole number, not big"},
		{"tools:\n  allow: shell\n", `line 2: tools.allow: want a list (one "- item" per line), not shell`},
		{"tools:\n  shel_timeout: 3s\n", "line 2: unknown key tools.shel_timeout (tools takes allow, paths, shell_timeout)"},
	} {
		os.WriteFile(filepath.Join(home, FileName), []byte(tc.yaml), 0o600)
		_, err := Load(home)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: got %v\nwant it to say %q", tc.yaml, err, tc.want)
			continue
		}
		for _, goism := range []string{"ModelConfig", "ToolsConfig", "GatewayConfig", "!!", "time.Duration", "unmarshal", "[]string"} {
			if strings.Contains(err.Error(), goism) {
				t.Errorf("%q: the error speaks Go (%q): %v", tc.yaml, goism, err)
			}
		}
	}
}

func TestSectionErrorsNameTheKey(t *testing.T) {
	home := t.TempDir()
	os.WriteFile(filepath.Join(home, FileName), []byte("telegram:\n  token: [a, b]\n  allowed: 5\n"), 0o600)
	c, err := Load(home)
	if err != nil {
		t.Fatal(err)
	}
	decode, _ := c.Section("telegram")
	var v struct {
		Token string `yaml:"token"`
	}
	err = decode(&v)
	if err == nil || !strings.Contains(err.Error(), "telegram.token: want text, not a list") || strings.Contains(err.Error(), "!!") {
		t.Errorf("section type error: %v", err)
	}
	if err == nil || !strings.Contains(err.Error(), "unknown key telegram.allowed (telegram takes token)") || strings.Contains(err.Error(), "struct") {
		t.Errorf("section unknown key: %v", err)
	}
}

func TestHomeThatIsAFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "not-a-dir")
	os.WriteFile(file, []byte("x"), 0o600)
	t.Setenv(HomeEnv, file)
	_, err := Home()
	if !errors.Is(err, ErrHomeNotDir) || !strings.Contains(err.Error(), file) || strings.Contains(err.Error(), ".env") {
		t.Fatalf("Home with a file: %v", err)
	}
	dir := filepath.Join(t.TempDir(), "new")
	t.Setenv(HomeEnv, dir)
	if h, err := Home(); err != nil || h != dir {
		t.Fatalf("a missing home is fine: %q, %v", h, err)
	}
}

func TestMCPServersChecked(t *testing.T) {
	for _, tc := range []struct {
		yaml, want string
	}{
		{"mcp:\n  servers:\n    git.hub:\n      command: x\n", "letters, digits"},
		{"mcp:\n  servers:\n    github: {}\n", "give command"},
		{"mcp:\n  servers:\n    github:\n      command: x\n      url: http://127.0.0.1:1/\n", "not both"},
		{"mcp:\n  servers:\n    github:\n      url: ftp://x/\n", "not an http(s) URL"},
		{"mcp:\n  servers:\n    github:\n      command: x\n      headers: {A: b}\n", "headers are for a url server"},
		{"mcp:\n  servers:\n    github:\n      url: http://127.0.0.1:1/\n      env: {A: b}\n", "args, env and cwd are for a command"},
	} {
		home := t.TempDir()
		if err := os.WriteFile(filepath.Join(home, FileName), []byte(tc.yaml), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := Load(home)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: got %v, want an error saying %q", tc.yaml, err, tc.want)
		}
	}
	home := t.TempDir()
	good := "mcp:\n  servers:\n    github:\n      command: github-mcp\n      args: [stdio]\n      env: {TOKEN: '${GH}'}\n      trust_read_only: true\n      timeout: 30s\n    docs:\n      url: http://127.0.0.1:9/mcp\n"
	if err := os.WriteFile(filepath.Join(home, FileName), []byte(good), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Load(home)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.MCP.Names(); len(got) != 2 || got[0] != "docs" || got[1] != "github" {
		t.Fatalf("names %v", got)
	}
	gh := c.MCP.Servers["github"]
	if !gh.TrustReadOnly || gh.CallTimeout().String() != "30s" || gh.Env["TOKEN"] != "${GH}" || c.MCP.Servers["docs"].CallTimeout() != DefaultMCPTimeout {
		t.Fatalf("github %+v", gh)
	}
}

func TestExpandNamesWhatIsMissing(t *testing.T) {
	env := map[string]string{"GH": "tok"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	if got, err := Expand("Bearer ${GH}", lookup); err != nil || got != "Bearer tok" {
		t.Fatalf("got %q, %v", got, err)
	}
	if _, err := Expand("${NOPE}", lookup); err == nil || !strings.Contains(err.Error(), "${NOPE} is not set") {
		t.Fatalf("got %v", err)
	}
}
