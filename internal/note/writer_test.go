package note_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/baton-agent/baton/internal/llm/llmtest"
	"github.com/baton-agent/baton/internal/llm/openai"
	"github.com/baton-agent/baton/internal/note"
	"github.com/baton-agent/baton/internal/store"
	"github.com/baton-agent/baton/internal/store/sqlite"
)

type writerEnv struct {
	model *llmtest.Server
	st    *sqlite.Store
	w     *note.Writer
	sid   string
}

func newWriter(t *testing.T) writerEnv {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	model := llmtest.Start(t)
	p, err := openai.New(openai.Config{BaseURL: model.URL + "/v1", APIKey: "test-key", Model: "test-model"})
	if err != nil {
		t.Fatal(err)
	}
	sess, err := st.CreateSession(ctx, store.Session{OwnerID: "u1", Platform: "cli"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.AppendMessages(ctx, sess.ID, transcript(t)...); err != nil {
		t.Fatal(err)
	}
	return writerEnv{model: model, st: st, sid: sess.ID, w: &note.Writer{Provider: p, Model: "test-model", Store: st}}
}

func TestWriterStoresTheModelsNoteOncePerHandoff(t *testing.T) {
	e := newWriter(t)
	ctx := context.Background()
	h, err := e.st.RequestHandoff(ctx, e.sid, "cli", "telegram")
	if err != nil {
		t.Fatal(err)
	}
	e.model.Push(llmtest.Reply{Text: validNote})
	n, err := e.w.ForHandoff(ctx, h)
	if err != nil {
		t.Fatal(err)
	}
	if n.Task != "Book a train from Lisbon to Porto" || n.Fallback != "" || n.HandoffID != h.ID || n.Written.IsZero() {
		t.Fatalf("note %+v", n)
	}
	reqs := e.model.Requests()
	if len(reqs) != 1 || !strings.HasPrefix(reqs[0].LastUserText(), note.Lead) || !strings.Contains(reqs[0].LastUserText(), "book the 9:40 train") {
		t.Fatalf("the model was asked %d times; last: %.200q", len(reqs), reqs[len(reqs)-1].LastUserText())
	}
	// A retried handoff gets the same note without asking again.
	again, err := e.w.ForHandoff(ctx, h)
	if err != nil || again.Task != n.Task || len(e.model.Requests()) != 1 {
		t.Fatalf("retry: %+v, %v, %d model calls", again, err, len(e.model.Requests()))
	}
	stored, err := e.st.SessionNotes(ctx, e.sid)
	if err != nil || len(stored) != 1 || stored[0].HandoffID != h.ID {
		t.Fatalf("stored notes %+v, %v", stored, err)
	}
}

func TestWriterFallsBackOnAnInvalidNote(t *testing.T) {
	e := newWriter(t)
	ctx := context.Background()
	h, err := e.st.RequestHandoff(ctx, e.sid, "cli", "web")
	if err != nil {
		t.Fatal(err)
	}
	e.model.Push(llmtest.Reply{Text: `{"task": "half a note"}`})
	n, err := e.w.ForHandoff(ctx, h)
	if err != nil {
		t.Fatal(err)
	}
	if n.Fallback != note.ReasonInvalid || n.Task != "book the 9:40 train" {
		t.Fatalf("note %+v", n)
	}
	row, err := e.st.HandoffNote(ctx, h.ID)
	if err != nil || row.Fallback != note.ReasonInvalid {
		t.Fatalf("stored %+v, %v", row, err)
	}
	if !strings.Contains(n.Markdown(), "(written by baton from the last turns: the model's note was not valid)") {
		t.Fatalf("markdown:\n%s", n.Markdown())
	}
}

func TestWriterFallsBackWhenTheModelFails(t *testing.T) {
	e := newWriter(t)
	e.model.Push(llmtest.Fail{Status: 500})
	n, err := e.w.Save(context.Background(), e.sid)
	if err != nil {
		t.Fatal(err)
	}
	if n.Fallback != note.ReasonNoModel || n.HandoffID != 0 || !strings.Contains(n.Progress, "The 9:40 train goes to Porto.") {
		t.Fatalf("note %+v", n)
	}
	latest, err := e.st.LatestNote(context.Background(), e.sid)
	if err != nil || latest.Fallback != note.ReasonNoModel {
		t.Fatalf("latest %+v, %v", latest, err)
	}
}

func TestWriterSavesAsOftenAsAsked(t *testing.T) {
	e := newWriter(t)
	e.model.Push(llmtest.Reply{Text: validNote}, llmtest.Reply{Text: "```json\n" + validNote + "\n```"})
	for range 2 {
		if _, err := e.w.Save(context.Background(), e.sid); err != nil {
			t.Fatal(err)
		}
	}
	stored, err := e.st.SessionNotes(context.Background(), e.sid)
	if err != nil || len(stored) != 2 || stored[1].Fallback != "" {
		t.Fatalf("stored %+v, %v", stored, err)
	}
}

func TestWriterOnAnEmptySession(t *testing.T) {
	e := newWriter(t)
	ctx := context.Background()
	empty, err := e.st.CreateSession(ctx, store.Session{OwnerID: "u1", Platform: "cli"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.w.Save(ctx, empty.ID); !errors.Is(err, note.ErrEmpty) {
		t.Fatalf("save of an empty session: %v", err)
	}
	// A handoff of it still gets a note, without asking the model.
	h, err := e.st.RequestHandoff(ctx, empty.ID, "cli", "web")
	if err != nil {
		t.Fatal(err)
	}
	n, err := e.w.ForHandoff(ctx, h)
	if err != nil || n.Fallback != note.ReasonEmpty || len(e.model.Requests()) != 0 {
		t.Fatalf("note %+v, %v, %d model calls", n, err, len(e.model.Requests()))
	}
}

func TestWriterStoresNothingWhenStopped(t *testing.T) {
	e := newWriter(t)
	ctx, cancel := context.WithCancel(context.Background())
	e.model.SetDefault(func(llmtest.Request) llmtest.Step {
		cancel()
		return llmtest.Reply{Text: validNote}
	})
	h, err := e.st.RequestHandoff(context.Background(), e.sid, "cli", "web")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.w.ForHandoff(ctx, h); !errors.Is(err, context.Canceled) {
		t.Fatalf("stopped mid-note: %v", err)
	}
	if _, err := e.st.HandoffNote(context.Background(), h.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a note was stored for a handoff that stopped: %v", err)
	}
}

// The handoff's own turn, which runs while its note is written (or was
// stored by an earlier try), is left out of the note: TurnOf picks where
// the note's transcript ends.
func TestHandoffNoteEndsBeforeTheHandoffsTurn(t *testing.T) {
	e := newWriter(t)
	ctx := context.Background()
	h, err := e.st.RequestHandoff(ctx, e.sid, "cli", "telegram")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.st.AppendMessages(ctx, e.sid,
		store.Message{Role: store.RoleUser, Kind: store.KindHandoff, Content: "[baton handoff] greet them", PlatformMsgID: "turn-of-h"},
		store.Message{Role: store.RoleAssistant, Content: "Hello over here."}); err != nil {
		t.Fatal(err)
	}
	e.w.TurnOf = func(of store.Handoff, m store.Message) bool { return of.ID == h.ID && m.PlatformMsgID == "turn-of-h" }
	e.model.Push(llmtest.Reply{Text: validNote})
	if _, err := e.w.ForHandoff(ctx, h); err != nil {
		t.Fatal(err)
	}
	text := e.model.Requests()[0].LastUserText()
	if !strings.Contains(text, "book the 9:40 train") || strings.Contains(text, "greet them") || strings.Contains(text, "Hello over here") {
		t.Fatalf("the note's transcript:\n%s", text)
	}
}
