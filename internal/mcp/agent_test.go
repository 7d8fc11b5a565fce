package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/agent"
	"github.com/baton-agent/baton/internal/agent/tools"
	"github.com/baton-agent/baton/internal/config"
	"github.com/baton-agent/baton/internal/llm"
	"github.com/baton-agent/baton/internal/llm/anthropic"
	"github.com/baton-agent/baton/internal/llm/llmtest"
	"github.com/baton-agent/baton/internal/llm/openai"
	"github.com/baton-agent/baton/internal/mcp"
	"github.com/baton-agent/baton/internal/mcp/mcptest"
	"github.com/baton-agent/baton/internal/store"
	"github.com/baton-agent/baton/internal/store/sqlite"
	"github.com/baton-agent/baton/internal/testutil"
)

// world is an agent whose tools include the demo server's, talking to
// the fake model over one protocol.
type world struct {
	srv    *llmtest.Server
	st     *sqlite.Store
	agent  *agent.Agent
	sid    string
	asked  []agent.ApprovalRequest
	answer agent.Decision // Deny unless a test says otherwise
	mu     sync.Mutex
}

func newWorld(t *testing.T, proto string, server config.MCPServer, allow ...string) *world {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	srv := llmtest.Start(t)
	var p llm.Provider
	if proto == llmtest.ProtocolAnthropic {
		p, err = anthropic.New(anthropic.Config{BaseURL: srv.URL, APIKey: "k", Model: "m"})
	} else {
		p, err = openai.New(openai.Config{BaseURL: srv.URL + "/v1", APIKey: "k", Model: "m"})
	}
	if err != nil {
		t.Fatal(err)
	}
	reg, err := tools.NewRegistry(tools.Config{Dir: t.TempDir(), Files: st})
	if err != nil {
		t.Fatal(err)
	}
	reg.AddSource(open(t, map[string]config.MCPServer{"demo": server}, mcp.Options{Files: st}))
	if err := agent.CheckAllow(allow, reg); err != nil {
		t.Fatal(err)
	}
	w := &world{srv: srv, st: st}
	w.agent = &agent.Agent{Provider: p, Store: st, Tools: reg, Model: "m", Allow: allow,
		Approver: agent.ApproverFunc(func(_ context.Context, req agent.ApprovalRequest) (agent.Decision, error) {
			w.mu.Lock()
			defer w.mu.Unlock()
			w.asked = append(w.asked, req)
			return w.answer, nil
		})}
	s, err := st.CreateSession(ctx, store.Session{OwnerID: "u1", Platform: "cli"})
	if err != nil {
		t.Fatal(err)
	}
	w.sid = s.ID
	return w
}

func (w *world) turn(t *testing.T, text string) (agent.Result, []store.Message) {
	t.Helper()
	ctx := testutil.Context(t, 60*time.Second)
	res, err := w.agent.Run(ctx, w.sid, store.Message{Role: store.RoleUser, Content: text}, func(agent.Event) {})
	if err != nil {
		t.Fatal(err)
	}
	msgs, err := w.st.Transcript(ctx, w.sid)
	if err != nil {
		t.Fatal(err)
	}
	return res, msgs
}

func lastResult(msgs []store.Message) store.Message {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == store.RoleTool {
			return msgs[i]
		}
	}
	return store.Message{}
}

// On both wire protocols: the server's tools are offered under names the
// APIs take, a nested schema whole; the model's call of one runs it; a
// picture it returns is kept with the result, shown to the model in the
// next request, and not sent to the person.
func TestMCPToolsOnBothProtocols(t *testing.T) {
	for _, proto := range []string{llmtest.ProtocolOpenAI, llmtest.ProtocolAnthropic} {
		t.Run(proto, func(t *testing.T) {
			w := newWorld(t, proto, stdio(nil), "mcp:demo.*")
			w.srv.Push(
				llmtest.Reply{ToolCalls: []llmtest.Call{{Name: "demo__add", Args: `{"numbers":{"a":2,"b":3},"options":{"label":"total"}}`}}},
				llmtest.Reply{Text: "It is 5."},
			)
			_, msgs := w.turn(t, "add 2 and 3")
			if r := lastResult(msgs); r.ToolName != "demo.add" || r.Content != "total 5" {
				t.Fatalf("result stored: %+v", r)
			}
			reqs := w.srv.Requests()
			schema := toolSchema(t, reqs[0], "demo__add")
			if !strings.Contains(schema, `"numbers":{`) || !strings.Contains(schema, `"options":{`) || !strings.Contains(schema, `"a":{`) {
				t.Errorf("the nested schema went as %s", schema)
			}
			if body := string(reqs[1].Raw); !strings.Contains(body, "total 5") || !strings.Contains(body, `"demo__add"`) || strings.Contains(body, `"demo.add"`) {
				t.Errorf("the second request: %s", body)
			}

			w.srv.Push(llmtest.Reply{ToolCalls: []llmtest.Call{{Name: "demo__picture"}}}, llmtest.Reply{Text: "A test pattern."})
			res, msgs := w.turn(t, "take a picture")
			r := lastResult(msgs)
			if len(r.Attachments) != 1 || r.Attachments[0].MediaType != "image/png" || !strings.Contains(r.Content, "a picture of the test pattern") || !strings.Contains(r.Content, "attached]") {
				t.Fatalf("picture result stored: %+v", r)
			}
			if len(res.Files) != 0 {
				t.Errorf("the tool's picture was sent to the person: %+v", res.Files)
			}
			reqs = w.srv.Requests()
			imgs := reqs[len(reqs)-1].Images()
			if len(imgs) != 1 || !bytes.Equal(imgs[0].Data, mcptest.Picture()) {
				t.Fatalf("the request after the call carried %d images", len(imgs))
			}
			if proto == llmtest.ProtocolAnthropic && imgs[0].Role != "tool" {
				t.Errorf("anthropic: the picture rode in a %s message, not the tool result", imgs[0].Role)
			}
		})
	}
}

