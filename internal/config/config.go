package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/joho/godotenv"
	"go.yaml.in/yaml/v3"
)

// FileName is the configuration file inside BATON_HOME.
const FileName = "config.yaml"

// Config is everything a person can set in config.yaml.
type Config struct {
	Model   ModelConfig   `yaml:"model"`
	Tools   ToolsConfig   `yaml:"tools"`
	Gateway GatewayConfig `yaml:"gateway"`
	Files   FilesConfig   `yaml:"files"`
	Voice   VoiceConfig   `yaml:"voice"`
	MCP     MCPConfig     `yaml:"mcp"`
	// Store says where baton keeps its state, as a URL: empty, "sqlite:",
	// "sqlite:///abs/path" or a plain path for the SQLite file. The
	// BATON_STORE environment variable is used when it is empty.
	Store string `yaml:"store"`
	// Platforms holds every other top-level key raw: each chat platform
	// reads its own section (see Section); a key no platform claims is
	// refused by CheckSections.
	Platforms map[string]yaml.Node `yaml:",inline"`
}

// keys are the top-level keys Config itself reads.
var keys = []string{"model", "tools", "gateway", "store", "files", "voice", "mcp"}

// Section returns a decoder for the top-level section name (a platform's),
// refusing unknown fields, and whether config.yaml has it. With no
// section, decode leaves its argument as it is.
func (c Config) Section(name string) (decode func(v any) error, present bool) {
	n, ok := c.Platforms[name]
	return func(v any) error {
		if !ok {
			return nil
		}
		raw, err := yaml.Marshal(&n)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		dec := yaml.NewDecoder(bytes.NewReader(raw))
		dec.KnownFields(true)
		if err := dec.Decode(v); err != nil && !errors.Is(err, io.EOF) {
			// Lines of the re-encoded section are not config.yaml's.
			return fmt.Errorf("%s: %w", name, readableYAML(err, raw, reflect.TypeOf(v), name, false))
		}
		return nil
	}, ok
}

// CheckSections refuses a top-level key that is neither one of Config's
// own nor one of sections (the platforms' names), naming the accepted keys.
func (c Config) CheckSections(sections []string) error {
	known := map[string]bool{}
	for _, s := range sections {
		known[s] = true
	}
	var unknown []string
	for k := range c.Platforms {
		if !known[k] {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	sort.Strings(unknown)
	accepted := append(append([]string(nil), keys...), sections...)
	sort.Strings(accepted)
	return fmt.Errorf("unknown key %s; the accepted top-level keys are %s (see README.md, Configuration)",
		quoteAll(unknown), strings.Join(accepted, ", "))
}

func quoteAll(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = strconv.Quote(s)
	}
	return strings.Join(q, ", ")
}

// ModelConfig chooses the model provider. Empty fields are filled from the
// environment by Resolve.
type ModelConfig struct {
	// Provider is openai, anthropic, openrouter, ollama or offline.
	Provider        string `yaml:"provider"`
	Name            string `yaml:"name"`
	BaseURL         string `yaml:"base_url"`
	APIKey          string `yaml:"api_key"`
	ContextWindow   int    `yaml:"context_window"`
	MaxOutputTokens int    `yaml:"max_output_tokens"`
	// Images, set false, says the model takes no pictures (many local
	// models): each is described to it in a line instead, and the person
	// is told once. Unset: it takes them.
	Images *bool `yaml:"images"`
}

// SeesImages reports whether the model takes pictures (Images).
func (m ModelConfig) SeesImages() bool { return m.Images == nil || *m.Images }

// VoiceConfig is where voice notes are transcribed: an OpenAI-compatible
// /audio/transcriptions endpoint (OpenAI, Groq, a local whisper.cpp or
// faster-whisper server). Unset, it is the model's own when the model is
// OpenAI's (its base URL and key, model whisper-1).
type VoiceConfig struct {
	BaseURL  string `yaml:"base_url"`
	Model    string `yaml:"model"`
	APIKey   string `yaml:"api_key"`
	Language string `yaml:"language"` // ISO-639-1 ("en"); unset: detected
	// SpeechModel and Speaker speak answers (/voice on) through the same
	// endpoint's /audio/speech; unset: tts-1 and alloy.
	SpeechModel string `yaml:"speech_model"`
	Speaker     string `yaml:"speaker"`
	// Spoken are the places whose new conversations start with spoken
	// answers on, as /voice on would ("telegram", "whatsapp").
	Spoken []string `yaml:"spoken"`
}

// For is v, or where m (resolved) transcribes when v names no endpoint:
// an OpenAI model's own API. A zero BaseURL says none is configured.
func (v VoiceConfig) For(m ModelConfig) VoiceConfig {
	if v.BaseURL != "" || m.Provider != ProviderOpenAI {
		return v
	}
	v.BaseURL = first(m.BaseURL, OpenAIBaseURL)
	v.APIKey = first(v.APIKey, m.APIKey)
	return v
}

// FilesConfig bounds the files messages carry.
type FilesConfig struct {
	// MaxBytes is the largest file kept, in bytes; 0: 25 MiB. A service
	// may allow less (Telegram's bots download at most 20 MB).
	MaxBytes int64 `yaml:"max_bytes"`
	// MaxSessionBytes bounds the files one conversation keeps, in bytes;
	// 0: 500 MiB.
	MaxSessionBytes int64 `yaml:"max_session_bytes"`
	// MaxImages is how many of a conversation's latest pictures the model
	// sees whole each turn; older ones are a line each. 0: 4.
	MaxImages int `yaml:"max_images"`
}

// ToolsConfig governs the agent's tools.
type ToolsConfig struct {
	// Allow lists what runs without asking for approval: a tool name, or
	// "tool:rule" ("shell:git status" exactly, "shell:ls *" with any
	// arguments, "write_file:docs/" under docs). See README.md.
	Allow []string `yaml:"allow"`
	// Paths are directories besides the working directory where file
	// tools act freely.
	Paths        []string      `yaml:"paths"`
	ShellTimeout time.Duration `yaml:"shell_timeout"`
}

// Load reads $home/config.yaml (a missing file is an empty config) and
// $home/.env into the environment (never overriding what is already set).
func Load(home string) (Config, error) {
	var c Config
	if err := godotenv.Load(filepath.Join(home, ".env")); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return c, fmt.Errorf("read %s: %w", filepath.Join(home, ".env"), err)
	}
	path := filepath.Join(home, FileName)
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return c, nil
	}
	if err != nil {
		return c, fmt.Errorf("read config: %w", err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true) // a misspelt key is an error, not silently ignored
	if err := dec.Decode(&c); err != nil && !errors.Is(err, io.EOF) {
		return c, fmt.Errorf("%s: %w (see README.md, Configuration)", path, readableYAML(err, data, reflect.TypeOf(c), "", true))
	}
	switch c.Model.Provider {
	case "", ProviderOpenAI, ProviderAnthropic, ProviderOpenRouter, ProviderOllama, ProviderOffline:
	default:
		return c, fmt.Errorf("%s: model.provider %q is not one of openai, anthropic, openrouter, ollama, offline", path, c.Model.Provider)
	}
	if err := c.checkHomes(); err != nil {
		return c, fmt.Errorf("%s: %w", path, err)
	}
	if err := c.MCP.Check(); err != nil {
		return c, fmt.Errorf("%s: %w (see README.md, Tools from MCP servers)", path, err)
	}
	return c, nil
}
