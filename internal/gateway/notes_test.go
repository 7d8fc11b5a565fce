package gateway_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/baton-agent/baton/internal/gateway"
	"github.com/baton-agent/baton/internal/gateway/control"
	"github.com/baton-agent/baton/internal/llm/llmtest"
	"github.com/baton-agent/baton/internal/note"
	"github.com/baton-agent/baton/internal/platform/web"
	"github.com/baton-agent/baton/internal/store"
)

// The note is stored with the handoff and is what the first message at
// the destination starts with.
func TestHandoffNoteComesFirst(t *testing.T) {
	r := newRig(t, rigOpts{})
	sess := r.terminalSession(t)
	pg := r.openPage(t)
	ctx := context.Background()

	r.model.Push(llmtest.Reply{Text: "Hello from the web!"})
	h, err := r.client.RequestHandoff(ctx, control.HandoffRequest{SessionID: sess.ID, From: "cli", To: "web"})
	if err != nil {
		t.Fatal(err)
	}
	var steps []string
	final, err := r.client.Watch(ctx, h.ID, func(p control.Progress) { steps = append(steps, p.Step) })
	if err != nil || final.State != "completed" {
		t.Fatalf("handoff %+v, %v", final, err)
	}
	msg := pg.await("the first message", typ("message"))
	text := msg["text"].(string)
	if !strings.HasPrefix(text, "**Handoff note**\n**Task:** Plan the trip\n**Progress:** Train picked.\n") || !strings.HasSuffix(text, "\n\nHello from the web!") {
		t.Fatalf("first message:\n%s", text)
	}
	if strings.Contains(text, "written by baton") {
		t.Errorf("the model's note is called a fallback:\n%s", text)
	}
	if !strings.Contains(strings.Join(steps, "\n"), "note written") {
		t.Errorf("the terminal's progress says nothing of the note: %v", steps)
	}

	stored, err := r.st.HandoffNote(ctx, h.ID)
	if err != nil || stored.SessionID != sess.ID || stored.Fallback != "" || !strings.Contains(stored.Body, "Plan the trip") {
		t.Fatalf("stored note %+v, %v", stored, err)
	}
	// One model call for the note, on the transcript as it was before
	// the handoff (the greeting's turn runs beside it).
	noteAt, turnAt := -1, -1
	for i, req := range r.model.Requests() {
		switch text := req.LastUserText(); {
		case strings.HasPrefix(text, note.Lead):
			if noteAt >= 0 {
				t.Errorf("the note was asked for twice")
			}
			noteAt = i
			if !strings.Contains(text, "book the 9:40 train") {
				t.Errorf("the note request lacks the transcript:\n%.300s", text)
			}
			if strings.Contains(text, "just handed off") {
				t.Errorf("the note covers the handoff's own turn:\n%s", text)
			}
		case strings.HasPrefix(text, gateway.HandoffLead):
			turnAt = i
		}
	}
	if noteAt < 0 || turnAt < 0 {
		t.Errorf("note asked at %d, first message at %d; want both", noteAt, turnAt)
	}
	// Reopened, the conversation shows the note where it was first shown.
	pg.send(map[string]any{"type": "open", "key": final.Destination})
	hist := pg.await("history", typ("history"))
	var greeting string
	for _, l := range hist["lines"].([]any) {
		if line := l.(map[string]any); line["role"] == "assistant" && strings.Contains(line["text"].(string), "Hello from the web!") {
			greeting = line["text"].(string)
		}
	}
	if greeting != text {
		t.Errorf("the history shows the first message as\n%s\nit was shown as\n%s", greeting, text)
	}
	// The note is not a message of the conversation: the model's words
	// about it stay out of the transcript.
	msgs, _ := r.st.Transcript(ctx, sess.ID)
	for _, m := range msgs {
		if strings.Contains(m.Content, note.Lead) || strings.Contains(m.Content, "**Handoff note**") {
			t.Errorf("the note got into the transcript: %+v", m)
		}
	}
}

// The note does not hold up the first word at the destination: it is
// written beside the greeting. The fake model holds the note's answer
// until the greeting's first word is on the page; a gateway that waited
// for the note first would never show it.
func TestHandoffGreetingDoesNotWaitForTheNote(t *testing.T) {
	r := newRig(t, rigOpts{})
	sess := r.terminalSession(t)
	pg := r.openPage(t)
	ctx := context.Background()
	firstWord := make(chan struct{})
	r.model.Aside(isNoteRequest, func(llmtest.Request) llmtest.Step { return llmtest.Reply{Text: rigNote, Wait: firstWord} })
	r.model.Push(llmtest.Reply{Text: "Hello from the web, at once!"})
	h, err := r.client.RequestHandoff(ctx, control.HandoffRequest{SessionID: sess.ID, From: "cli", To: "web"})
	if err != nil {
		t.Fatal(err)
	}
	delta := pg.await("the greeting's first word, with the note's answer held", typ("delta"))
	if text, _ := delta["text"].(string); !strings.HasPrefix("Hello from the web, at once!", text) {
		t.Fatalf("the first word streamed is %q", text)
	}
	close(firstWord)
	final, err := r.client.Watch(ctx, h.ID, nil)
	if err != nil || final.State != "completed" {
		t.Fatalf("handoff %+v, %v", final, err)
	}
	text := pg.await("the first message", typ("message"))["text"].(string)
	if !strings.HasPrefix(text, "**Handoff note**\n**Task:** Plan the trip\n") || !strings.HasSuffix(text, "\n\nHello from the web, at once!") {
		t.Fatalf("first message, the note first:\n%s", text)
	}
}