func toolSchema(t *testing.T, r llmtest.Request, name string) string {
	t.Helper()
	list, _ := r.Body["tools"].([]any)
	for _, tl := range list {
		m, _ := tl.(map[string]any)
		if fn, ok := m["function"].(map[string]any); ok {
			m = fn
		}
		if m["name"] == name {
			params := m["parameters"]
			if params == nil {
				params = m["input_schema"]
			}
			raw, _ := json.Marshal(params)
			return string(raw)
		}
	}
	t.Fatalf("no tool %s in the request", name)
	return ""
}

// An MCP tool asks before it runs, as shell commands do; denied, it does
// not run. tools.allow and a server's trusted read-only hint let tools
// run unasked, and nothing else.
func TestMCPToolsAskFirst(t *testing.T) {
	call := func(w *world, tool string) store.Message {
		w.srv.Push(llmtest.Reply{ToolCalls: []llmtest.Call{{Name: llm.WireName(tool), Args: `{"text":"x"}`}}}, llmtest.Reply{Text: "ok"})
		_, msgs := w.turn(t, "use "+tool)
		return lastResult(msgs)
	}
	w := newWorld(t, llmtest.ProtocolOpenAI, stdio(nil))
	if r := call(w, "demo.echo"); r.Content != agent.DeniedResult {
		t.Errorf("denied echo stored %q", r.Content)
	}
	if r := call(w, "demo.look"); r.Content != agent.DeniedResult {
		t.Errorf("an untrusted read-only hint ran unasked: %q", r.Content)
	}
	if len(w.asked) != 2 || w.asked[0].Tool != "demo.echo" || string(w.asked[0].Arguments) != `{"text":"x"}` {
		t.Errorf("asked %+v", w.asked)
	}

	// "Always" covers exactly the same call again in the session.
	w = newWorld(t, llmtest.ProtocolOpenAI, stdio(nil))
	w.answer = agent.AlwaysForSession
	callWith := func(args string) store.Message {
		w.srv.Push(llmtest.Reply{ToolCalls: []llmtest.Call{{Name: "demo__echo", Args: args}}}, llmtest.Reply{Text: "ok"})
		_, msgs := w.turn(t, "echo")
		return lastResult(msgs)
	}
	if r := callWith(`{"text":"same"}`); r.Content != "echo: same" || len(w.asked) != 1 || w.asked[0].Subject != `{"text":"same"}` {
		t.Fatalf("always: %q, asked %+v", r.Content, w.asked)
	}
	if r := callWith(`{ "text": "same" }`); r.Content != "echo: same" || len(w.asked) != 1 {
		t.Errorf("the same call was asked again: %q, asked %d times", r.Content, len(w.asked))
	}
	if callWith(`{"text":"other"}`); len(w.asked) != 2 {
		t.Errorf("always for one call let another run unasked")
	}

	w = newWorld(t, llmtest.ProtocolOpenAI, stdio(nil), "mcp:demo.echo")
	if r := call(w, "demo.echo"); r.Content != "echo: x" {
		t.Errorf("allowed echo stored %q", r.Content)
	}
	if r := call(w, "demo.look"); r.Content != agent.DeniedResult || len(w.asked) != 1 {
		t.Errorf("mcp:demo.echo let demo.look run: %q", r.Content)
	}

	trusted := stdio(nil)
	trusted.TrustReadOnly = true
	w = newWorld(t, llmtest.ProtocolOpenAI, trusted)
	if r := call(w, "demo.look"); r.Content != "looked at X" {
		t.Errorf("trusted read-only look stored %q", r.Content)
	}
	if r := call(w, "demo.echo"); r.Content != agent.DeniedResult || len(w.asked) != 1 {
		t.Errorf("trust_read_only let demo.echo run: %q", r.Content)
	}
}

// Allow rules for MCP tools name a configured server; anything else is
// refused at start, saying what to write.
func TestMCPAllowRulesChecked(t *testing.T) {
	reg, err := tools.NewRegistry(tools.Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	reg.AddSource(mcp.New(config.MCPConfig{Servers: map[string]config.MCPServer{"github": {Command: "x"}, "docs": {URL: "http://127.0.0.1:1/"}}}, mcp.Options{}))
	for _, ok := range []string{"mcp:github.*", "mcp:github.list_issues", "mcp:docs.search"} {
		if err := agent.CheckAllow([]string{ok}, reg); err != nil {
			t.Errorf("%s refused: %v", ok, err)
		}
	}
	for entry, want := range map[string]string{
		"mcp":                `"mcp:server.*"`,
		"mcp:*":              `"mcp:server.*"`,
		"mcp:gitlab.*":       `no MCP server named "gitlab" (mcp.servers has docs, github)`,
		"github.list_issues": `allowed as "mcp:github.list_issues"`,
		"mcp:github.":        `"mcp:server.tool"`,
		"mcp:github.x y":     `"mcp:server.tool"`,
	} {
		err := agent.CheckAllow([]string{entry}, reg)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %s", entry, err, want)
		}
	}
}
