package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/baton-agent/baton/internal/agent"
	"github.com/baton-agent/baton/internal/app"
	"github.com/baton-agent/baton/internal/note"
	"github.com/baton-agent/baton/internal/store"
)

// noteTimeout bounds the model's note in the terminal, well within the
// lease a handoff to the terminal is claimed with.
const noteTimeout = 30 * time.Second

// notes writes handoff notes with the terminal's model. Its warnings are
// not logged: the note itself says when baton wrote it.
func notes(a *app.App, tools *agent.Registry) *note.Writer {
	w := &note.Writer{
		Provider:      a.Provider,
		Model:         a.Model.Name,
		Store:         a.Store,
		Tools:         tools,
		MaxTokens:     a.Model.MaxOutputTokens,
		ContextWindow: a.Model.ContextWindow,
		Timeout:       noteTimeout,
		Log:           slog.New(slog.DiscardHandler),
	}
	if a.Offline() {
		w.Provider = nil
	}
	return w
}

// save is /save: a note of where the session stands, stored without
// moving it, and shown.
func (r *REPL) save(ctx context.Context, interrupts <-chan os.Signal) {
	if r.session.ID == "" {
		r.out.Printf("nothing to save yet: say something first\n")
		return
	}
	var n note.Note
	var err error
	r.withInterrupt(ctx, interrupts, func(ctx context.Context) {
		r.out.Status("writing a note…")
		n, err = notes(r.app, r.agent.Tools).Save(ctx, r.session.ID)
		r.out.ClearStatus()
	})
	switch {
	case errors.Is(err, note.ErrEmpty):
		r.out.Printf("nothing to save yet: say something first\n")
	case err != nil:
		r.out.Printf("error: %s\n", explain(err, "/save to try again"))
	default:
		r.out.Note(n.Markdown())
		r.out.Printf("Saved with the session; `baton sessions show %s` shows it.\n", short(r.session.ID))
	}
}

// showNote shows the session's newest note, once it was handed here.
func (r *REPL) showNote(ctx context.Context) {
	s, err := r.app.Store.LatestNote(ctx, r.session.ID)
	if err != nil {
		if !errors.Is(err, store.ErrNotFound) {
			r.out.Printf("warning: %v\n", err)
		}
		return
	}
	n, err := note.FromStored(s)
	if err != nil {
		r.out.Printf("warning: %v\n", err)
		return
	}
	r.out.Note(n.Markdown())
}

// Note shows a note (markdown) as baton's own output.
func (r *renderer) Note(md string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.clearStatusLocked()
	if !r.lastNL {
		r.writeLocked("\n")
	}
	if !r.tty {
		r.writeLocked(md + "\n")
		return
	}
	r.wrote = false
	r.printMarkdownLocked(md)
	r.wrote = false
}

// writeLatestNote writes the session's newest note and where it comes
// from, for `baton sessions show`; nothing when it has none.
func writeLatestNote(ctx context.Context, a *app.App, w io.Writer, sessionID string) error {
	s, err := a.Store.LatestNote(ctx, sessionID)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	} else if err != nil {
		return err
	}
	n, err := note.FromStored(s)
	if err != nil {
		return err
	}
	if n.HandoffID != 0 {
		origin := fmt.Sprintf("handoff %d", n.HandoffID)
		if h, err := a.Store.GetHandoff(ctx, n.HandoffID); err == nil {
			origin = fmt.Sprintf("the handoff from %s to %s", placeOf(h.FromPlatform), placeOf(h.Platform))
		}
		fmt.Fprintf(w, "Written at %s, %s:\n", origin, n.Written.Local().Format("2006-01-02 15:04"))
	}
	_, err = fmt.Fprintf(w, "%s\n\n", n.Markdown())
	return err
}
