package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/baton-agent/baton/internal/agent"
	"github.com/baton-agent/baton/internal/app"
	"github.com/baton-agent/baton/internal/llm"
	"github.com/baton-agent/baton/internal/llm/offline"

	"github.com/baton-agent/baton/internal/config"
	"github.com/baton-agent/baton/internal/llm/llmtest"
	"github.com/baton-agent/baton/internal/llm/provider"
	"github.com/baton-agent/baton/internal/store"
)

// syncBuffer is a bytes.Buffer safe for the spinner goroutine and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// testApp opens an App in a fresh BATON_HOME talking to llmtest (or the
// offline responder when srv is nil).
func testApp(t *testing.T, srv *llmtest.Server) *app.App {
	t.Helper()
	home := t.TempDir()
	t.Setenv(config.HomeEnv, home)
	for _, k := range []string{"OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "OPENROUTER_API_KEY", "BATON_MODEL"} {
		t.Setenv(k, "")
	}
	if srv != nil {
		os.WriteFile(home+"/config.yaml", []byte("model:\n  provider: openai\n  name: fake-model\n  base_url: "+srv.URL+"/v1\n  api_key: k\n"), 0o600)
	} else {
		os.WriteFile(home+"/config.yaml", []byte("model:\n  provider: offline\n"), 0o600)
	}
	a, err := app.Open(t.Context(), home)
	if err != nil {
		t.Fatal(err)
	}
	if srv != nil {
		// No retries: a scripted failure must reach the REPL as it is.
		p, err := provider.New(a.Model, provider.Options{NoRetry: true})
		if err != nil {
			t.Fatal(err)
		}
		a.Provider = p
	}
	t.Cleanup(func() { a.Close() })
	return a
}

// runREPL feeds lines to a REPL and returns its output.
func runREPL(t *testing.T, app *app.App, cfg Config, lines ...string) string {
	t.Helper()
	out := &syncBuffer{}
	cfg.App = app
	cfg.Out = out
	if cfg.Reader == nil {
		cfg.Reader = NewScriptReader(strings.NewReader(strings.Join(lines, "\n")+"\n"), out)
	}
	if cfg.Interrupts == nil {
		cfg.Interrupts = make(chan os.Signal)
	}
	r, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Run(t.Context()); err != nil {
		t.Fatalf("Run: %v\noutput:\n%s", err, out.String())
	}
	return out.String()
}

func onlySession(t *testing.T, app *app.App) store.Session {
	t.Helper()
	ss, err := app.Store.ListSessions(t.Context(), store.SessionFilter{OwnerID: app.Owner.ID})
	if err != nil || len(ss) != 1 {
		t.Fatalf("sessions: %d, %v", len(ss), err)
	}
	return ss[0]
}

