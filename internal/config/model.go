package config

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"time"
)

// Provider names.
const (
	ProviderOpenAI     = "openai"
	ProviderAnthropic  = "anthropic"
	ProviderOpenRouter = "openrouter"
	ProviderOllama     = "ollama"
	ProviderOffline    = "offline"
)

// Default endpoints and models, used when neither config nor environment
// names one.
const (
	OpenAIBaseURL     = "https://api.openai.com/v1"
	OpenRouterBaseURL = "https://openrouter.ai/api/v1"
	OllamaBaseURL     = "http://127.0.0.1:11434/v1"
	ollamaTagsURL     = "http://127.0.0.1:11434/api/tags"

	DefaultOpenAIModel     = "gpt-4.1-mini"
	DefaultAnthropicModel  = "claude-sonnet-4-5"
	DefaultOpenRouterModel = "openai/gpt-4.1-mini"
	DefaultContextWindow   = 128_000
)

// Env reads one environment variable; tests pass their own.
type Env func(string) string

// Resolve fills the model settings left empty in config from the
// environment: ANTHROPIC_API_KEY, OPENAI_API_KEY (with OPENAI_BASE_URL),
// OPENROUTER_API_KEY, in that order; BATON_MODEL names the model. With none
// set, an Ollama answering on 127.0.0.1:11434 is used, and failing that the
// offline responder.
func Resolve(ctx context.Context, m ModelConfig, env Env) ModelConfig {
	if env == nil {
		env = os.Getenv
	}
	if m.Name == "" {
		m.Name = env("BATON_MODEL")
	}
	if m.Provider == "" {
		switch {
		case env("ANTHROPIC_API_KEY") != "":
			m.Provider = ProviderAnthropic
		case env("OPENAI_API_KEY") != "" || env("OPENAI_BASE_URL") != "":
			m.Provider = ProviderOpenAI
		case env("OPENROUTER_API_KEY") != "":
			m.Provider = ProviderOpenRouter
		default:
			if name, ok := probeOllama(ctx); ok {
				m.Provider = ProviderOllama
				if m.Name == "" {
					m.Name = name
				}
			} else {
				m.Provider = ProviderOffline
			}
		}
	}
	switch m.Provider {
	case ProviderAnthropic:
		m.APIKey = first(m.APIKey, env("ANTHROPIC_API_KEY"))
		m.BaseURL = first(m.BaseURL, env("ANTHROPIC_BASE_URL"))
		m.Name = first(m.Name, DefaultAnthropicModel)
	case ProviderOpenAI:
		m.APIKey = first(m.APIKey, env("OPENAI_API_KEY"))
		m.BaseURL = first(m.BaseURL, env("OPENAI_BASE_URL"))
		m.Name = first(m.Name, DefaultOpenAIModel)
	case ProviderOpenRouter:
		m.APIKey = first(m.APIKey, env("OPENROUTER_API_KEY"))
		m.BaseURL = first(m.BaseURL, OpenRouterBaseURL)
		m.Name = first(m.Name, DefaultOpenRouterModel)
	case ProviderOllama:
		m.BaseURL = first(m.BaseURL, OllamaBaseURL)
		m.APIKey = first(m.APIKey, "ollama") // Ollama ignores the key; the SDK wants one
	}
	if m.ContextWindow <= 0 {
		m.ContextWindow = DefaultContextWindow
	}
	return m
}

// probeOllama asks a local Ollama for its models. Loopback answers or
// refuses at once, so this costs nothing when no Ollama runs.
func probeOllama(ctx context.Context) (string, bool) {
	ctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, ollamaTagsURL, nil)
	if err != nil {
		return "", false
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", false
	}
	defer resp.Body.Close()
	var tags struct {
		Models []struct {
			Name string `json:"name"`
		} `json:"models"`
	}
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&tags) != nil || len(tags.Models) == 0 {
		return "", false
	}
	return tags.Models[0].Name, true
}

func first(vals ...string) string {
	for _, v := range vals {
		if v != "" {
			return v
		}
	}
	return ""
}
