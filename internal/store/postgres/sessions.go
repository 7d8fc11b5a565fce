package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/baton-agent/baton/internal/store"
)

const sessionCols = `id, owner_id, title, model, platform, parent_id, created_at, updated_at,
	ended_at, end_reason, input_tokens, output_tokens, message_count, holder, held_since, voice`

// scanSession scans sessionCols, then any more columns into more.
func scanSession(row pgx.Row, more ...any) (store.Session, error) {
	var s store.Session
	var created, updated, ended, held int64
	err := row.Scan(append([]any{&s.ID, &s.OwnerID, &s.Title, &s.Model, &s.Platform, &s.ParentID,
		&created, &updated, &ended, &s.EndReason, &s.InputTokens, &s.OutputTokens, &s.MessageCount, &s.Holder, &held, &s.Voice}, more...)...)
	if err != nil {
		return store.Session{}, err
	}
	s.CreatedAt, s.UpdatedAt, s.EndedAt, s.HeldSince = fromMicros(created), fromMicros(updated), fromMicros(ended), fromMicros(held)
	return s, nil
}

// CreateSession stores a new session.
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
	t := nowMicros()
	var held int64
	if in.Holder != "" {
		held = t
	}
	sess, err := scanSession(s.pool.QueryRow(ctx, `INSERT INTO sessions (id, owner_id, title, model, platform, parent_id,
		created_at, updated_at, holder, held_since, voice) VALUES ($1, $2, $3, $4, $5, $6, $7, $7, $8, $9, $10)
		RETURNING `+sessionCols, in.ID, in.OwnerID, in.Title, in.Model, in.Platform, in.ParentID, t, in.Holder, held, in.Voice))
	switch {
	case isUnique(err) && strings.Contains(err.Error(), "title"):
		return store.Session{}, fmt.Errorf("create session %q: %w", in.Title, store.ErrTitleTaken)
	case isUnique(err):
		return store.Session{}, fmt.Errorf("create session %s: id exists: %w", in.ID, store.ErrConflict)
	case err != nil:
		return store.Session{}, fmt.Errorf("create session: %w", notText(err))
	}
	return sess, nil
}

// GetSession loads one session.
func (s *Store) GetSession(ctx context.Context, id string) (store.Session, error) {
	if !isText(id) {
		return store.Session{}, fmt.Errorf("session %s: %w", id, store.ErrNotFound)
	}
	sess, err := scanSession(s.pool.QueryRow(ctx, `SELECT `+sessionCols+` FROM sessions WHERE id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) || pgCode(err) == "22021" {
		return store.Session{}, fmt.Errorf("session %s: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return store.Session{}, fmt.Errorf("load session %s: %w", id, err)
	}
	return sess, nil
}

// ListSessions lists sessions, most recently active first.
func (s *Store) ListSessions(ctx context.Context, f store.SessionFilter) ([]store.Session, error) {
	if !isText(f.OwnerID, f.Platform, f.Text) {
		return nil, nil
	}
	var where []string
	var args []any
	arg := func(v any) string { args = append(args, v); return fmt.Sprintf("$%d", len(args)) }
	if f.OwnerID != "" {
		where = append(where, "owner_id = "+arg(f.OwnerID))
	}
	if f.Platform != "" {
		where = append(where, "platform = "+arg(f.Platform))
	}
	if f.Text != "" {
		where = append(where, `title ILIKE `+arg("%"+escapeLike(f.Text)+"%")+` ESCAPE '\'`)
	}
	q := `SELECT ` + sessionCols + ` FROM sessions`
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	limit := f.Limit
	if limit <= 0 {
		limit = 50
	}
	q += " ORDER BY updated_at DESC, made DESC LIMIT " + arg(limit) + " OFFSET " + arg(max(f.Offset, 0))
	out, err := s.querySessions(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("list sessions: %w", notText(err))
	}
	return out, nil
}

func (s *Store) querySessions(ctx context.Context, q string, args ...any) ([]store.Session, error) {
	rows, err := s.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.Session, error) { return scanSession(r) })
}

