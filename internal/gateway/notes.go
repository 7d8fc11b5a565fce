package gateway

import (
	"fmt"
	"log/slog"

	"github.com/baton-agent/baton/internal/agent"
	"github.com/baton-agent/baton/internal/note"
	"github.com/baton-agent/baton/internal/store"
)

// newNoteWriter writes handoff notes (and /save's) with the agent's model.
func newNoteWriter(ag *agent.Agent, st store.Store, log *slog.Logger) *note.Writer {
	return &note.Writer{
		Provider:      ag.Provider,
		Model:         ag.Model,
		Store:         st,
		Tools:         ag.Tools,
		MaxTokens:     ag.MaxOutputTokens,
		ContextWindow: ag.ContextWindow,
		Log:           log,
		// The greeting's turn runs while the note is written; a retried
		// handoff may have stored it already.
		TurnOf: func(h store.Handoff, m store.Message) bool {
			return m.Kind == store.KindHandoff && m.PlatformMsgID == handoffKey(h.ID)
		},
	}
}

// withNote puts the handoff's note at the top of the first message at the
// destination.
func withNote(n note.Note, reply string) string {
	if reply == "" {
		return n.Markdown()
	}
	return fmt.Sprintf("%s\n\n%s", n.Markdown(), reply)
}
