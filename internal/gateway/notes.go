package gateway

import (
	"context"
	"errors"
	"fmt"

	"github.com/baton-agent/baton/internal/note"
	"github.com/baton-agent/baton/internal/platform"
	"github.com/baton-agent/baton/internal/store"
)

// notes writes handoff notes with the agent's model.
func (g *Gateway) notes() *note.Writer {
	return &note.Writer{
		Provider:      g.ag.Provider,
		Model:         g.ag.Model,
		Store:         g.st,
		Tools:         g.ag.Tools,
		MaxTokens:     g.ag.MaxOutputTokens,
		ContextWindow: g.ag.ContextWindow,
		Log:           g.log,
		// The greeting's turn runs while the note is written; a retried
		// handoff may have stored it already.
		TurnOf: func(h store.Handoff, m store.Message) bool {
			return m.Kind == store.KindHandoff && m.PlatformMsgID == fmt.Sprintf("handoff:%d", h.ID)
		},
	}
}

// save is /save in a chat: a note of the session here, stored without
// moving it, and shown.
func (g *Gateway) save(ctx context.Context, addr platform.Address) string {
	sess, err := g.boundSession(ctx, addr)
	if err != nil {
		return err.Error()
	}
	n, err := g.notes().Save(ctx, sess.ID)
	if errors.Is(err, note.ErrEmpty) {
		return "Nothing to save yet: say something first."
	} else if err != nil {
		return "Could not save a note: " + err.Error()
	}
	return n.Markdown()
}

// withNote puts the handoff's note at the top of the first message at the
// destination.
func withNote(n note.Note, reply string) string {
	if reply == "" {
		return n.Markdown()
	}
	return fmt.Sprintf("%s\n\n%s", n.Markdown(), reply)
}
