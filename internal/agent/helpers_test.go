package agent_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/baton-agent/baton/internal/agent"
	"github.com/baton-agent/baton/internal/agent/tools"
	"github.com/baton-agent/baton/internal/llm/llmtest"
	"github.com/baton-agent/baton/internal/llm/openai"
	"github.com/baton-agent/baton/internal/store"
	"github.com/baton-agent/baton/internal/store/sqlite"
)

// env is a real stack: a SQLite file, the fake model server over loopback
// reached through the OpenAI provider, and the built-in tools in a temp dir.
type env struct {
	t     *testing.T
	srv   *llmtest.Server
	st    *sqlite.Store
	dir   string
	agent *agent.Agent
	sid   string
}

func newEnv(t *testing.T) *env {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	srv := llmtest.Start(t)
	p, err := openai.New(openai.Config{BaseURL: srv.URL + "/v1", APIKey: "test-key", Model: "test-model"})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	reg, err := tools.NewRegistry(tools.Config{Dir: dir, Files: st})
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, srv: srv, st: st, dir: dir}
	e.agent = &agent.Agent{Provider: p, Store: st, Tools: reg, Model: "test-model", System: "You are baton."}
	e.sid = e.newSession()
	return e
}

func (e *env) newSession() string {
	e.t.Helper()
	s, err := e.st.CreateSession(context.Background(), store.Session{OwnerID: "u1", Platform: "cli"})
	if err != nil {
		e.t.Fatal(err)
	}
	return s.ID
}

// events records what a turn emitted; Run emits from its own goroutine,
// but cancel tests read while it runs, hence the lock.
type events struct {
	mu  sync.Mutex
	all []agent.Event
	on  func(agent.Event)
}

func (r *events) emit(ev agent.Event) {
	r.mu.Lock()
	r.all = append(r.all, ev)
	on := r.on
	r.mu.Unlock()
	if on != nil {
		on(ev)
	}
}

func (r *events) kinds() []agent.EventKind {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []agent.EventKind
	for _, ev := range r.all {
		out = append(out, ev.Kind)
	}
	return out
}

func (r *events) of(k agent.EventKind) []agent.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []agent.Event
	for _, ev := range r.all {
		if ev.Kind == k {
			out = append(out, ev)
		}
	}
	return out
}

func (r *events) text() string {
	var b strings.Builder
	for _, ev := range r.of(agent.EventTextDelta) {
		b.WriteString(ev.Text)
	}
	return b.String()
}

func (e *env) run(ctx context.Context, sid, text string) (agent.Result, *events, error) {
	e.t.Helper()
	evs := &events{}
	res, err := e.agent.Run(ctx, sid, store.Message{Role: store.RoleUser, Content: text, Platform: "cli"}, evs.emit)
	return res, evs, err
}

func (e *env) mustRun(sid, text string) (agent.Result, *events) {
	e.t.Helper()
	res, evs, err := e.run(context.Background(), sid, text)
	if err != nil {
		e.t.Fatalf("run %q: %v", text, err)
	}
	return res, evs
}

func (e *env) transcript(sid string) []store.Message {
	e.t.Helper()
	msgs, err := e.st.Transcript(context.Background(), sid)
	if err != nil {
		e.t.Fatal(err)
	}
	return msgs
}

// row is the part of a stored message the tests compare.
type row struct {
	Role    store.Role
	Kind    store.MessageKind
	Content string
	Calls   string // tool names, comma separated
	CallID  string
}

func rows(t *testing.T, msgs []store.Message) []row {
	t.Helper()
	out := make([]row, len(msgs))
	for i, m := range msgs {
		calls, err := agent.DecodeToolCalls(m.ToolCalls)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, c := range calls {
			names = append(names, c.Name)
		}
		out[i] = row{Role: m.Role, Kind: m.Kind, Content: m.Content, Calls: strings.Join(names, ","), CallID: m.ToolCallID}
	}
	return out
}

func sameRows(t *testing.T, got []store.Message, want []row) {
	t.Helper()
	if g := rows(t, got); !reflect.DeepEqual(g, want) {
		t.Errorf("transcript:\n got %+v\nwant %+v", g, want)
	}
}

// validTranscript checks every assistant tool call is answered right after
// it, as providers require.
func validTranscript(t *testing.T, msgs []store.Message) {
	t.Helper()
	for i, m := range msgs {
		calls, _ := agent.DecodeToolCalls(m.ToolCalls)
		for j, c := range calls {
			k := i + 1 + j
			if k >= len(msgs) || msgs[k].Role != store.RoleTool || msgs[k].ToolCallID != c.ID {
				t.Errorf("call %s (%s) at %d is not answered in place", c.ID, c.Name, i)
			}
		}
	}
}

// sameJSON compares a decoded request value with expected JSON.
func sameJSON(t *testing.T, what string, got any, want string) {
	t.Helper()
	var w any
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("bad expectation for %s: %v", what, err)
	}
	if !reflect.DeepEqual(got, w) {
		g, _ := json.MarshalIndent(got, "", "  ")
		e, _ := json.MarshalIndent(w, "", "  ")
		t.Errorf("%s:\n%s\nwant:\n%s", what, g, e)
	}
}

// scripted answers approval requests from a list and records them.
type scripted struct {
	mu      sync.Mutex
	answers []agent.Decision
	asked   []agent.ApprovalRequest
}

func (s *scripted) Approve(ctx context.Context, req agent.ApprovalRequest) (agent.Decision, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.asked = append(s.asked, req)
	if len(s.answers) == 0 {
		return agent.Deny, nil
	}
	d := s.answers[0]
	s.answers = s.answers[1:]
	return d, nil
}

func (s *scripted) subjects() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, r := range s.asked {
		out = append(out, r.Tool+" "+r.Subject)
	}
	return out
}

func call(name, args string) llmtest.Call { return llmtest.Call{Name: name, Args: args} }
