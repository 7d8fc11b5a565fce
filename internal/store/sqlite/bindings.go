package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/baton-agent/baton/internal/store"
)

// Bind attaches key to sessionID, returning the session it pointed at before.
func (s *Store) Bind(ctx context.Context, key, sessionID string) (string, error) {
	if key == "" {
		return "", fmt.Errorf("bind: empty address key: %w", store.ErrInvalid)
	}
	if err := store.CheckNames("address key", key, "session", sessionID); err != nil {
		return "", fmt.Errorf("bind: %w", err)
	}
	var prev string
	err := s.tx(ctx, func(tx *wtx) error {
		err := tx.QueryRow(`SELECT session_id FROM bindings WHERE key = ?`, key).Scan(&prev)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		_, err = tx.Exec(`INSERT INTO bindings (key, session_id, updated_at) VALUES (?, ?, ?)
			ON CONFLICT (key) DO UPDATE SET session_id = excluded.session_id, updated_at = excluded.updated_at`,
			key, sessionID, now())
		if isForeignKey(err) {
			return fmt.Errorf("session %s: %w", sessionID, store.ErrNotFound)
		}
		return err
	})
	if err != nil {
		return "", fmt.Errorf("bind %s to %s: %w", key, sessionID, err)
	}
	return prev, nil
}

// Unbind detaches key from its session.
func (s *Store) Unbind(ctx context.Context, key string) error {
	res, err := s.exec(ctx, `DELETE FROM bindings WHERE key = ?`, key)
	return affected(res, err, "unbind "+key)
}

// LookupBinding finds the session an address key is bound to.
func (s *Store) LookupBinding(ctx context.Context, key string) (store.Binding, error) {
	b := store.Binding{Key: key}
	var t int64
	err := s.readRow(ctx, `SELECT session_id, updated_at FROM bindings WHERE key = ?`, key).Scan(&b.SessionID, &t)
	if errors.Is(err, sql.ErrNoRows) {
		return store.Binding{}, fmt.Errorf("binding %s: %w", key, store.ErrNotFound)
	}
	if err != nil {
		return store.Binding{}, fmt.Errorf("lookup binding %s: %w", key, err)
	}
	b.UpdatedAt = fromNanos(t)
	return b, nil
}

// BoundSession implements store.Bindings.
func (s *Store) BoundSession(ctx context.Context, key string) (store.Session, error) {
	sess, err := scanSession(s.readRow(ctx, boundSessionSQL, key))
	if errors.Is(err, sql.ErrNoRows) {
		return store.Session{}, fmt.Errorf("session bound at %s: %w", key, store.ErrNotFound)
	}
	if err != nil {
		return store.Session{}, fmt.Errorf("load the session bound at %s: %w", key, err)
	}
	return sess, nil
}

const boundSessionSQL = `SELECT ` + sessionCols + ` FROM sessions WHERE id = (SELECT session_id FROM bindings WHERE key = ?)`

// BindingsForSession lists the addresses bound to a session, newest first.
func (s *Store) BindingsForSession(ctx context.Context, sessionID string) ([]store.Binding, error) {
	rows, err := s.read(ctx, `SELECT key, session_id, updated_at FROM bindings WHERE session_id = ?
		ORDER BY updated_at DESC, key`, sessionID)
	if err != nil {
		return nil, fmt.Errorf("bindings of session %s: %w", sessionID, err)
	}
	defer rows.Close()
	var out []store.Binding
	for rows.Next() {
		var b store.Binding
		var t int64
		if err := rows.Scan(&b.Key, &b.SessionID, &t); err != nil {
			return nil, fmt.Errorf("bindings of session %s: %w", sessionID, err)
		}
		b.UpdatedAt = fromNanos(t)
		out = append(out, b)
	}
	return out, rows.Err()
}
