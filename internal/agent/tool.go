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
	// Server is the MCP server offering the tool ("" for baton's own): its
	// name is "server.tool", and "mcp:server.tool" or "mcp:server.*" in
	// the allowlist lets it run unasked.
	Server string
	// Sends marks a tool whose result's files go to the person
	// (send_file). Other tools' files are their output, for the model.
	Sends bool
}

// ToolSource offers tools found only at run time: an MCP server's, named
// "server.tool". Listing them may start the server.
type ToolSource interface {
	// Tools are what the source offers now; what cannot start offers
	// none (and says why where its state is shown).
	Tools(ctx context.Context) []Tool
	// Servers names the servers the source may start, for checking
	// "mcp:server.tool" allowlist entries before any has started.
	Servers() []string
}

// Registry holds the tools offered to the model, in registration order.
type Registry struct {
	mu    sync.RWMutex
	tools []Tool
	index map[string]int
	// sources offer tools at run time; found holds what they offered
	// when last listed, by name.
	sources []ToolSource
	found   map[string]Tool
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

// AddSource adds tools found at run time (an MCP server's), after the
// registered ones; a name already taken is not offered again.
func (r *Registry) AddSource(src ToolSource) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sources = append(r.sources, src)
}

// Own names the registered tools (baton's own), in order.
func (r *Registry) Own() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]string, len(r.tools))
	for i, t := range r.tools {
		out[i] = t.Name
	}
	return out
}

// Sources are the sources added, in order.
func (r *Registry) Sources() []ToolSource {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return append([]ToolSource(nil), r.sources...)
}

// Servers names every server the sources may start.
func (r *Registry) Servers() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	var out []string
	for _, s := range r.sources {
		out = append(out, s.Servers()...)
	}
	return out
}

// Get finds a tool by name: a registered one, or one a source offered
// when last listed.
func (r *Registry) Get(name string) (Tool, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if i, ok := r.index[name]; ok {
		return r.tools[i], true
	}
	t, ok := r.found[name]
	return t, ok
}

// Find is Get that lists the sources again (starting what they must) when
// name is not known yet: a turn taken up after a restart may call a tool
// before any list was asked for.
func (r *Registry) Find(ctx context.Context, name string) (Tool, bool) {
	if t, ok := r.Get(name); ok {
		return t, true
	}
	r.all(ctx)
	return r.Get(name)
}

// all is every tool offered now: the registered ones, then the sources'.
func (r *Registry) all(ctx context.Context) []Tool {
	r.mu.RLock()
	tools := append([]Tool(nil), r.tools...)
	sources := append([]ToolSource(nil), r.sources...)
	r.mu.RUnlock()
	if len(sources) == 0 {
		return tools
	}
	builtin := make(map[string]bool, len(tools))
	for _, t := range tools {
		builtin[t.Name] = true
	}
	found := map[string]Tool{}
	for _, src := range sources {
		for _, t := range src.Tools(ctx) {
			if builtin[t.Name] || t.Run == nil {
				continue
			}
			if _, dup := found[t.Name]; dup {
				continue
			}
			found[t.Name] = t
			tools = append(tools, t)
		}
	}
	r.mu.Lock()
	r.found = found
	r.mu.Unlock()
	return tools
}

// Sends reports whether the named tool's result files go to the person
// (Tool.Sends); a tool no longer offered does not send.
func (r *Registry) Sends(name string) bool {
	if r == nil {
		return false
	}
	t, ok := r.Get(name)
	return ok && t.Sends
}

// List is the tool descriptions sent to the model, the sources' included
// (which may start them).
func (r *Registry) List(ctx context.Context) []llm.Tool {
	all := r.all(ctx)
	out := make([]llm.Tool, 0, len(all))
	for _, t := range all {
		schema := t.Schema
		if len(schema) == 0 {
			schema = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		out = append(out, llm.Tool{Name: t.Name, Description: t.Description, Parameters: schema})
	}
	return out
}
