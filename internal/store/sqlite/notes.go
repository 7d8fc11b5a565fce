package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/baton-agent/baton/internal/store"
)

const noteCols = `id, session_id, COALESCE(handoff_id, 0), body, fallback, created_at`

func scanNote(row interface{ Scan(...any) error }) (store.Note, error) {
	var n store.Note
	var created int64
	if err := row.Scan(&n.ID, &n.SessionID, &n.HandoffID, &n.Body, &n.Fallback, &created); err != nil {
		return store.Note{}, err
	}
	n.CreatedAt = fromNanos(created)
	return n, nil
}

// insertNoteSQL stores a note for a session that exists and, when a
// handoff is named, is that handoff's session; a second note for the same
// handoff is refused by the partial unique index, and then no row comes
// back.
const insertNoteSQL = `INSERT INTO notes (session_id, handoff_id, body, fallback, created_at)
	SELECT s.id, ?1, ?2, ?3, ?4 FROM sessions s
	WHERE s.id = ?5 AND (?1 IS NULL OR EXISTS (SELECT 1 FROM handoffs h WHERE h.id = ?1 AND h.session_id = s.id))
	ON CONFLICT DO NOTHING RETURNING ` + noteCols

// AddNote stores a note, or returns the one its handoff already has.
func (s *Store) AddNote(ctx context.Context, n store.Note) (store.Note, bool, error) {
	if n.SessionID == "" || strings.TrimSpace(n.Body) == "" || n.HandoffID < 0 {
		return store.Note{}, false, fmt.Errorf("add note to session %q: a session and a body are required: %w", n.SessionID, store.ErrInvalid)
	}
	var handoff any // NULL for a note written without a handoff
	if n.HandoffID > 0 {
		handoff = n.HandoffID
	}
	created := toNanos(n.CreatedAt)
	if created == 0 {
		created = now()
	}
	// The insert and, when the handoff has a note already, its read are one
	// write: that note may be in the same group commit, not yet visible to
	// a reader.
	var (
		got     store.Note
		isNew   bool
		earlier bool // the handoff's note was there
	)
	err := s.tx(ctx, func(tx *wtx) error {
		var err error
		got, err = scanNote(tx.QueryRow(insertNoteSQL, handoff, n.Body, n.Fallback, created, n.SessionID))
		if err == nil {
			isNew = true
			return nil
		}
		if !errors.Is(err, sql.ErrNoRows) || n.HandoffID <= 0 {
			return err
		}
		got, err = scanNote(tx.QueryRow(`SELECT `+noteCols+` FROM notes WHERE handoff_id = ?`, n.HandoffID))
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		earlier = err == nil
		return err
	})
	if err == nil && isNew {
		return got, true, nil
	}
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return store.Note{}, false, fmt.Errorf("add note to session %s: %w", n.SessionID, err)
	}
	if earlier && got.SessionID == n.SessionID {
		return got, false, nil
	}
	if n.HandoffID > 0 {
		return store.Note{}, false, fmt.Errorf("add note to session %s: no handoff %d of that session: %w", n.SessionID, n.HandoffID, store.ErrNotFound)
	}
	return store.Note{}, false, fmt.Errorf("add note: session %s: %w", n.SessionID, store.ErrNotFound)
}

// HandoffNote is the note written for a handoff.
func (s *Store) HandoffNote(ctx context.Context, handoffID int64) (store.Note, error) {
	n, err := scanNote(s.readRow(ctx, `SELECT `+noteCols+` FROM notes WHERE handoff_id = ?`, handoffID))
	if errors.Is(err, sql.ErrNoRows) {
		return store.Note{}, fmt.Errorf("note of handoff %d: %w", handoffID, store.ErrNotFound)
	}
	if err != nil {
		return store.Note{}, fmt.Errorf("note of handoff %d: %w", handoffID, err)
	}
	return n, nil
}

// LatestNote is the session's newest note.
func (s *Store) LatestNote(ctx context.Context, sessionID string) (store.Note, error) {
	n, err := scanNote(s.readRow(ctx, `SELECT `+noteCols+` FROM notes WHERE session_id = ? ORDER BY id DESC LIMIT 1`, sessionID))
	if errors.Is(err, sql.ErrNoRows) {
		return store.Note{}, fmt.Errorf("latest note of session %s: %w", sessionID, store.ErrNotFound)
	}
	if err != nil {
		return store.Note{}, fmt.Errorf("latest note of session %s: %w", sessionID, err)
	}
	return n, nil
}

// SessionNotes lists a session's notes, oldest first.
func (s *Store) SessionNotes(ctx context.Context, sessionID string) ([]store.Note, error) {
	rows, err := s.read(ctx, `SELECT `+noteCols+` FROM notes WHERE session_id = ? ORDER BY id`, sessionID)
	if err != nil {
		return nil, fmt.Errorf("notes of session %s: %w", sessionID, err)
	}
	defer rows.Close()
	var out []store.Note
	for rows.Next() {
		n, err := scanNote(rows)
		if err != nil {
			return nil, fmt.Errorf("notes of session %s: %w", sessionID, err)
		}
		out = append(out, n)
	}
	return out, rows.Err()
}
