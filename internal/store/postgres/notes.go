package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/baton-agent/baton/internal/store"
)

const noteCols = `id, session_id, COALESCE(handoff_id, 0), body, fallback, created_at`

func scanNote(row pgx.Row) (store.Note, error) {
	var n store.Note
	var created int64
	var body, fallback []byte
	if err := row.Scan(&n.ID, &n.SessionID, &n.HandoffID, &body, &fallback, &created); err != nil {
		return store.Note{}, err
	}
	n.Body, n.Fallback, n.CreatedAt = string(body), string(fallback), fromMicros(created)
	return n, nil
}

// AddNote stores a note, or returns the one its handoff already has.
func (s *Store) AddNote(ctx context.Context, n store.Note) (store.Note, bool, error) {
	if n.SessionID == "" || strings.TrimSpace(n.Body) == "" || n.HandoffID < 0 {
		return store.Note{}, false, fmt.Errorf("add note to session %q: a session and a body are required: %w", n.SessionID, store.ErrInvalid)
	}
	if !isText(n.SessionID) {
		return store.Note{}, false, fmt.Errorf("add note: session %s: %w", n.SessionID, store.ErrNotFound)
	}
	var handoff *int64 // NULL for a note written without a handoff
	if n.HandoffID > 0 {
		handoff = &n.HandoffID
	}
	created := micros(store.Micro(n.CreatedAt))
	if created == 0 {
		created = nowMicros()
	}
	var (
		got     store.Note
		isNew   bool
		earlier bool
	)
	err := s.tx(ctx, func(tx pgx.Tx) error {
		var err error
		got, err = scanNote(tx.QueryRow(ctx, `INSERT INTO notes (session_id, handoff_id, body, fallback, created_at)
			SELECT s.id, $1, $2, $3, $4 FROM sessions s
			WHERE s.id = $5 AND ($1::bigint IS NULL OR EXISTS (SELECT 1 FROM handoffs h WHERE h.id = $1 AND h.session_id = s.id))
			ON CONFLICT DO NOTHING RETURNING `+noteCols, handoff, []byte(n.Body), []byte(n.Fallback), created, n.SessionID))
		if err == nil {
			isNew = true
			return nil
		}
		if !errors.Is(err, pgx.ErrNoRows) || n.HandoffID <= 0 {
			return err
		}
		got, err = scanNote(tx.QueryRow(ctx, `SELECT `+noteCols+` FROM notes WHERE handoff_id = $1`, n.HandoffID))
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		earlier = err == nil
		return err
	})
	if err == nil && isNew {
		return got, true, nil
	}
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
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
	n, err := scanNote(s.pool.QueryRow(ctx, `SELECT `+noteCols+` FROM notes WHERE handoff_id = $1`, handoffID))
	if errors.Is(err, pgx.ErrNoRows) {
		return store.Note{}, fmt.Errorf("note of handoff %d: %w", handoffID, store.ErrNotFound)
	}
	if err != nil {
		return store.Note{}, fmt.Errorf("note of handoff %d: %w", handoffID, err)
	}
	return n, nil
}

// LatestNote is the session's newest note.
func (s *Store) LatestNote(ctx context.Context, sessionID string) (store.Note, error) {
	if !isText(sessionID) {
		return store.Note{}, fmt.Errorf("latest note of session %s: %w", sessionID, store.ErrNotFound)
	}
	n, err := scanNote(s.pool.QueryRow(ctx, `SELECT `+noteCols+` FROM notes WHERE session_id = $1 ORDER BY id DESC LIMIT 1`, sessionID))
	if errors.Is(err, pgx.ErrNoRows) {
		return store.Note{}, fmt.Errorf("latest note of session %s: %w", sessionID, store.ErrNotFound)
	}
	if err != nil {
		return store.Note{}, fmt.Errorf("latest note of session %s: %w", sessionID, notFound(err))
	}
	return n, nil
}

// SessionNotes lists a session's notes, oldest first.
func (s *Store) SessionNotes(ctx context.Context, sessionID string) ([]store.Note, error) {
	if !isText(sessionID) {
		return nil, nil
	}
	rows, err := s.pool.Query(ctx, `SELECT `+noteCols+` FROM notes WHERE session_id = $1 ORDER BY id`, sessionID)
	if err != nil {
		return nil, fmt.Errorf("notes of session %s: %w", sessionID, notFound(err))
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.Note, error) { return scanNote(r) })
	if err != nil {
		return nil, fmt.Errorf("notes of session %s: %w", sessionID, err)
	}
	return out, nil
}
