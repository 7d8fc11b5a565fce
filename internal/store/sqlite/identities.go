package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/baton-agent/baton/internal/store"
)

// CreateUser stores a new user.
func (s *Store) CreateUser(ctx context.Context, name string) (store.User, error) {
	if err := store.CheckNames("name", name); err != nil {
		return store.User{}, fmt.Errorf("create user: %w", err)
	}
	u := store.User{ID: newID(), Name: name}
	t := now()
	if _, err := s.exec(ctx, `INSERT INTO users (id, name, created_at) VALUES (?, ?, ?)`, u.ID, u.Name, t); err != nil {
		return store.User{}, fmt.Errorf("create user %q: %w", name, err)
	}
	u.CreatedAt = fromNanos(t)
	return u, nil
}

// GetUser loads a user.
func (s *Store) GetUser(ctx context.Context, id string) (store.User, error) {
	u := store.User{ID: id}
	var t int64
	err := s.readRow(ctx, `SELECT name, created_at FROM users WHERE id = ?`, id).Scan(&u.Name, &t)
	if errors.Is(err, sql.ErrNoRows) {
		return store.User{}, fmt.Errorf("user %s: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return store.User{}, fmt.Errorf("load user %s: %w", id, err)
	}
	u.CreatedAt = fromNanos(t)
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
	_, err := s.exec(ctx, `INSERT INTO identities (platform, platform_user_id, user_id, display_name, created_at)
		VALUES (?, ?, ?, ?, ?) ON CONFLICT (platform, platform_user_id)
		DO UPDATE SET user_id = excluded.user_id, display_name = excluded.display_name`,
		id.Platform, id.PlatformUserID, id.UserID, id.DisplayName, now())
	if isForeignKey(err) {
		return fmt.Errorf("link identity %s:%s: user %s: %w", id.Platform, id.PlatformUserID, id.UserID, store.ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("link identity %s:%s: %w", id.Platform, id.PlatformUserID, err)
	}
	return nil
}

// ClaimIdentity links id unless the identity is linked already, and
// returns the link that holds. The insert and the read are one
// transaction, so a claim that lost to another process's reads that
// process's link.
func (s *Store) ClaimIdentity(ctx context.Context, id store.Identity) (store.Identity, error) {
	if id.Platform == "" || id.PlatformUserID == "" {
		return store.Identity{}, fmt.Errorf("claim identity: platform and platform user id are required: %w", store.ErrInvalid)
	}
	if err := id.Check(); err != nil {
		return store.Identity{}, fmt.Errorf("claim identity: %w", err)
	}
	out := store.Identity{Platform: id.Platform, PlatformUserID: id.PlatformUserID}
	err := s.tx(ctx, func(tx *wtx) error {
		if _, err := tx.Exec(`INSERT INTO identities (platform, platform_user_id, user_id, display_name, created_at)
			VALUES (?, ?, ?, ?, ?) ON CONFLICT (platform, platform_user_id) DO NOTHING`,
			id.Platform, id.PlatformUserID, id.UserID, id.DisplayName, now()); err != nil {
			return err
		}
		var t int64
		if err := tx.QueryRow(`SELECT user_id, display_name, created_at FROM identities
			WHERE platform = ? AND platform_user_id = ?`, id.Platform, id.PlatformUserID).Scan(&out.UserID, &out.DisplayName, &t); err != nil {
			return err
		}
		out.CreatedAt = fromNanos(t)
		return nil
	})
	if isForeignKey(err) {
		return store.Identity{}, fmt.Errorf("claim identity %s:%s: user %s: %w", id.Platform, id.PlatformUserID, id.UserID, store.ErrNotFound)
	}
	if err != nil {
		return store.Identity{}, fmt.Errorf("claim identity %s:%s: %w", id.Platform, id.PlatformUserID, err)
	}
	return out, nil
}

// LookupIdentity finds who a platform account belongs to.
func (s *Store) LookupIdentity(ctx context.Context, platform, platformUserID string) (store.Identity, error) {
	id := store.Identity{Platform: platform, PlatformUserID: platformUserID}
	var t int64
	err := s.readRow(ctx, `SELECT user_id, display_name, created_at FROM identities
		WHERE platform = ? AND platform_user_id = ?`, platform, platformUserID).Scan(&id.UserID, &id.DisplayName, &t)
	if errors.Is(err, sql.ErrNoRows) {
		return store.Identity{}, fmt.Errorf("identity %s:%s: %w", platform, platformUserID, store.ErrNotFound)
	}
	if err != nil {
		return store.Identity{}, fmt.Errorf("lookup identity %s:%s: %w", platform, platformUserID, err)
	}
	id.CreatedAt = fromNanos(t)
	return id, nil
}

// IdentitiesForUser lists a user's platform accounts.
func (s *Store) IdentitiesForUser(ctx context.Context, userID string) ([]store.Identity, error) {
	rows, err := s.read(ctx, `SELECT platform, platform_user_id, user_id, display_name, created_at
		FROM identities WHERE user_id = ? ORDER BY platform, platform_user_id`, userID)
	if err != nil {
		return nil, fmt.Errorf("identities of user %s: %w", userID, err)
	}
	defer rows.Close()
	var out []store.Identity
	for rows.Next() {
		var id store.Identity
		var t int64
		if err := rows.Scan(&id.Platform, &id.PlatformUserID, &id.UserID, &id.DisplayName, &t); err != nil {
			return nil, fmt.Errorf("identities of user %s: %w", userID, err)
		}
		id.CreatedAt = fromNanos(t)
		out = append(out, id)
	}
	return out, rows.Err()
}
