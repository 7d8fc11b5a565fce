package cli

import (
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/app"
	"github.com/baton-agent/baton/internal/config"
	"github.com/baton-agent/baton/internal/llm/llmtest"
	"github.com/baton-agent/baton/internal/store"
	"github.com/baton-agent/baton/internal/testutil"
)

// moveTo completes a handoff of sessionID to key, as the gateway's worker
// does for a /continue typed there.
func moveTo(t *testing.T, st store.Store, sessionID, from, to, key string) {
	t.Helper()
	ctx := t.Context()
	h, err := st.RequestHandoffTo(ctx, sessionID, from, to, key)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, err := st.ClaimHandoff(ctx, h.ID, "gw", time.Minute); err != nil || !ok {
		t.Fatalf("claim: %v %v", ok, err)
	}
	if ok, err := st.CompleteHandoff(ctx, h.ID, "gw"); err != nil || !ok {
		t.Fatalf("complete: %v %v", ok, err)
	}
}

// A terminal idle at its prompt is told at once when its session moves,
// without anything typed: taken by the page, then on its way back
// (/handoff cli there), then taken by a Telegram chat.
func TestIdleTerminalIsToldWhenTheSessionMoves(t *testing.T) {
	srv := llmtest.Start(t)
	app := testApp(t, srv)
	ctx := t.Context()

	typed, keys := io.Pipe()
	out := &syncBuffer{}
	r, err := New(Config{App: app, Out: out, Reader: NewScriptReader(typed, out), Interrupts: make(chan os.Signal), WatchEvery: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	t.Cleanup(func() { keys.Close(); <-done })
	fmt.Fprintln(keys, "hello from the desk")
	testutil.Eventually(t, testutil.Patience, func() bool { return strings.Contains(out.String(), "echo: hello from the desk") }, "the turn")
	s := onlySession(t, app)

	shows := func(what, want string) {
		t.Helper()
		testutil.Eventually(t, testutil.Patience, func() bool { return strings.Contains(out.String(), want) }, what+" in:\n"+out.String())
	}
	const page = "web:dm:main"
	moveTo(t, app.Store, s.ID, "cli", "web", page)
	shows("the terminal told the page took it", "This conversation continues in the web chat now. /continue to bring it back here.")

	if _, err := app.Store.RequestHandoff(ctx, s.ID, "web", TerminalPlatform); err != nil {
		t.Fatal(err)
	}
	shows("the terminal told it is on its way here", "is on its way to the terminal. /continue picks it up here.")
	h, _ := app.Store.HandoffState(ctx, s.ID)
	if _, ok, _ := app.Store.ClaimHandoff(ctx, h.ID, "gw", time.Minute); !ok {
		t.Fatal("claim")
	}
	app.Store.FailHandoff(ctx, h.ID, "gw", "replaced by a handoff to telegram")

	moveTo(t, app.Store, s.ID, "web", "telegram", "telegram:dm:42")
	shows("the terminal told Telegram took it", "This conversation is in Telegram now, since")
	if strings.Count(out.String(), "continues in the web chat now") != 1 {
		t.Errorf("a move was told more than once:\n%s", out.String())
	}
}

// BenchmarkWatchPoll is what an idle terminal spends each WatchEvery to
// learn where its session is: one read of the session, one of its newest
// handoff, on a real SQLite file.
func BenchmarkWatchPoll(b *testing.B) {
	home := b.TempDir()
	b.Setenv(config.HomeEnv, home)
	if err := os.WriteFile(home+"/config.yaml", []byte("model:\n  provider: offline\n"), 0o600); err != nil {
		b.Fatal(err)
	}
	app, err := app.Open(b.Context(), home)
	if err != nil {
		b.Fatal(err)
	}
	defer app.Close()
	ctx := b.Context()
	s, err := app.NewSession(ctx)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := app.Store.RequestHandoff(ctx, s.ID, "cli", "web"); err != nil {
		b.Fatal(err)
	}
	r := &REPL{app: app, session: s}
	b.ResetTimer()
	for b.Loop() {
		got, err := app.Store.GetSession(ctx, s.ID)
		if err != nil {
			b.Fatal(err)
		}
		_ = r.whereaboutsOf(ctx, got)
	}
}
