package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/baton-agent/baton/internal/store"
)

const pairingCols = `code, platform, platform_user_id, sender, address_key, created_at, expires_at, attempts, locked_until`

type rowScanner interface{ Scan(dest ...any) error }

func scanPairing(r rowScanner) (store.Pairing, error) {
	var p store.Pairing
	var created, expires, locked int64
	err := r.Scan(&p.Code, &p.Platform, &p.PlatformUserID, &p.Sender, &p.AddressKey, &created, &expires, &p.Attempts, &locked)
	p.CreatedAt, p.ExpiresAt = fromNanos(created), fromNanos(expires)
	if locked > 0 {
		p.LockedUntil = fromNanos(locked)
	}
	return p, err
}

// AskPairing records a message from an unknown person (see store.Pairings).
func (s *Store) AskPairing(ctx context.Context, ask store.PairingAsk) (p store.Pairing, issued bool, err error) {
	if ask.Platform == "" || ask.PlatformUserID == "" || ask.Code == "" {
		return p, false, fmt.Errorf("ask pairing: platform, user id and code are required: %w", store.ErrInvalid)
	}
	if err := store.CheckNames("platform", ask.Platform, "user id", ask.PlatformUserID, "sender", ask.Sender,
		"address key", ask.AddressKey, "code", ask.Code); err != nil {
		return p, false, fmt.Errorf("ask pairing: %w", err)
	}
	now := ask.Now.UnixNano()
	err = s.tx(ctx, func(tx *wtx) error {
		p, err = scanPairing(tx.QueryRow(`SELECT `+pairingCols+` FROM pairings WHERE platform = ? AND platform_user_id = ?`,
			ask.Platform, ask.PlatformUserID))
		found := err == nil
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		switch {
		case found && p.LockedUntil.UnixNano() > now:
			// Counted still, so only the message that locked them has
			// Attempts == MaxAttempts+1.
			p.Attempts++
			_, err := tx.Exec(`UPDATE pairings SET attempts = attempts + 1 WHERE platform = ? AND platform_user_id = ?`,
				ask.Platform, ask.PlatformUserID)
			return err
		case found && p.ExpiresAt.UnixNano() > now:
			p.Attempts++
			locked := int64(0)
			if p.Attempts > ask.MaxAttempts {
				p.LockedUntil = ask.Now.Add(ask.Lock)
				locked = p.LockedUntil.UnixNano()
			}
			_, err := tx.Exec(`UPDATE pairings SET attempts = ?, locked_until = ? WHERE platform = ? AND platform_user_id = ?`,
				p.Attempts, locked, ask.Platform, ask.PlatformUserID)
			return err
		case found && ask.Renew > 0 && p.CreatedAt.Add(ask.Renew).UnixNano() > now:
			// Their code ran out or was replaced: no new one until Renew
			// has passed, so the same few accounts cannot take the
			// waiting places again and again.
			p.Attempts, p.LockedUntil = 1, p.CreatedAt.Add(ask.Renew)
			_, err := tx.Exec(`UPDATE pairings SET attempts = 1, locked_until = ? WHERE platform = ? AND platform_user_id = ?`,
				p.LockedUntil.UnixNano(), ask.Platform, ask.PlatformUserID)
			return err
		}
		var pending int
		if err := tx.QueryRow(`SELECT COUNT(*) FROM pairings WHERE platform = ? AND expires_at > ? AND locked_until <= ?
			AND platform_user_id != ?`, ask.Platform, now, now, ask.PlatformUserID).Scan(&pending); err != nil {
			return err
		}
		if ask.MaxPending > 0 && pending >= ask.MaxPending {
			// The oldest waiting codes make room: a stranger who came
			// first does not keep every later one out.
			if _, err := tx.Exec(`UPDATE pairings SET expires_at = ? WHERE rowid IN (SELECT rowid FROM pairings
				WHERE platform = ? AND expires_at > ? AND locked_until <= ? AND platform_user_id != ?
				ORDER BY created_at LIMIT ?)`, now, ask.Platform, now, now, ask.PlatformUserID, pending-ask.MaxPending+1); err != nil {
				return err
			}
		}
		p = store.Pairing{Code: ask.Code, Platform: ask.Platform, PlatformUserID: ask.PlatformUserID, Sender: ask.Sender,
			AddressKey: ask.AddressKey, CreatedAt: fromNanos(now), ExpiresAt: fromNanos(ask.Now.Add(ask.TTL).UnixNano()), Attempts: 1}
		issued = true
		_, err := tx.Exec(`INSERT INTO pairings (`+pairingCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, 1, 0)
			ON CONFLICT (platform, platform_user_id) DO UPDATE SET code = excluded.code, sender = excluded.sender,
			address_key = excluded.address_key, created_at = excluded.created_at, expires_at = excluded.expires_at,
			attempts = 1, locked_until = 0`,
			p.Code, p.Platform, p.PlatformUserID, p.Sender, p.AddressKey, now, p.ExpiresAt.UnixNano())
		if isUnique(err) {
			return fmt.Errorf("pairing code taken: %w", store.ErrConflict)
		}
		return err
	})
	if err != nil {
		return store.Pairing{}, false, fmt.Errorf("ask pairing for %s:%s: %w", ask.Platform, ask.PlatformUserID, err)
	}
	return p, issued, nil
}

// PendingPairings lists unexpired codes and locked-out people.
func (s *Store) PendingPairings(ctx context.Context, now time.Time) ([]store.Pairing, error) {
	n := now.UnixNano()
	rows, err := s.read(ctx, `SELECT `+pairingCols+` FROM pairings WHERE expires_at > ? OR locked_until > ? ORDER BY created_at`, n, n)
	if err != nil {
		return nil, fmt.Errorf("list pairings: %w", err)
	}
	defer rows.Close()
	var out []store.Pairing
	for rows.Next() {
		p, err := scanPairing(rows)
		if err != nil {
			return nil, fmt.Errorf("list pairings: %w", err)
		}
		out = append(out, p)
	}
	return out, rows.Err()
}

// ApprovePairing links the code's identity to userID.
func (s *Store) ApprovePairing(ctx context.Context, code, userID string, now time.Time) (p store.Pairing, err error) {
	if err := store.CheckNames("user", userID); err != nil {
		return store.Pairing{}, fmt.Errorf("approve pairing: %w", err)
	}
	code = store.PairingCode(code)
	err = s.tx(ctx, func(tx *wtx) error {
		p, err = scanPairing(tx.QueryRow(`SELECT `+pairingCols+` FROM pairings WHERE code = ? AND expires_at > ? AND locked_until <= ?`,
			code, now.UnixNano(), now.UnixNano()))
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("no pending pairing with code %s: %w", code, store.ErrNotFound)
		}
		if err != nil {
			return err
		}
		if _, err := tx.Exec(`INSERT INTO identities (platform, platform_user_id, user_id, display_name, created_at)
			VALUES (?, ?, ?, ?, ?) ON CONFLICT (platform, platform_user_id)
			DO UPDATE SET user_id = excluded.user_id, display_name = excluded.display_name`,
			p.Platform, p.PlatformUserID, userID, p.Sender, now.UnixNano()); err != nil {
			if isForeignKey(err) {
				return fmt.Errorf("user %s: %w", userID, store.ErrNotFound)
			}
			return err
		}
		_, err := tx.Exec(`DELETE FROM pairings WHERE code = ?`, code)
		return err
	})
	if err != nil {
		return store.Pairing{}, fmt.Errorf("approve pairing: %w", err)
	}
	return p, nil
}

// DenyPairing removes the request and locks the person out.
func (s *Store) DenyPairing(ctx context.Context, code string, lockUntil time.Time) (p store.Pairing, err error) {
	code = store.PairingCode(code)
	err = s.tx(ctx, func(tx *wtx) error {
		p, err = scanPairing(tx.QueryRow(`SELECT `+pairingCols+` FROM pairings WHERE code = ?`, code))
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("no pairing with code %s: %w", code, store.ErrNotFound)
		}
		if err != nil {
			return err
		}
		p.LockedUntil, p.ExpiresAt = lockUntil, fromNanos(0)
		_, err := tx.Exec(`UPDATE pairings SET expires_at = 0, locked_until = ? WHERE code = ?`, lockUntil.UnixNano(), code)
		return err
	})
	if err != nil {
		return store.Pairing{}, fmt.Errorf("deny pairing: %w", err)
	}
	return p, nil
}
