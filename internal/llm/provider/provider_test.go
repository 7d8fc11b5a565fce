package provider_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/config"
	"github.com/baton-agent/baton/internal/llm"
	"github.com/baton-agent/baton/internal/llm/llmtest"
	"github.com/baton-agent/baton/internal/llm/provider"
)

func TestNewTalksToTheConfiguredServer(t *testing.T) {
	srv := llmtest.Start(t)
	for _, m := range []config.ModelConfig{
		{Provider: config.ProviderOpenAI, BaseURL: srv.URL + "/v1", APIKey: "k", Name: "gpt-test"},
		{Provider: config.ProviderOpenRouter, BaseURL: srv.URL + "/v1", APIKey: "k", Name: "router-test"},
		{Provider: config.ProviderOllama, BaseURL: srv.URL + "/v1", APIKey: "ollama", Name: "llama-test"},
		{Provider: config.ProviderAnthropic, BaseURL: srv.URL, APIKey: "k", Name: "claude-test"},
	} {
		p, err := provider.New(m, provider.Options{})
		if err != nil {
			t.Fatalf("%s: %v", m.Provider, err)
		}
		if p.Name() != m.Provider {
			t.Errorf("%s: Name() = %q", m.Provider, p.Name())
		}
		resp, err := p.Chat(t.Context(), llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "ping " + m.Provider}}}, nil)
		if err != nil {
			t.Fatalf("%s: %v", m.Provider, err)
		}
		if resp.Text != "echo: ping "+m.Provider {
			t.Errorf("%s: answer %q", m.Provider, resp.Text)
		}
		reqs := srv.Requests()
		last := reqs[len(reqs)-1]
		if last.Model() != m.Name {
			t.Errorf("%s: model sent %q, want %q", m.Provider, last.Model(), m.Name)
		}
		wantProto := "openai"
		if m.Provider == config.ProviderAnthropic {
			wantProto = "anthropic"
		}
		if last.Protocol() != wantProto {
			t.Errorf("%s: protocol %q", m.Provider, last.Protocol())
		}
		// Only Anthropic goes on from a trailing assistant message; the
		// retrying wrapper keeps saying so.
		if got, want := llm.CanPrefill(p), m.Provider == config.ProviderAnthropic; got != want {
			t.Errorf("%s: CanPrefill = %v, want %v", m.Provider, got, want)
		}
	}
}

func TestNewRetriesUnlessTold(t *testing.T) {
	srv := llmtest.Start(t)
	m := config.ModelConfig{Provider: config.ProviderOpenAI, BaseURL: srv.URL, APIKey: "k", Name: "x"}
	req := llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "a"}}}

	var waits []time.Duration
	p, err := provider.New(m, provider.Options{Retry: llm.RetryPolicy{Sleep: func(_ context.Context, d time.Duration) error {
		waits = append(waits, d)
		return nil
	}}})
	if err != nil {
		t.Fatal(err)
	}
	srv.Push(llmtest.Fail{Status: 500})
	if resp, err := p.Chat(t.Context(), req, nil); err != nil || resp.Text != "echo: a" || len(waits) != 1 {
		t.Fatalf("with retry: %q, %v after %d waits", resp.Text, err, len(waits))
	}

	p, err = provider.New(m, provider.Options{NoRetry: true})
	if err != nil {
		t.Fatal(err)
	}
	srv.Push(llmtest.Fail{Status: 500})
	if _, err := p.Chat(t.Context(), req, nil); !errors.Is(err, llm.ErrServer) {
		t.Fatalf("NoRetry: %v, want ErrServer", err)
	}
}

func TestOfflineAndUnknown(t *testing.T) {
	p, err := provider.New(config.ModelConfig{Provider: config.ProviderOffline}, provider.Options{})
	if err != nil || !provider.IsOffline(p) {
		t.Fatalf("offline: %v, %v", p, err)
	}
	if _, err := provider.New(config.ModelConfig{Provider: "gpt"}, provider.Options{}); err == nil {
		t.Fatal("unknown provider accepted")
	}
	if _, err := provider.New(config.ModelConfig{Provider: config.ProviderOpenAI, BaseURL: "not a url"}, provider.Options{}); err == nil {
		t.Fatal("bad base URL accepted")
	}
}

// Far more turns at once than the bound share its connections: none is
// opened only to be closed again.
func TestBurstOfCallsStaysWithinTheConnectionBound(t *testing.T) {
	srv := llmtest.Start(t)
	p, err := provider.New(config.ModelConfig{Provider: config.ProviderOpenAI, BaseURL: srv.URL, APIKey: "k", Name: "x"}, provider.Options{NoRetry: true})
	if err != nil {
		t.Fatal(err)
	}
	const calls = 3 * provider.MaxModelConns
	errs := make(chan error, calls)
	for i := range calls {
		go func() {
			_, err := p.Chat(t.Context(), llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: fmt.Sprint("call ", i)}}}, nil)
			errs <- err
		}()
	}
	for range calls {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if opened := srv.Connections(); opened > provider.MaxModelConns {
		t.Errorf("%d calls at once opened %d connections; the bound is %d", calls, opened, provider.MaxModelConns)
	}
}

// Many turns at once, then as many again: the second round finds the
// first round's connections kept alive instead of opening new ones.
func TestConcurrentCallsReuseConnections(t *testing.T) {
	srv := llmtest.Start(t)
	p, err := provider.New(config.ModelConfig{Provider: config.ProviderOpenAI, BaseURL: srv.URL, APIKey: "k", Name: "x"}, provider.Options{NoRetry: true})
	if err != nil {
		t.Fatal(err)
	}
	const calls = 16
	round := func() {
		errs := make(chan error, calls)
		for i := range calls {
			go func() {
				_, err := p.Chat(t.Context(), llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: fmt.Sprint("call ", i)}}}, nil)
				errs <- err
			}()
		}
		for range calls {
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
		}
	}
	round()
	first := srv.Connections()
	round()
	// The default transport keeps two idle connections per host, so a
	// second round of 16 would open at least 14 more.
	if opened := srv.Connections() - first; opened > calls/2 {
		t.Errorf("the second round of %d calls opened %d new connections (the first opened %d)", calls, opened, first)
	}
}

// A server that flushes the last event before it ends the body (a proxy
// often does) must not cost the connection: one call after another runs
// on the one connection, for each wire protocol.
func TestStreamEndingLateKeepsTheConnection(t *testing.T) {
	for _, prov := range []string{config.ProviderOpenAI, config.ProviderAnthropic} {
		t.Run(prov, func(t *testing.T) {
			srv := llmtest.Start(t)
			p, err := provider.New(config.ModelConfig{Provider: prov, BaseURL: srv.URL, APIKey: "k", Name: "x"}, provider.Options{NoRetry: true})
			if err != nil {
				t.Fatal(err)
			}
			for i := range 3 {
				srv.Push(llmtest.Reply{Text: fmt.Sprint("answer ", i), HoldEnd: 50 * time.Millisecond})
				resp, err := p.Chat(t.Context(), llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}}, nil)
				if err != nil || resp.Text != fmt.Sprint("answer ", i) {
					t.Fatalf("call %d: %q, %v", i, resp.Text, err)
				}
			}
			if n := srv.Connections(); n != 1 {
				t.Errorf("three calls one after another opened %d connections, want 1", n)
			}
		})
	}
}
