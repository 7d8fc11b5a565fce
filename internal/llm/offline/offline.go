// Package offline is the responder baton uses when no model is configured.
// It never pretends to be a model: every answer says that none is set up
// (the first one of a conversation how to set one up) and echoes what it
// got, so the rest of the flow (session, transcript, UI) can still be tried.
package offline

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/baton-agent/baton/internal/llm"
	"github.com/baton-agent/baton/internal/plural"
)

// Name is what Provider.Name returns.
const Name = "offline"

// maxEcho bounds the echoed user text so a pasted file does not come back whole.
const maxEcho = 200

// Setup says how to configure a model. The first reply of a conversation
// starts with it; later ones only say that no model is answering, so the
// same notice is not read again and again. Its last sentence is a
// paragraph of its own: markdown would join it to the last bullet.
const Setup = `No model is configured, so this is baton's offline responder, not a model.
To use a model, set one of:
  - OPENAI_API_KEY (and OPENAI_BASE_URL for any OpenAI-compatible server)
  - ANTHROPIC_API_KEY
  - OPENROUTER_API_KEY
  - or run Ollama on 127.0.0.1:11434

Or write the provider, model and key to $BATON_HOME/config.yaml.`

// SetupFor is Setup naming configFile, the config.yaml baton reads, by its
// path; "" keeps $BATON_HOME/config.yaml.
func SetupFor(configFile string) string {
	if configFile == "" {
		return Setup
	}
	return strings.Replace(Setup, "$BATON_HOME/config.yaml", configFile, 1)
}

// Reminder starts the replies after the first: no model is answering.
const Reminder = "(baton's offline responder, not a model: no model is configured.)"

// Provider is the offline responder. The zero value is ready to use.
type Provider struct {
	// ConfigFile is the config.yaml the setup notice names; "" names it
	// as $BATON_HOME/config.yaml.
	ConfigFile string
}

var _ llm.Provider = Provider{}

// New returns the offline responder.
func New() Provider { return Provider{} }

// Name is "offline".
func (Provider) Name() string { return Name }

// Chat answers with the setup note and a short echo of the request. It never
// returns tool calls, whatever tools are offered.
func (p Provider) Chat(ctx context.Context, req llm.Request, onDelta func(llm.Delta)) (llm.Response, error) {
	if err := ctx.Err(); err != nil {
		return llm.Response{}, fmt.Errorf("offline: %w", err)
	}
	lead := SetupFor(p.ConfigFile)
	if toldBefore(req) {
		lead = Reminder
	}
	text := lead + "\n\n" + echo(req)
	if onDelta != nil {
		onDelta(llm.Delta{Text: text})
	}
	return llm.Response{Text: text, StopReason: "stop"}, nil
}

// toldBefore reports whether an earlier reply in the conversation already
// carried the setup notice.
func toldBefore(req llm.Request) bool {
	first, _, _ := strings.Cut(Setup, "\n")
	for _, m := range req.Messages {
		if m.Role == llm.RoleAssistant && strings.Contains(m.Content, first) {
			return true
		}
	}
	return false
}

// echo describes what arrived: the latest user text, shortened, and how
// much else came with it.
func echo(req llm.Request) string {
	last := ""
	var parts []llm.Part
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if req.Messages[i].Role == llm.RoleUser {
			last, parts = req.Messages[i].Content, req.Messages[i].Parts
			break
		}
	}
	var b strings.Builder
	switch {
	case last != "":
		fmt.Fprintf(&b, "You said: %q", shorten(strings.TrimSpace(last)))
	case len(parts) == 0:
		b.WriteString("Received no user message.")
	}
	if len(parts) > 0 {
		if b.Len() > 0 {
			b.WriteString(", with ")
		} else {
			b.WriteString("You sent ")
		}
		names := make([]string, len(parts))
		for i, p := range parts {
			names[i] = p.Name
			if names[i] == "" {
				names[i] = p.MediaType
			}
		}
		fmt.Fprintf(&b, "%s (%s)", plural.Count(len(parts), "file", "files"), strings.Join(names, ", "))
	}
	fmt.Fprintf(&b, "\n(%s in the conversation, %s offered.)", plural.Count(len(req.Messages), "message", "messages"), plural.Count(len(req.Tools), "tool", "tools"))
	return b.String()
}

func shorten(s string) string {
	if utf8.RuneCountInString(s) <= maxEcho {
		return s
	}
	r := []rune(s)
	return string(r[:maxEcho]) + "…"
}
