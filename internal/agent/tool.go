package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/baton-agent/baton/internal/llm"
)

// Tool is something the model can call.
type Tool struct {
	Name        string
	Description string
	Schema      json.RawMessage // JSON Schema of the arguments object
	// ReadOnly tools run without approval, as long as Inside agrees.
	ReadOnly bool
	// Run does the work. An error becomes the tool result "error: …" for
	// the model; it never fails the turn. Output returned with an error is
	// passed on too.
	Run func(ctx context.Context, args json.RawMessage) (string, error)
	// Subject, if set, names what a call acts on (the command, the path):
	// it is shown when asking for approval and matched against
	// "tool:prefix" allowlist entries. It gets arguments as the model sent
	// them and must cope with garbage.
	Subject func(args json.RawMessage) string
	// SubjectKind says how "tool:rule" allowlist entries match Subject.
	SubjectKind SubjectKind
	// Inside, if set, reports whether a call stays where the tool may act
	// freely (the working directory and the paths config names). A call
	// that does not is asked about, even for a read-only tool, and a bare
	// tool name in the allowlist does not cover it: only a rule naming its
	// subject does.
	Inside func(args json.RawMessage) bool
	// Control, if set, names the repository control directory a call
	// acts in (a .git, a bare repository: their config and hooks run
	// commands), as a subject would name it, or "" for none. Only a rule
	// naming that directory or something in it covers such a call.
	Control func(args json.RawMessage) string
}

// Registry holds the tools offered to the model, in registration order.
type Registry struct {
	mu    sync.RWMutex
	tools []Tool
	index map[string]int
}

// NewRegistry registers tools, failing on the first bad one.
func NewRegistry(tools ...Tool) (*Registry, error) {
	r := &Registry{}
	for _, t := range tools {
		if err := r.Register(t); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// Register adds t; names must be unique.
func (r *Registry) Register(t Tool) error {
	if t.Name == "" || t.Run == nil {
		return errors.New("register tool: a tool needs a name and a Run function")
	}
	if len(t.Schema) > 0 && !json.Valid(t.Schema) {
		return fmt.Errorf("register tool %s: schema is not valid JSON", t.Name)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.index == nil {
		r.index = map[string]int{}
	}
	if _, dup := r.index[t.Name]; dup {
		return fmt.Errorf("register tool %s: already registered", t.Name)
	}
	r.index[t.Name] = len(r.tools)
	r.tools = append(r.tools, t)
	return nil
}

// Get finds a tool by name.
func (r *Registry) Get(name string) (Tool, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	i, ok := r.index[name]
	if !ok {
		return Tool{}, false
	}
	return r.tools[i], true
}

// List is the tool descriptions sent to the model.
func (r *Registry) List() []llm.Tool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]llm.Tool, 0, len(r.tools))
	for _, t := range r.tools {
		schema := t.Schema
		if len(schema) == 0 {
			schema = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		out = append(out, llm.Tool{Name: t.Name, Description: t.Description, Parameters: schema})
	}
	return out
}
