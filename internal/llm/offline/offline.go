// Package offline is the responder baton uses when no model is configured.
// It never pretends to be a model: every answer says that none is set up and
// how to set one up, and echoes what it got so the rest of the flow (session,
// transcript, UI) can still be tried.
package offline

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/baton-agent/baton/internal/llm"
)

// Name is what Provider.Name returns.
const Name = "offline"

// maxEcho bounds the echoed user text so a pasted file does not come back whole.
const maxEcho = 200

// Setup is the part of every reply that says how to configure a model.
const Setup = `No model is configured, so this is baton's offline responder, not a model.
To use a model, set one of:
  - OPENAI_API_KEY (and OPENAI_BASE_URL for any OpenAI-compatible server)
  - ANTHROPIC_API_KEY
  - OPENROUTER_API_KEY
  - or run Ollama on 127.0.0.1:11434
or write the provider, model and key to $BATON_HOME/config.yaml.`

// Provider is the offline responder. The zero value is ready to use.
type Provider struct{}

var _ llm.Provider = Provider{}

// New returns the offline responder.
func New() Provider { return Provider{} }

// Name is "offline".
func (Provider) Name() string { return Name }

// Chat answers with the setup note and a short echo of the request. It never
// returns tool calls, whatever tools are offered.
func (Provider) Chat(ctx context.Context, req llm.Request, onDelta func(llm.Delta)) (llm.Response, error) {
	if err := ctx.Err(); err != nil {
		return llm.Response{}, fmt.Errorf("offline: %w", err)
	}
	text := Setup + "\n\n" + echo(req)
	if onDelta != nil {
		onDelta(llm.Delta{Text: text})
	}
	return llm.Response{Text: text, StopReason: "stop"}, nil
}

// echo describes what arrived: the latest user text, shortened, and how
// much else came with it.
func echo(req llm.Request) string {
	last := ""
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if req.Messages[i].Role == llm.RoleUser {
			last = req.Messages[i].Content
			break
		}
	}
	var b strings.Builder
	if last == "" {
		b.WriteString("Received no user message.")
	} else {
		fmt.Fprintf(&b, "You said: %q", shorten(strings.TrimSpace(last)))
	}
	fmt.Fprintf(&b, "\n(%d message(s) in the conversation, %d tool(s) offered.)", len(req.Messages), len(req.Tools))
	return b.String()
}

func shorten(s string) string {
	if utf8.RuneCountInString(s) <= maxEcho {
		return s
	}
	r := []rune(s)
	return string(r[:maxEcho]) + "…"
}