// When the model cannot write a valid note the handoff still completes,
// with a note built from the last turns that says so.
func TestHandoffNoteFallsBack(t *testing.T) {
	for name, c := range map[string]struct {
		answer llmtest.Step
		reason string
	}{
		"not valid":      {llmtest.Reply{Text: "Sure! The task is a trip to Lisbon."}, note.ReasonInvalid},
		"model went off": {llmtest.Fail{Status: 500}, note.ReasonNoModel},
	} {
		t.Run(name, func(t *testing.T) {
			r := newRig(t, rigOpts{})
			r.model.Aside(isNoteRequest, func(llmtest.Request) llmtest.Step { return c.answer })
			sess := r.terminalSession(t)
			pg := r.openPage(t)
			ctx := context.Background()
			r.model.Push(llmtest.Reply{Text: "Hello anyway."})
			h, err := r.client.RequestHandoff(ctx, control.HandoffRequest{SessionID: sess.ID, From: "cli", To: "web"})
			if err != nil {
				t.Fatal(err)
			}
			var steps []string
			final, err := r.client.Watch(ctx, h.ID, func(p control.Progress) { steps = append(steps, p.Step) })
			if err != nil || final.State != "completed" {
				t.Fatalf("handoff %+v, %v", final, err)
			}
			text := pg.await("the first message", typ("message"))["text"].(string)
			for _, want := range []string{
				"**Handoff note**\n**Task:** book the 9:40 train\n",
				"Last answer: Noted: the 9:40 train.",
				"_(written by baton from the last turns: " + c.reason + ")_\n\nHello anyway.",
			} {
				if !strings.Contains(text, want) {
					t.Errorf("first message lacks %q:\n%s", want, text)
				}
			}
			if !strings.Contains(strings.Join(steps, "\n"), "note written by baton from the last turns ("+c.reason+")") {
				t.Errorf("the terminal is not told the note is baton's: %v", steps)
			}
			stored, err := r.st.HandoffNote(ctx, h.ID)
			if err != nil || stored.Fallback != c.reason {
				t.Fatalf("stored note %+v, %v", stored, err)
			}
		})
	}
}

// /save in a chat writes a note without moving the session, and answers
// with it.
func TestSaveInChat(t *testing.T) {
	r := newRig(t, rigOpts{})
	pg := r.openPage(t)
	key := web.Home.Key()
	ctx := context.Background()

	pg.send(map[string]any{"type": "say", "key": key, "text": "/save", "id": "s0"})
	pg.await("nothing to save", isMsg("no session yet"))

	pg.send(map[string]any{"type": "say", "key": key, "text": "plan a trip to Lisbon", "id": "s1"})
	pg.await("the answer", isMsg("echo: plan a trip to Lisbon"))
	pg.send(map[string]any{"type": "say", "key": key, "text": "/save", "id": "s2"})
	saved := pg.await("the note", isMsg("**Handoff note** (saved "))
	if text := saved["text"].(string); !strings.Contains(text, "**Task:** Plan the trip") {
		t.Fatalf("the answer to /save:\n%s", text)
	}
	b, err := r.st.LookupBinding(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	latest, err := r.st.LatestNote(ctx, b.SessionID)
	if err != nil || latest.HandoffID != 0 || !strings.Contains(latest.Body, "Plan the trip") {
		t.Fatalf("stored note %+v, %v", latest, err)
	}
	if hs, err := r.st.HandoffState(ctx, b.SessionID); err != nil || hs.State != store.HandoffNone {
		t.Fatalf("/save moved the session: %+v, %v", hs, err)
	}
	if after, err := r.st.LookupBinding(ctx, key); err != nil || after.SessionID != b.SessionID {
		t.Fatalf("the chat's session changed: %+v, %v", after, err)
	}
}

// afterHandoffTurn is the store, whose transcript reads wait until the
// handoff's own message is stored: the greeting's turn got ahead of the
// note.
type afterHandoffTurn struct {
	store.Store
	once   sync.Once
	stored chan struct{}
}

func (s *afterHandoffTurn) AppendMessages(ctx context.Context, sessionID string, msgs ...store.Message) ([]store.Message, error) {
	out, err := s.Store.AppendMessages(ctx, sessionID, msgs...)
	for _, m := range msgs {
		if err == nil && m.Kind == store.KindHandoff {
			s.once.Do(func() { close(s.stored) })
		}
	}
	return out, err
}

func (s *afterHandoffTurn) Transcript(ctx context.Context, sessionID string) ([]store.Message, error) {
	select {
	case <-s.stored:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return s.Store.Transcript(ctx, sessionID)
}

// The note covers the conversation up to the handoff, not the handoff's
// own turn, even when that turn is stored before the note reads the
// transcript.
func TestHandoffNoteLeavesOutItsOwnTurn(t *testing.T) {
	wrapped := &afterHandoffTurn{stored: make(chan struct{})}
	r := newRig(t, rigOpts{wrapStore: func(st store.Store) store.Store { wrapped.Store = st; return wrapped }})
	sess := r.terminalSession(t)
	ctx := context.Background()
	r.model.Push(llmtest.Reply{Text: "Hello from the web!"})
	h, err := r.client.RequestHandoff(ctx, control.HandoffRequest{SessionID: sess.ID, From: "cli", To: "web"})
	if err != nil {
		t.Fatal(err)
	}
	if final, err := r.client.Watch(ctx, h.ID, nil); err != nil || final.State != "completed" {
		t.Fatalf("handoff %+v, %v", final, err)
	}
	for _, req := range r.model.Requests() {
		if text := req.LastUserText(); isNoteRequest(req) {
			if !strings.Contains(text, "book the 9:40 train") || strings.Contains(text, "just handed off") {
				t.Errorf("the note's transcript:\n%s", text)
			}
		}
	}
}
