package cli

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/baton-agent/baton/internal/llm/llmtest"
	"github.com/baton-agent/baton/internal/note"
	"github.com/baton-agent/baton/internal/store"
)

const modelNote = `{"task": "Tidy the notes folder", "progress": "Listed the files.", "context": {"files": ["notes/"], "commands": [], "values": []}, "next_steps": ["Delete the empty ones"], "open_questions": []}`

func noteModel(t *testing.T) *llmtest.Server {
	srv := llmtest.Start(t)
	srv.Aside(func(r llmtest.Request) bool { return strings.HasPrefix(r.LastUserText(), note.Lead) },
		func(llmtest.Request) llmtest.Step { return llmtest.Reply{Text: modelNote} })
	return srv
}

// /save writes a note without moving the session and shows it.
func TestSaveInTheTerminal(t *testing.T) {
	app := testApp(t, noteModel(t))
	out := runREPL(t, app, Config{}, "/save", "tidy my notes", "/save")
	if !strings.Contains(out, "nothing to save yet") {
		t.Errorf("/save before any message:\n%s", out)
	}
	for _, want := range []string{"**Handoff note** (saved ", "**Task:** Tidy the notes folder", "**Next:** Delete the empty ones", "Saved with the session"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	s := onlySession(t, app)
	n, err := app.Store.LatestNote(t.Context(), s.ID)
	if err != nil || n.HandoffID != 0 || !strings.Contains(n.Body, "Tidy the notes folder") {
		t.Fatalf("stored %+v, %v", n, err)
	}
	if h, _ := app.Store.HandoffState(t.Context(), s.ID); h.State != store.HandoffNone {
		t.Fatalf("/save moved the session: %+v", h)
	}
}

// With no model configured the note is baton's, and says so.
func TestSaveOffline(t *testing.T) {
	app := testApp(t, nil)
	out := runREPL(t, app, Config{}, "tidy my notes", "/save")
	if !strings.Contains(out, "**Task:** tidy my notes") || !strings.Contains(out, "(written by baton from the last turns: no model is configured)") {
		t.Fatalf("output:\n%s", out)
	}
}

// A handoff picked up by the terminal gets its note, stored before it
// completes and shown once the session is entered, after its transcript.
func TestPickedUpHandoffShowsItsNote(t *testing.T) {
	app := testApp(t, noteModel(t))
	ctx := t.Context()
	s, err := app.NewSession(ctx)
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
	out := runREPL(t, app, Config{Startup: h.Startup, Reader: NewScriptReader(strings.NewReader("\n"), io.Discard)})
	stored, err := app.Store.HandoffNote(ctx, hf.ID)
	if err != nil || !strings.Contains(stored.Body, "Tidy the notes folder") {
		t.Fatalf("stored %+v, %v", stored, err)
	}
	transcriptAt, noteAt := strings.Index(out, "Three files are empty."), strings.Index(out, "**Task:** Tidy the notes folder")
	if transcriptAt < 0 || noteAt < transcriptAt {
		t.Fatalf("the note is not shown after the transcript:\n%s", out)
	}
}

// `baton sessions show` puts the latest note on top.
func TestShowSessionPutsTheNoteOnTop(t *testing.T) {
	app := testApp(t, nil)
	ctx := t.Context()
	s, err := app.NewSession(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := app.Store.AppendMessages(ctx, s.ID, store.Message{Role: store.RoleUser, Content: "tidy my notes"}); err != nil {
		t.Fatal(err)
	}
	hf, err := app.Store.RequestHandoff(ctx, s.ID, TerminalPlatform, "telegram")
	if err != nil {
		t.Fatal(err)
	}
	older := note.Note{Task: "An older note", Progress: "p"}
	newer, err := note.Parse(modelNote)
	if err != nil {
		t.Fatal(err)
	}
	newer.HandoffID = hf.ID
	for _, n := range []note.Note{older, newer} {
		row, err := n.Stored(s.ID)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := app.Store.AddNote(ctx, row); err != nil {
			t.Fatal(err)
		}
	}
	var b bytes.Buffer
	if err := ShowSession(ctx, app, &b, s.ID); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	at := strings.Index(out, "Written at the handoff from the terminal to Telegram, ")
	taskAt, transcriptAt := strings.Index(out, "**Task:** Tidy the notes folder"), strings.Index(out, prompt+"tidy my notes")
	if at < 0 || taskAt < at || transcriptAt < taskAt {
		t.Fatalf("the latest note is not on top:\n%s", out)
	}
	if strings.Contains(out, "An older note") {
		t.Errorf("an older note is shown:\n%s", out)
	}
}
