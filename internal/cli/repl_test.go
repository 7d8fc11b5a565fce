package cli

import (
	"bytes"
	"context"
	"io"
	"os"
	"strings"
	"sync"
	"testing"

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
func testApp(t *testing.T, srv *llmtest.Server) *App {
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
	app, err := Open(t.Context(), home)
	if err != nil {
		t.Fatal(err)
	}
	if srv != nil {
		// No retries: a scripted failure must reach the REPL as it is.
		p, err := provider.New(app.Model, provider.Options{NoRetry: true})
		if err != nil {
			t.Fatal(err)
		}
		app.Provider = p
	}
	t.Cleanup(func() { app.Close() })
	return app
}

// runREPL feeds lines to a REPL and returns its output.
func runREPL(t *testing.T, app *App, cfg Config, lines ...string) string {
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

func onlySession(t *testing.T, app *App) store.Session {
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
		`Undone: "hello" and 1 message(s) after it`,
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

var _ = io.EOF
var _ = context.Background
