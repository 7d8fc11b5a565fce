package cli

import (
	"strings"
	"testing"

	"github.com/baton-agent/baton/internal/llm/llmtest"
	"github.com/baton-agent/baton/internal/store"
)

// Entering a session another place holds asks first; yes moves it here
// (the old place is told), and the turn runs here.
func TestContinueHeldElsewhereAsksAndMoves(t *testing.T) {
	srv := llmtest.Start(t)
	app := testApp(t, srv)
	ctx := t.Context()
	const page = "web:thread:main:c1"
	s, err := app.Store.CreateSession(ctx, store.Session{OwnerID: app.Owner.ID, Platform: "web", Holder: page})
	if err != nil {
		t.Fatal(err)
	}
	out := runREPL(t, app, Config{SessionID: s.ID}, "", "hello from the desk")
	for _, want := range []string{"It is in the web chat — move it here? [Y/n]", "Brought session", "here from the web chat", "echo: hello from the desk"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	got, _ := app.Store.GetSession(ctx, s.ID)
	if got.Holder != app.TerminalKey() {
		t.Errorf("holder after yes: %q", got.Holder)
	}
	h, _ := app.Store.HandoffState(ctx, s.ID)
	if h.State != store.HandoffCompleted || h.Destination != app.TerminalKey() {
		t.Errorf("the move is not a completed handoff to the terminal: %+v", h)
	}
	if h.FromPlatform != "web" {
		t.Errorf("the move is recorded as from %q, want from the web chat that held it", h.FromPlatform)
	}
	// The page is told, through the outbox.
	pending, _ := app.Store.PendingDeliveries(ctx, page, 0)
	if len(pending) != 1 || !strings.Contains(pending[0].Text, "continues in the terminal now") {
		t.Errorf("deliveries for the page: %+v", pending)
	}
}

// No leaves it read-only here: what is typed runs no turn and is kept;
// /continue brings the session and answers it.
func TestHeldElsewhereIsReadOnlyUntilContinue(t *testing.T) {
	srv := llmtest.Start(t)
	app := testApp(t, srv)
	ctx := t.Context()
	s, err := app.Store.CreateSession(ctx, store.Session{OwnerID: app.Owner.ID, Platform: "telegram", Holder: "telegram:thread:-100:7"})
	if err != nil {
		t.Fatal(err)
	}
	out := runREPL(t, app, Config{SessionID: s.ID}, "n", "are you there?", "/retry", "/where", "/continue")
	for _, want := range []string{
		"It is in Telegram — move it here? [Y/n]",
		"It stays in Telegram; here it is read-only",
		"This conversation is in Telegram now, since",
		"Brought session",
		"echo: are you there?",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Index(out, "echo: are you there?") < strings.Index(out, "Brought session") {
		t.Errorf("the kept message was answered before /continue:\n%s", out)
	}
	if n := len(srv.Requests()); n != 1 {
		t.Errorf("%d model calls, want 1 (the kept message, after /continue)", n)
	}
}

// A one-shot (-p) refuses a session held elsewhere, saying where.
func TestOnceRefusesHeldElsewhere(t *testing.T) {
	app := testApp(t, llmtest.Start(t))
	s, err := app.Store.CreateSession(t.Context(), store.Session{OwnerID: app.Owner.ID, Platform: "web", Holder: "web:thread:main:c1"})
	if err != nil {
		t.Fatal(err)
	}
	var out, errOut strings.Builder
	err = Once(t.Context(), app, s.ID, "hi", nil, &out, &errOut)
	if err == nil || !strings.Contains(err.Error(), "the web chat") {
		t.Fatalf("once on a session held elsewhere: %v", err)
	}
	if out.Len() != 0 {
		t.Errorf("answered anyway: %q", out.String())
	}
}

// A handoff to the terminal picked up at start (`baton resume`) tells
// the place that held the session that it left, as /continue does.
func TestPickedUpHandoffTellsThePlaceItLeft(t *testing.T) {
	app := testApp(t, nil)
	ctx := t.Context()
	const page = "web:thread:main:c1"
	s, err := app.Store.CreateSession(ctx, store.Session{OwnerID: app.Owner.ID, Platform: "web", Holder: page})
	if err != nil {
		t.Fatal(err)
	}
	hf, err := app.Store.RequestHandoff(ctx, s.ID, "web", TerminalPlatform)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := (&Handoffs{App: app}).PickUp(ctx, hf); err != nil {
		t.Fatal(err)
	}
	pending, _ := app.Store.PendingDeliveries(ctx, page, 0)
	if len(pending) != 1 || !strings.Contains(pending[0].Text, "continues in the terminal now") {
		t.Errorf("deliveries for the page: %+v", pending)
	}
}

// `baton -c` on a session handed off to the terminal (/handoff cli in a
// chat) picks that handoff up, as `baton resume` does: no question, no
// "under way" refusal, and its note is shown.
func TestContinueLatestPicksUpTheHandoffToTheTerminal(t *testing.T) {
	srv := llmtest.Start(t)
	app := testApp(t, srv)
	ctx := t.Context()
	s, err := app.Store.CreateSession(ctx, store.Session{OwnerID: app.Owner.ID, Platform: "telegram", Holder: "telegram:dm:42"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := app.Store.AppendMessages(ctx, s.ID,
		store.Message{Role: store.RoleUser, Content: "tidy my notes", Platform: "telegram"},
		store.Message{Role: store.RoleAssistant, Content: "Three files are empty.", Platform: "telegram"}); err != nil {
		t.Fatal(err)
	}
	hf, err := app.Store.RequestHandoff(ctx, s.ID, "telegram", TerminalPlatform)
	if err != nil {
		t.Fatal(err)
	}
	h := &Handoffs{App: app}
	out := runREPL(t, app, Config{SessionID: s.ID, Startup: h.Startup}, "hello from the desk")
	for _, bad := range []string{"move it here?", "under way", "Press Enter"} {
		if strings.Contains(out, bad) {
			t.Errorf("output has %q:\n%s", bad, out)
		}
	}
	for _, want := range []string{"Brought session", "here from Telegram", "**Handoff note**", "echo: hello from the desk"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if got, _ := app.Store.GetHandoff(ctx, hf.ID); got.State != store.HandoffCompleted || got.Destination != app.TerminalKey() {
		t.Errorf("the handoff to the terminal: %+v", got)
	}
}

// What is typed in a terminal where the session is read-only (held in a
// chat) is kept in the store, not in the terminal's memory: a terminal
// that quits leaves it kept, and /continue in the next one answers it.
func TestKeptInTheTerminalSurvivesItAndIsCarried(t *testing.T) {
	srv := llmtest.Start(t)
	app := testApp(t, srv)
	ctx := t.Context()
	s, err := app.Store.CreateSession(ctx, store.Session{OwnerID: app.Owner.ID, Platform: "telegram", Holder: "telegram:thread:-100:7"})
	if err != nil {
		t.Fatal(err)
	}
	out := runREPL(t, app, Config{SessionID: s.ID}, "n", "first kept", "second kept", "/quit")
	if !strings.Contains(out, "kept") || strings.Contains(out, "were not sent") {
		t.Errorf("the terminal does not say the messages are kept:\n%s", out)
	}
	if n := len(srv.Requests()); n != 0 {
		t.Fatalf("%d model calls from a read-only terminal", n)
	}
	out = runREPL(t, app, Config{SessionID: s.ID}, "n", "/continue")
	first, second := strings.Index(out, "echo: first kept"), strings.Index(out, "echo: second kept")
	if first < 0 || second < first {
		t.Errorf("the kept messages are not answered in order after /continue:\n%s", out)
	}
	var said []string
	msgs, _ := app.Store.Transcript(ctx, s.ID)
	for _, m := range msgs {
		if m.Role == store.RoleUser && m.Kind == "" {
			said = append(said, m.Content)
		}
	}
	if got := strings.Join(said, "|"); got != "first kept|second kept" {
		t.Errorf("user messages %q", got)
	}
}

// While a move out of the terminal is under way (/continue in a chat, not
// yet completed), the terminal runs no turn: what is typed is kept, as
// the chat keeps it, and the terminal says where the session is going.
func TestLeavingTerminalRunsNoTurn(t *testing.T) {
	srv := llmtest.Start(t)
	app := testApp(t, srv)
	ctx := t.Context()
	s, err := app.NewSession(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := app.Store.RequestHandoffTo(ctx, s.ID, Platform, "telegram", "telegram:dm:42"); err != nil {
		t.Fatal(err)
	}
	out := runREPL(t, app, Config{SessionID: s.ID}, "still at the desk", "/retry")
	for _, want := range []string{"is on its way to Telegram.", "(kept: answered once /continue brings the conversation here)"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if n := len(srv.Requests()); n != 0 {
		t.Errorf("%d model calls while the session was leaving the terminal", n)
	}
}
