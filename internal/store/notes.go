package store

import (
	"context"
	"time"
)

// Note is a handoff note as stored: what the session is about and where it
// stands, written at a handoff or by /save. Body is the note's JSON (its
// shape is internal/note's business, not the store's).
type Note struct {
	ID        int64
	SessionID string
	HandoffID int64  // the handoff it was written for; 0 for /save
	Body      string // JSON
	// Fallback is why baton built the note from the last turns instead of
	// the model writing it; "" when the model wrote it.
	Fallback  string
	CreatedAt time.Time
}

// Notes stores handoff notes.
type Notes interface {
	// AddNote stores n. A note for a handoff that already has one is not
	// stored again: the stored one is returned with isNew false, so a
	// retried handoff keeps its first note.
	AddNote(ctx context.Context, n Note) (stored Note, isNew bool, err error)
	// HandoffNote is the note written for a handoff; ErrNotFound if none.
	HandoffNote(ctx context.Context, handoffID int64) (Note, error)
	// LatestNote is the session's newest note; ErrNotFound if none.
	LatestNote(ctx context.Context, sessionID string) (Note, error)
	// SessionNotes lists the session's notes, oldest first.
	SessionNotes(ctx context.Context, sessionID string) ([]Note, error)
}
