// Package provider builds the llm.Provider that a resolved model
// configuration names, so the terminal and the gateway construct models
// the same way.
package provider

import (
	"fmt"
	"net/http"

	"github.com/baton-agent/baton/internal/config"
	"github.com/baton-agent/baton/internal/keepalive"
	"github.com/baton-agent/baton/internal/llm"
	"github.com/baton-agent/baton/internal/llm/anthropic"
	"github.com/baton-agent/baton/internal/llm/offline"
	"github.com/baton-agent/baton/internal/llm/openai"
)

// Options tune construction; the zero value is what baton uses.
type Options struct {
	HTTPClient *http.Client    // nil: a client that keeps connections to the model's host alive
	Retry      llm.RetryPolicy // zero: llm.WithRetry's defaults
	NoRetry    bool            // tests that script failures may want every error raw
	// ConfigFile is the config.yaml read, named by the offline responder.
	ConfigFile string
}

// New builds the provider for m, which should come from config.Resolve
// (so the provider is never empty). Every network provider is wrapped in
// llm.WithRetry; the offline responder is not, it cannot fail.
func New(m config.ModelConfig, o Options) (llm.Provider, error) {
	var (
		p   llm.Provider
		err error
	)
	if m.Provider == config.ProviderOffline || m.Provider == "" {
		return offline.Provider{ConfigFile: o.ConfigFile}, nil
	}
	if o.HTTPClient == nil {
		o.HTTPClient = modelClient()
	}
	switch m.Provider {
	case config.ProviderAnthropic:
		p, err = anthropic.New(anthropic.Config{BaseURL: m.BaseURL, APIKey: m.APIKey, Model: m.Name, HTTPClient: o.HTTPClient})
	case config.ProviderOpenAI, config.ProviderOpenRouter, config.ProviderOllama:
		p, err = openai.New(openai.Config{Name: m.Provider, BaseURL: m.BaseURL, APIKey: m.APIKey, Model: m.Name, HTTPClient: o.HTTPClient, NoImages: !m.SeesImages()})
	default:
		return nil, fmt.Errorf("model provider %q is not one of openai, anthropic, openrouter, ollama, offline", m.Provider)
	}
	if err != nil {
		return nil, fmt.Errorf("set up model provider %s: %w", m.Provider, err)
	}
	if o.NoRetry {
		return p, nil
	}
	return llm.WithRetry(p, o.Retry), nil
}

// MaxModelConns is how many connections to the model's host are open at
// most, all kept alive (see package keepalive): the gateway runs a turn
// per conversation at once.
const MaxModelConns = 64

func modelClient() *http.Client { return keepalive.Client(MaxModelConns) }

// IsOffline reports whether p is the offline responder, which the
// terminal announces at start.
func IsOffline(p llm.Provider) bool { return p.Name() == offline.Name }