// SetTitle renames a session.
func (s *Store) SetTitle(ctx context.Context, id, title string) (store.Session, error) {
	clean, err := store.SanitizeTitle(title)
	if err != nil {
		return store.Session{}, fmt.Errorf("title session %s: %w", id, err)
	}
	if !isText(id) {
		return store.Session{}, fmt.Errorf("title session %s: %w", id, store.ErrNotFound)
	}
	sess, err := scanSession(s.pool.QueryRow(ctx, `UPDATE sessions SET title = $1, updated_at = $2 WHERE id = $3 RETURNING `+sessionCols,
		clean, nowMicros(), id))
	switch {
	case isUnique(err):
		return store.Session{}, fmt.Errorf("title session %s %q: %w", id, clean, store.ErrTitleTaken)
	case errors.Is(err, pgx.ErrNoRows):
		return store.Session{}, fmt.Errorf("title session %s: %w", id, store.ErrNotFound)
	case err != nil:
		return store.Session{}, fmt.Errorf("title session %s: %w", id, notText(err))
	}
	return sess, nil
}

// ResolveSession finds a session from what a person typed.
func (s *Store) ResolveSession(ctx context.Context, ownerID, ref string) (store.Session, error) {
	ref = strings.TrimSpace(ref)
	if ref == "" {
		return store.Session{}, fmt.Errorf("resolve session: empty reference: %w", store.ErrInvalid)
	}
	if err := store.CheckNames("reference", ref, "owner", ownerID); err != nil {
		return store.Session{}, fmt.Errorf("no session with id or title %q: %w", ref, store.ErrNotFound)
	}
	owned := func(sess store.Session) bool { return ownerID == "" || sess.OwnerID == ownerID }
	if sess, err := s.GetSession(ctx, ref); err == nil && owned(sess) {
		return sess, nil
	}
	titled, err := s.querySessions(ctx, `SELECT `+sessionCols+` FROM sessions
		WHERE ($1 = '' OR owner_id = $1) AND (title = $2 OR title LIKE $3 ESCAPE '\')`,
		ownerID, ref, escapeLike(ref)+" #%")
	if err != nil {
		return store.Session{}, fmt.Errorf("resolve session %q: %w", ref, err)
	}
	var best store.Session
	bestN := 0
	for _, sess := range titled {
		if sess.Title == ref {
			if _, n := store.SplitLineage(ref); n > 1 {
				return sess, nil
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
		WHERE ($1 = '' OR owner_id = $1) AND id LIKE $2 ESCAPE '\' LIMIT 2`, ownerID, escapeLike(ref)+"%")
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

// EndSession marks a session ended with a reason.
func (s *Store) EndSession(ctx context.Context, id, reason string) error {
	if err := store.CheckNames("reason", reason); err != nil {
		return fmt.Errorf("end session %s: %w", id, err)
	}
	if !isText(id) {
		return fmt.Errorf("end session %s: %w", id, store.ErrNotFound)
	}
	t := nowMicros()
	tag, err := s.pool.Exec(ctx, `UPDATE sessions SET ended_at = $1, end_reason = $2, updated_at = $1 WHERE id = $3`, t, reason, id)
	return affected(tag, err, "end session "+id)
}

// ReopenSession clears the end of a session.
func (s *Store) ReopenSession(ctx context.Context, id string) error {
	if !isText(id) {
		return fmt.Errorf("%s: %w", "reopen session "+id, store.ErrNotFound)
	}
	tag, err := s.pool.Exec(ctx, `UPDATE sessions SET ended_at = 0, end_reason = '', updated_at = $1 WHERE id = $2`, nowMicros(), id)
	return affected(tag, err, "reopen session "+id)
}

const addUsageSQL = `UPDATE sessions SET input_tokens = input_tokens + $1, output_tokens = output_tokens + $2 WHERE id = $3`

// AddUsage adds token counts to a session.
func (s *Store) AddUsage(ctx context.Context, id string, u store.Usage) error {
	if !isText(id) {
		return fmt.Errorf("%s: %w", "add usage to session "+id, store.ErrNotFound)
	}
	tag, err := s.pool.Exec(ctx, addUsageSQL, u.InputTokens, u.OutputTokens, id)
	return affected(tag, err, "add usage to session "+id)
}

// SetModel records the model a session talks to.
func (s *Store) SetModel(ctx context.Context, id, model string) error {
	if err := store.CheckNames("model", model); err != nil {
		return fmt.Errorf("set model of session %s: %w", id, err)
	}
	if !isText(id) {
		return fmt.Errorf("set model of session %s: %w", id, store.ErrNotFound)
	}
	tag, err := s.pool.Exec(ctx, `UPDATE sessions SET model = $1, updated_at = $2 WHERE id = $3`, model, nowMicros(), id)
	return affected(tag, err, "set model of session "+id)
}

// SetVoice turns the session's spoken answers on or off.
func (s *Store) SetVoice(ctx context.Context, id string, on bool) error {
	if !isText(id) {
		return fmt.Errorf("%s: %w", "set voice of session "+id, store.ErrNotFound)
	}
	tag, err := s.pool.Exec(ctx, `UPDATE sessions SET voice = $1, updated_at = $2 WHERE id = $3`, on, nowMicros(), id)
	return affected(tag, err, "set voice of session "+id)
}

// Bind attaches key to sessionID, returning the session it pointed at before.
func (s *Store) Bind(ctx context.Context, key, sessionID string) (string, error) {
	if key == "" {
		return "", fmt.Errorf("bind: empty address key: %w", store.ErrInvalid)
	}
	if err := store.CheckNames("address key", key, "session", sessionID); err != nil {
		return "", fmt.Errorf("bind: %w", err)
	}
	var prev string
	err := s.tx(ctx, func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, `SELECT session_id FROM bindings WHERE key = $1 FOR UPDATE`, key).Scan(&prev)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		_, err = tx.Exec(ctx, `INSERT INTO bindings (key, session_id, updated_at) VALUES ($1, $2, $3)
			ON CONFLICT (key) DO UPDATE SET session_id = excluded.session_id, updated_at = excluded.updated_at`,
			key, sessionID, nowMicros())
		if isForeignKey(err) {
			return fmt.Errorf("session %s: %w", sessionID, store.ErrNotFound)
		}
		return err
	})
	if err != nil {
		return "", fmt.Errorf("bind %s to %s: %w", key, sessionID, notText(err))
	}
	return prev, nil
}

// Unbind detaches key from its session.
func (s *Store) Unbind(ctx context.Context, key string) error {
	if !isText(key) {
		return fmt.Errorf("unbind %s: %w", key, store.ErrNotFound)
	}
	tag, err := s.pool.Exec(ctx, `DELETE FROM bindings WHERE key = $1`, key)
	return affected(tag, err, "unbind "+key)
}

// LookupBinding finds the session an address key is bound to.
func (s *Store) LookupBinding(ctx context.Context, key string) (store.Binding, error) {
	if !isText(key) {
		return store.Binding{}, fmt.Errorf("binding %s: %w", key, store.ErrNotFound)
	}
	b := store.Binding{Key: key}
	var t int64
	err := s.pool.QueryRow(ctx, `SELECT session_id, updated_at FROM bindings WHERE key = $1`, key).Scan(&b.SessionID, &t)
	if errors.Is(err, pgx.ErrNoRows) {
		return store.Binding{}, fmt.Errorf("binding %s: %w", key, store.ErrNotFound)
	}
	if err != nil {
		return store.Binding{}, fmt.Errorf("lookup binding %s: %w", key, notText(err))
	}
	b.UpdatedAt = fromMicros(t)
	return b, nil
}

// BoundSession implements store.Bindings.
func (s *Store) BoundSession(ctx context.Context, key string) (store.Session, error) {
	if !isText(key) {
		return store.Session{}, fmt.Errorf("session bound at %s: %w", key, store.ErrNotFound)
	}
	sess, err := scanSession(s.pool.QueryRow(ctx, `SELECT `+sessionCols+` FROM sessions
		WHERE id = (SELECT session_id FROM bindings WHERE key = $1)`, key))
	if errors.Is(err, pgx.ErrNoRows) {
		return store.Session{}, fmt.Errorf("session bound at %s: %w", key, store.ErrNotFound)
	}
	if err != nil {
		return store.Session{}, fmt.Errorf("load the session bound at %s: %w", key, notText(err))
	}
	return sess, nil
}

// BindingsForSession lists the addresses bound to a session, newest first.
func (s *Store) BindingsForSession(ctx context.Context, sessionID string) ([]store.Binding, error) {
	if !isText(sessionID) {
		return nil, nil
	}
	rows, err := s.pool.Query(ctx, `SELECT key, session_id, updated_at FROM bindings WHERE session_id = $1
		ORDER BY updated_at DESC, key`, sessionID)
	if err != nil {
		return nil, fmt.Errorf("bindings of session %s: %w", sessionID, err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.Binding, error) {
		var b store.Binding
		var t int64
		err := r.Scan(&b.Key, &b.SessionID, &t)
		b.UpdatedAt = fromMicros(t)
		return b, err
	})
	if err != nil {
		return nil, fmt.Errorf("bindings of session %s: %w", sessionID, err)
	}
	return out, nil
}

// CreateUser stores a new user.
func (s *Store) CreateUser(ctx context.Context, name string) (store.User, error) {
	if err := store.CheckNames("name", name); err != nil {
		return store.User{}, fmt.Errorf("create user: %w", err)
	}
	u := store.User{ID: newID(), Name: name}
	t := nowMicros()
	if _, err := s.pool.Exec(ctx, `INSERT INTO users (id, name, created_at) VALUES ($1, $2, $3)`, u.ID, u.Name, t); err != nil {
		return store.User{}, fmt.Errorf("create user %q: %w", name, notText(err))
	}
	u.CreatedAt = fromMicros(t)
	return u, nil
}

// GetUser loads a user.
func (s *Store) GetUser(ctx context.Context, id string) (store.User, error) {
	if !isText(id) {
		return store.User{}, fmt.Errorf("user %s: %w", id, store.ErrNotFound)
	}
	u := store.User{ID: id}
	var t int64
	err := s.pool.QueryRow(ctx, `SELECT name, created_at FROM users WHERE id = $1`, id).Scan(&u.Name, &t)
	if errors.Is(err, pgx.ErrNoRows) {
		return store.User{}, fmt.Errorf("user %s: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return store.User{}, fmt.Errorf("load user %s: %w", id, notText(err))
	}
	u.CreatedAt = fromMicros(t)
	return u, nil
}

// LinkIdentity attaches a platform account to a user.
func (s *Store) LinkIdentity(ctx context.Context, id store.Identity) error {
	if id.Platform == "" || id.PlatformUserID == "" {
		return fmt.Errorf("link identity: platform and platform user id are required: %w", store.ErrInvalid)
	}
	if err := id.Check(); err != nil {
		return fmt.Errorf("link identity: %w", err)
	}
	_, err := s.pool.Exec(ctx, `INSERT INTO identities (platform, platform_user_id, user_id, display_name, created_at)
		VALUES ($1, $2, $3, $4, $5) ON CONFLICT (platform, platform_user_id)
		DO UPDATE SET user_id = excluded.user_id, display_name = excluded.display_name`,
		id.Platform, id.PlatformUserID, id.UserID, id.DisplayName, nowMicros())
	if isForeignKey(err) {
		return fmt.Errorf("link identity %s:%s: user %s: %w", id.Platform, id.PlatformUserID, id.UserID, store.ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("link identity %s:%s: %w", id.Platform, id.PlatformUserID, notText(err))
	}
	return nil
}

// ClaimIdentity links id unless the identity is linked already, and
// returns the link that holds.
func (s *Store) ClaimIdentity(ctx context.Context, id store.Identity) (store.Identity, error) {
	if id.Platform == "" || id.PlatformUserID == "" {
		return store.Identity{}, fmt.Errorf("claim identity: platform and platform user id are required: %w", store.ErrInvalid)
	}
	if err := id.Check(); err != nil {
		return store.Identity{}, fmt.Errorf("claim identity: %w", err)
	}
	out := store.Identity{Platform: id.Platform, PlatformUserID: id.PlatformUserID}
	err := s.tx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO identities (platform, platform_user_id, user_id, display_name, created_at)
			VALUES ($1, $2, $3, $4, $5) ON CONFLICT (platform, platform_user_id) DO NOTHING`,
			id.Platform, id.PlatformUserID, id.UserID, id.DisplayName, nowMicros()); err != nil {
			return err
		}
		var t int64
		if err := tx.QueryRow(ctx, `SELECT user_id, display_name, created_at FROM identities
			WHERE platform = $1 AND platform_user_id = $2`, id.Platform, id.PlatformUserID).Scan(&out.UserID, &out.DisplayName, &t); err != nil {
			return err
		}
		out.CreatedAt = fromMicros(t)
		return nil
	})
	if isForeignKey(err) {
		return store.Identity{}, fmt.Errorf("claim identity %s:%s: user %s: %w", id.Platform, id.PlatformUserID, id.UserID, store.ErrNotFound)
	}
	if err != nil {
		return store.Identity{}, fmt.Errorf("claim identity %s:%s: %w", id.Platform, id.PlatformUserID, notText(err))
	}
	return out, nil
}

// LookupIdentity finds who a platform account belongs to.
func (s *Store) LookupIdentity(ctx context.Context, platform, platformUserID string) (store.Identity, error) {
	if !isText(platform, platformUserID) {
		return store.Identity{}, fmt.Errorf("identity %s:%s: %w", platform, platformUserID, store.ErrNotFound)
	}
	id := store.Identity{Platform: platform, PlatformUserID: platformUserID}
	var t int64
	err := s.pool.QueryRow(ctx, `SELECT user_id, display_name, created_at FROM identities
		WHERE platform = $1 AND platform_user_id = $2`, platform, platformUserID).Scan(&id.UserID, &id.DisplayName, &t)
	if errors.Is(err, pgx.ErrNoRows) {
		return store.Identity{}, fmt.Errorf("identity %s:%s: %w", platform, platformUserID, store.ErrNotFound)
	}
	if err != nil {
		return store.Identity{}, fmt.Errorf("lookup identity %s:%s: %w", platform, platformUserID, notText(err))
	}
	id.CreatedAt = fromMicros(t)
	return id, nil
}

// IdentitiesForUser lists a user's platform accounts.
func (s *Store) IdentitiesForUser(ctx context.Context, userID string) ([]store.Identity, error) {
	if !isText(userID) {
		return nil, nil
	}
	rows, err := s.pool.Query(ctx, `SELECT platform, platform_user_id, user_id, display_name, created_at
		FROM identities WHERE user_id = $1 ORDER BY platform, platform_user_id`, userID)
	if err != nil {
		return nil, fmt.Errorf("identities of user %s: %w", userID, err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.Identity, error) {
		var id store.Identity
		var t int64
		err := r.Scan(&id.Platform, &id.PlatformUserID, &id.UserID, &id.DisplayName, &t)
		id.CreatedAt = fromMicros(t)
		return id, err
	})
	if err != nil {
		return nil, fmt.Errorf("identities of user %s: %w", userID, err)
	}
	return out, nil
}
