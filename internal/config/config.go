package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/joho/godotenv"
	"go.yaml.in/yaml/v3"
)

// FileName is the configuration file inside BATON_HOME.
const FileName = "config.yaml"

// Config is everything a person can set in config.yaml.
type Config struct {
	Model    ModelConfig    `yaml:"model"`
	Tools    ToolsConfig    `yaml:"tools"`
	Gateway  GatewayConfig  `yaml:"gateway"`
	Web      WebConfig      `yaml:"web"`
	Telegram TelegramConfig `yaml:"telegram"`
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
}

// ToolsConfig governs the agent's tools.
type ToolsConfig struct {
	// Allow lists tools, or shell command prefixes as "shell:git status",
	// that run without asking for approval.
	Allow        []string      `yaml:"allow"`
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
		return c, fmt.Errorf("%s: %w (see README.md, Configuration)", path, err)
	}
	switch c.Model.Provider {
	case "", ProviderOpenAI, ProviderAnthropic, ProviderOpenRouter, ProviderOllama, ProviderOffline:
	default:
		return c, fmt.Errorf("%s: model.provider %q is not one of openai, anthropic, openrouter, ollama, offline", path, c.Model.Provider)
	}
	if err := c.checkPlatforms(); err != nil {
		return c, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}
