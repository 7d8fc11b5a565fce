package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/baton-agent/baton/internal/store"
)

const sessionCols = `id, owner_id, title, model, platform, parent_id, created_at, updated_at,
	ended_at, end_reason, input_tokens, output_tokens, message_count, holder, held_since, voice`

// scanSession scans sessionCols, then any more columns into more.
func scanSession(row interface{ Scan(...any) error }, more ...any) (store.Session, error) {
	var s store.Session
	var created, updated, ended, held int64
	err := row.Scan(append([]any{&s.ID, &s.OwnerID, &s.Title, &s.Model, &s.Platform, &s.ParentID,
		&created, &updated, &ended, &s.EndReason, &s.InputTokens, &s.OutputTokens, &s.MessageCount, &s.Holder, &held, &s.Voice}, more...)...)
	if err != nil {
		return store.Session{}, err
	}
	s.CreatedAt, s.UpdatedAt, s.EndedAt = fromNanos(created), fromNanos(updated), fromNanos(ended)
	s.HeldSince = fromNanos(held)
	return s, nil
}

// CreateSession stores a new session. An empty ID gets a random one; a
// title is sanitized and must be unique for the owner.
func (s *Store) CreateSession(ctx context.Context, in store.Session) (store.Session, error) {
	if in.ID == "" {
		in.ID = newID()
	}
	if err := store.CheckNames("id", in.ID, "owner", in.OwnerID, "model", in.Model, "platform", in.Platform,
		"parent", in.ParentID, "holder", in.Holder); err != nil {
		return store.Session{}, fmt.Errorf("create session: %w", err)
	}
	if in.Title != "" {
		t, err := store.SanitizeTitle(in.Title)
		if err != nil {
			return store.Session{}, fmt.Errorf("create session: %w", err)
		}
		in.Title = t
	}
	t := now()
	var held int64
	if in.Holder != "" {
		held = t
	}
	_, err := s.exec(ctx, `INSERT INTO sessions (id, owner_id, title, model, platform, parent_id, created_at, updated_at, holder, held_since, voice)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, in.ID, in.OwnerID, in.Title, in.Model, in.Platform, in.ParentID, t, t, in.Holder, held, in.Voice)
	switch {
	case isUnique(err) && strings.Contains(err.Error(), "title"):
		return store.Session{}, fmt.Errorf("create session %q: %w", in.Title, store.ErrTitleTaken)
	case isUnique(err):
		return store.Session{}, fmt.Errorf("create session %s: id exists: %w", in.ID, store.ErrConflict)
	case err != nil:
		return store.Session{}, fmt.Errorf("create session: %w", err)
	}
	s.keepRecord(ctx) // the record counts sessions (record.go)
	return s.GetSession(ctx, in.ID)
}

// GetSession loads one session.
func (s *Store) GetSession(ctx context.Context, id string) (store.Session, error) {
	sess, err := scanSession(s.readRow(ctx, `SELECT `+sessionCols+` FROM sessions WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return store.Session{}, fmt.Errorf("session %s: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return store.Session{}, fmt.Errorf("load session %s: %w", id, err)
	}
	return sess, nil
}

// ListSessions lists sessions, most recently active first.
func (s *Store) ListSessions(ctx context.Context, f store.SessionFilter) ([]store.Session, error) {
	var where []string
	var args []any
	if f.OwnerID != "" {
		where = append(where, "owner_id = ?")
		args = append(args, f.OwnerID)
	}
	if f.Platform != "" {
		where = append(where, "platform = ?")
		args = append(args, f.Platform)
	}
	if f.Text != "" {
		where = append(where, `title LIKE ? ESCAPE '\'`)
		args = append(args, "%"+escapeLike(f.Text)+"%")
	}
	q := `SELECT ` + sessionCols + ` FROM sessions`
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	limit := f.Limit
	if limit <= 0 {
		limit = 50
	}
	q += " ORDER BY updated_at DESC, rowid DESC" + limitClause(limit) + " OFFSET ?"
	args = append(args, max(f.Offset, 0))
	rows, err := s.read(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("list sessions: %w", err)
	}
	defer rows.Close()
	var out []store.Session
	for rows.Next() {
		sess, err := scanSession(rows)
		if err != nil {
			return nil, fmt.Errorf("list sessions: %w", err)
		}
		out = append(out, sess)
	}
	return out, rows.Err()
}

// SetTitle renames a session.
func (s *Store) SetTitle(ctx context.Context, id, title string) (store.Session, error) {
	clean, err := store.SanitizeTitle(title)
	if err != nil {
		return store.Session{}, fmt.Errorf("title session %s: %w", id, err)
	}
	res, err := s.exec(ctx, `UPDATE sessions SET title = ?, updated_at = ? WHERE id = ?`, clean, now(), id)
	if isUnique(err) {
		return store.Session{}, fmt.Errorf("title session %s %q: %w", id, clean, store.ErrTitleTaken)
	}
	if err := affected(res, err, "title session "+id); err != nil {
		return store.Session{}, err
	}
	return s.GetSession(ctx, id)
}

// ResolveSession finds a session from what a person typed.
func (s *Store) ResolveSession(ctx context.Context, ownerID, ref string) (store.Session, error) {
	ref = strings.TrimSpace(ref)
	if ref == "" {
		return store.Session{}, fmt.Errorf("resolve session: empty reference: %w", store.ErrInvalid)
	}
	owned := func(sess store.Session) bool { return ownerID == "" || sess.OwnerID == ownerID }

	if sess, err := s.GetSession(ctx, ref); err == nil && owned(sess) {
		return sess, nil
	}

	// Exact title; a bare name means the newest generation of its lineage.
	titled, err := s.querySessions(ctx, `SELECT `+sessionCols+` FROM sessions
		WHERE (?1 = '' OR owner_id = ?1) AND (title = ?2 OR title LIKE ?3 ESCAPE '\')`,
		ownerID, ref, escapeLike(ref)+" #%")
	if err != nil {
		return store.Session{}, fmt.Errorf("resolve session %q: %w", ref, err)
	}
	var best store.Session
	bestN := 0
	for _, sess := range titled {
		if sess.Title == ref {
			if _, n := store.SplitLineage(ref); n > 1 {
				return sess, nil // "name #2" asks for exactly that one
			}
			if bestN < 1 {
				best, bestN = sess, 1
			}
			continue
		}
		if base, n := store.SplitLineage(sess.Title); base == ref && n > bestN {
			best, bestN = sess, n
		}
	}
	if bestN > 0 {
		return best, nil
	}

	prefixed, err := s.querySessions(ctx, `SELECT `+sessionCols+` FROM sessions
		WHERE (?1 = '' OR owner_id = ?1) AND id LIKE ?2 ESCAPE '\' LIMIT 2`, ownerID, escapeLike(ref)+"%")
	if err != nil {
		return store.Session{}, fmt.Errorf("resolve session %q: %w", ref, err)
	}
	switch len(prefixed) {
	case 1:
		return prefixed[0], nil
	case 0:
		return store.Session{}, fmt.Errorf("no session with id or title %q: %w", ref, store.ErrNotFound)
	default:
		return store.Session{}, fmt.Errorf("%q matches several session ids; type more of it: %w", ref, store.ErrAmbiguous)
	}
}

func (s *Store) querySessions(ctx context.Context, q string, args ...any) ([]store.Session, error) {
	rows, err := s.read(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []store.Session
	for rows.Next() {
		sess, err := scanSession(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, sess)
	}
	return out, rows.Err()
}

// EndSession marks a session ended with a reason; its transcript stays.
func (s *Store) EndSession(ctx context.Context, id, reason string) error {
	if err := store.CheckNames("reason", reason); err != nil {
		return fmt.Errorf("end session %s: %w", id, err)
	}
	t := now()
	res, err := s.exec(ctx, `UPDATE sessions SET ended_at = ?, end_reason = ?, updated_at = ? WHERE id = ?`, t, reason, t, id)
	return affected(res, err, "end session "+id)
}

// ReopenSession clears the end of a session.
func (s *Store) ReopenSession(ctx context.Context, id string) error {
	res, err := s.exec(ctx, `UPDATE sessions SET ended_at = 0, end_reason = '', updated_at = ? WHERE id = ?`, now(), id)
	return affected(res, err, "reopen session "+id)
}

// AddUsage adds token counts to a session.
func (s *Store) AddUsage(ctx context.Context, id string, u store.Usage) error {
	res, err := s.exec(ctx, addUsageSQL, u.InputTokens, u.OutputTokens, id)
	return affected(res, err, "add usage to session "+id)
}

const addUsageSQL = `UPDATE sessions SET input_tokens = input_tokens + ?, output_tokens = output_tokens + ? WHERE id = ?`

// SetModel records the model a session talks to.
func (s *Store) SetModel(ctx context.Context, id, model string) error {
	if err := store.CheckNames("model", model); err != nil {
		return fmt.Errorf("set model of session %s: %w", id, err)
	}
	res, err := s.exec(ctx, `UPDATE sessions SET model = ?, updated_at = ? WHERE id = ?`, model, now(), id)
	return affected(res, err, "set model of session "+id)
}

// SetVoice turns the session's spoken answers on or off.
func (s *Store) SetVoice(ctx context.Context, id string, on bool) error {
	res, err := s.exec(ctx, `UPDATE sessions SET voice = ?, updated_at = ? WHERE id = ?`, on, now(), id)
	return affected(res, err, "set voice of session "+id)
}

// affected turns an UPDATE/DELETE that touched nothing into ErrNotFound.
func affected(res sql.Result, err error, what string) error {
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if n == 0 {
		return fmt.Errorf("%s: %w", what, store.ErrNotFound)
	}
	return nil
}