func TestREPLCommandsNeverCrash(t *testing.T) {
	srv := llmtest.Start(t)
	app := testApp(t, srv)
	out := runREPL(t, app, Config{},
		"hello",
		"/title First chat",
		"/tilte x",
		"/resume",
		"/resume nothing-like-this",
		"/quit now",
		"/sethome",
		"/handoff telegram",
		"/model",
		"/undo",
		"/undo",
		"/search hello",
		"/sessions",
		"/compress",
		"/help undo",
		"/x",
	)
	for _, want := range []string{
		"echo: hello",
		"Title set: First chat",
		"unknown command /tilte — did you mean /title?",
		"usage: /resume <id prefix or title>",
		`no session matches "nothing-like-this"`,
		"/quit takes no arguments",
		"/sethome works only in chat",
		"handoff needs the gateway: run `baton gateway`",
		"Model: fake-model (provider openai)",
		`Undone: "hello" and 1 message after it`,
		"nothing to undo",
		"No matches.",
		"First chat",
		"nothing to compress yet",
		"/undo — remove your last message",
		"unknown command /x — try /help",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if t.Failed() {
		t.Logf("output:\n%s", out)
	}
	// Ctrl-D (end of input) ends the session but keeps it.
	s := onlySession(t, app)
	if s.Open() || s.Title != "First chat" {
		t.Errorf("session after leaving: %+v", s)
	}
	msgs, _ := app.Store.Transcript(t.Context(), s.ID)
	if len(msgs) != 0 {
		t.Errorf("transcript after /undo: %+v", msgs)
	}
}

// blockingProvider streams one piece of an answer, then waits for the
// turn to be cancelled.
type blockingProvider struct{ streamed chan struct{} }

func (blockingProvider) Name() string { return "blocking" }

func (p blockingProvider) Chat(ctx context.Context, req llm.Request, onDelta func(llm.Delta)) (llm.Response, error) {
	onDelta(llm.Delta{Text: "Once upon a time"})
	close(p.streamed)
	<-ctx.Done()
	return llm.Response{}, ctx.Err()
}

func TestREPLInterruptKeepsWhatWasSaid(t *testing.T) {
	app := testApp(t, nil)
	p := blockingProvider{streamed: make(chan struct{})}
	app.Provider = p
	interrupts := make(chan os.Signal)
	go func() {
		<-p.streamed
		interrupts <- os.Interrupt // received by the running turn only
	}()
	out := runREPL(t, app, Config{Interrupts: interrupts}, "tell me a story", "/title still alive")
	if !strings.Contains(out, "⏹ interrupted — everything said so far is kept") || !strings.Contains(out, "Title set: still alive") {
		t.Fatalf("output:\n%s", out)
	}
	s := onlySession(t, app)
	msgs, err := app.Store.Transcript(t.Context(), s.ID)
	if err != nil || len(msgs) != 2 {
		t.Fatalf("transcript %+v, %v", msgs, err)
	}
	if msgs[0].Content != "tell me a story" || msgs[1].Content != "Once upon a time "+agent.InterruptedMarker {
		t.Fatalf("transcript %q / %q", msgs[0].Content, msgs[1].Content)
	}
}

func TestREPLApprovals(t *testing.T) {
	srv := llmtest.Start(t)
	app := testApp(t, srv)
	shell := func(cmd string) llmtest.Reply {
		return llmtest.Reply{ToolCalls: []llmtest.Call{{Name: "shell", Args: `{"command":"` + cmd + `"}`}}}
	}
	srv.Push(
		shell("echo one"), llmtest.Reply{Text: "done one"},
		shell("echo one"), llmtest.Reply{Text: "done two"},
		shell("echo two"), llmtest.Reply{Text: "done other"},
		shell("echo one"), llmtest.Reply{Text: "done three"},
	)
	out := runREPL(t, app, Config{},
		"first", "maybe", "a", // garbage is asked again; "always" covers exactly that command
		"second",     // the same command: not asked
		"other", "d", // another command asks
		"/new", // a new session forgets "always"
		"third", "d",
	)
	if n := strings.Count(out, "allow? [o]nce"); n != 4 {
		t.Errorf("asked %d times, want 4", n)
	}
	for _, want := range []string{
		"baton wants to run shell: echo one",
		"answer o (once), a (always: this exact call, for this session) or d (deny)",
		"✓ shell: echo one", "done one", "done two",
		"baton wants to run shell: echo two", "✗ shell: echo two — denied", "done other",
		"✗ shell: echo one — denied", "done three",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if n := strings.Count(out, "baton wants to run shell: echo one"); n != 2 {
		t.Errorf("asked about echo one %d times; want once per session", n)
	}
	if t.Failed() {
		t.Logf("output:\n%s", out)
	}
}

func TestREPLHandoffHook(t *testing.T) {
	srv := llmtest.Start(t)
	app := testApp(t, srv)
	var gotSession, gotPlatform string
	startupSaw := "unset"
	cfg := Config{
		Startup: func(ctx context.Context, out io.Writer, sessionID string, _ Ask) (string, error) {
			startupSaw = sessionID
			_, err := io.WriteString(out, "1 handoff waiting for the terminal\n")
			return "", err
		},
		Handoff: func(ctx context.Context, sessionID, platform string, out io.Writer, _ Ask) (bool, error) {
			if platform == "nowhere" {
				return false, errors.New("no adapter for nowhere")
			}
			if platform == "slack" {
				return false, fmt.Errorf("%w: Slack refused — you are still here", ErrHandoffFailed)
			}
			gotSession, gotPlatform = sessionID, platform
			io.WriteString(out, "handed to telegram\n")
			return true, nil
		},
	}
	out := runREPL(t, app, cfg, "hello", "/handoff nowhere", "/handoff slack", "/handoff Telegram", "never read")
	if startupSaw != "" || !strings.HasPrefix(out[strings.Index(out, "1 handoff waiting"):], "1 handoff waiting for the terminal\n› hello") {
		t.Errorf("startup hook: saw session %q; output:\n%s", startupSaw, out)
	}
	if !strings.Contains(out, "handoff failed: no adapter for nowhere") {
		t.Errorf("failed handoff not reported:\n%s", out)
	}
	// A handoff the gateway gave up is said once, not "handoff failed: the handoff failed".
	if !strings.Contains(out, "\nthe handoff failed: Slack refused — you are still here\n") {
		t.Errorf("a failed handoff is reported twice over:\n%s", out)
	}
	s := onlySession(t, app)
	if gotSession != s.ID || gotPlatform != "telegram" {
		t.Errorf("hook got %q %q, want %q telegram", gotSession, gotPlatform, s.ID)
	}
	if !s.Open() {
		t.Error("a detaching handoff ended the session")
	}
	if strings.Contains(out, "never read") || len(srv.Requests()) != 1 {
		t.Errorf("the REPL went on after detaching:\n%s", out)
	}
}

func TestREPLResumeShowsTranscript(t *testing.T) {
	srv := llmtest.Start(t)
	app := testApp(t, srv)
	ctx := t.Context()
	old, err := app.NewSession(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := app.Store.SetTitle(ctx, old.ID, "old plans"); err != nil {
		t.Fatal(err)
	}
	calls, _ := agent.EncodeToolCalls([]llm.ToolCall{{ID: "c1", Name: "read_file", Arguments: []byte(`{"path":"notes.md"}`)}})
	if _, err := app.Store.AppendMessages(ctx, old.ID,
		store.Message{Role: store.RoleUser, Content: "what was the plan?"},
		store.Message{Role: store.RoleAssistant, ToolCalls: calls},
		store.Message{Role: store.RoleTool, ToolCallID: "c1", ToolName: "read_file", Content: "ship friday"},
		store.Message{Role: store.RoleAssistant, Content: "The plan was to ship on Friday."},
	); err != nil {
		t.Fatal(err)
	}
	if err := app.Store.EndSession(ctx, old.ID, "quit"); err != nil {
		t.Fatal(err)
	}
	out := runREPL(t, app, Config{}, "hi", "/resume old plans", "and now?")
	for _, want := range []string{
		`Continuing "old plans"`, "› what was the plan?", "✓ read_file: notes.md", "The plan was to ship on Friday.", "echo: and now?",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	msgs, _ := app.Store.Transcript(ctx, old.ID)
	if last := msgs[len(msgs)-1]; last.Content != "echo: and now?" {
		t.Errorf("the resumed session did not get the turn: %+v", last)
	}
	// The model got the resumed transcript, tool call and all.
	reqs := srv.Requests()
	if n := len(reqs[len(reqs)-1].Messages()); n != 6 {
		t.Errorf("sent %d messages, want 6 (system, the four resumed, the new one)", n)
	}
	if t.Failed() {
		t.Logf("output:\n%s", out)
	}
}

func TestREPLOfflineNotice(t *testing.T) {
	app := testApp(t, nil)
	out := runREPL(t, app, Config{}, "/model")
	// The notice names config.yaml by its real path, at start and in
	// the first reply.
	setup := offline.SetupFor(filepath.Join(app.Home, config.FileName))
	if !strings.Contains(out, setup) || !strings.Contains(out, "No model is configured (offline responder)") || strings.Contains(out, "$BATON_HOME") {
		t.Fatalf("output:\n%s", out)
	}
	if ss, _ := app.Store.ListSessions(t.Context(), store.SessionFilter{}); len(ss) != 0 {
		t.Fatalf("leaving at once left %d sessions behind", len(ss))
	}
	out = runREPL(t, app, Config{}, "hello")
	if !strings.Contains(out, "key to "+filepath.Join(app.Home, config.FileName)+".") || strings.Contains(out, "$BATON_HOME") {
		t.Fatalf("output:\n%s", out)
	}
}

func TestParseDecision(t *testing.T) {
	for in, want := range map[string]agent.Decision{"o": agent.Once, " Yes ": agent.Once, "A": agent.AlwaysForSession, "deny": agent.Deny, "n": agent.Deny} {
		if d, ok := parseDecision(in); !ok || d != want {
			t.Errorf("parseDecision(%q) = %v, %v", in, d, ok)
		}
	}
	if _, ok := parseDecision("maybe"); ok {
		t.Error("maybe accepted")
	}
}

func TestREPLRetryCompressSearch(t *testing.T) {
	srv := llmtest.Start(t)
	app := testApp(t, srv)
	srv.Push(llmtest.Reply{Text: "first try"}, llmtest.Reply{Text: "second try"})
	out := runREPL(t, app, Config{}, "pineapple question", "/retry", "two", "three", "/compress", "/search pineapple")
	for _, want := range []string{"first try", "second try", "Compressed: ~", "pineapple"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	s := onlySession(t, app)
	hist, _ := app.Store.History(t.Context(), s.ID)
	var retried bool
	for _, m := range hist {
		retried = retried || (m.Content == "first try" && m.Superseded)
	}
	if !retried {
		t.Error("/retry did not supersede the first answer")
	}
	msgs, _ := app.Store.Transcript(t.Context(), s.ID)
	if len(msgs) == 0 || !agent.IsSummary(msgs[0]) {
		t.Errorf("/compress left no summary first: %+v", msgs)
	}
	if !strings.Contains(out[strings.LastIndex(out, "/search pineapple"):], "[pineapple]") {
		t.Errorf("search hit not shown:\n%s", out)
	}
	if t.Failed() {
		t.Logf("output:\n%s", out)
	}
}
