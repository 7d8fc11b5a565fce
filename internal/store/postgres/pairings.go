package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/baton-agent/baton/internal/store"
)

const pairingCols = `code, platform, platform_user_id, sender, address_key, created_at, expires_at, attempts, locked_until`

func scanPairing(r pgx.Row) (store.Pairing, error) {
	var p store.Pairing
	var created, expires, locked int64
	err := r.Scan(&p.Code, &p.Platform, &p.PlatformUserID, &p.Sender, &p.AddressKey, &created, &expires, &p.Attempts, &locked)
	p.CreatedAt, p.ExpiresAt = fromMicros(created), fromMicros(expires)
	if locked > 0 {
		p.LockedUntil = fromMicros(locked)
	}
	return p, err
}

// AskPairing records a message from an unknown person (see store.Pairings).
// The person's row is locked for the decision; a platform's waiting codes
// are counted under a transaction-scoped advisory lock on the platform,
// so processes asking at once keep MaxPending.
func (s *Store) AskPairing(ctx context.Context, ask store.PairingAsk) (p store.Pairing, issued bool, err error) {
	if ask.Platform == "" || ask.PlatformUserID == "" || ask.Code == "" {
		return p, false, fmt.Errorf("ask pairing: platform, user id and code are required: %w", store.ErrInvalid)
	}
	if err := store.CheckNames("platform", ask.Platform, "user id", ask.PlatformUserID, "sender", ask.Sender,
		"address key", ask.AddressKey, "code", ask.Code); err != nil {
		return p, false, fmt.Errorf("ask pairing: %w", err)
	}
	askNow := store.Micro(ask.Now)
	now := askNow.UnixMicro()
	err = s.tx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('pairings:' || $1))`, ask.Platform); err != nil {
			return err
		}
		issued = false
		p, err = scanPairing(tx.QueryRow(ctx, `SELECT `+pairingCols+` FROM pairings WHERE platform = $1 AND platform_user_id = $2 FOR UPDATE`,
			ask.Platform, ask.PlatformUserID))
		found := err == nil
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		switch {
		case found && micros(p.LockedUntil) > now:
			p.Attempts++
			_, err := tx.Exec(ctx, `UPDATE pairings SET attempts = attempts + 1 WHERE platform = $1 AND platform_user_id = $2`,
				ask.Platform, ask.PlatformUserID)
			return err
		case found && micros(p.ExpiresAt) > now:
			p.Attempts++
			locked := int64(0)
			if p.Attempts > ask.MaxAttempts {
				p.LockedUntil = askNow.Add(ask.Lock)
				locked = micros(p.LockedUntil)
			}
			_, err := tx.Exec(ctx, `UPDATE pairings SET attempts = $1, locked_until = $2 WHERE platform = $3 AND platform_user_id = $4`,
				p.Attempts, locked, ask.Platform, ask.PlatformUserID)
			return err
		case found && ask.Renew > 0 && micros(p.CreatedAt.Add(ask.Renew)) > now:
			p.Attempts, p.LockedUntil = 1, p.CreatedAt.Add(ask.Renew)
			_, err := tx.Exec(ctx, `UPDATE pairings SET attempts = 1, locked_until = $1 WHERE platform = $2 AND platform_user_id = $3`,
				micros(p.LockedUntil), ask.Platform, ask.PlatformUserID)
			return err
		}
		var pending int
		if err := tx.QueryRow(ctx, `SELECT COUNT(*) FROM pairings WHERE platform = $1 AND expires_at > $2 AND locked_until <= $2
			AND platform_user_id <> $3`, ask.Platform, now, ask.PlatformUserID).Scan(&pending); err != nil {
			return err
		}
		if ask.MaxPending > 0 && pending >= ask.MaxPending {
			if _, err := tx.Exec(ctx, `UPDATE pairings SET expires_at = $2 WHERE (platform, platform_user_id) IN (
				SELECT platform, platform_user_id FROM pairings
				WHERE platform = $1 AND expires_at > $2 AND locked_until <= $2 AND platform_user_id <> $3
				ORDER BY created_at LIMIT $4)`, ask.Platform, now, ask.PlatformUserID, pending-ask.MaxPending+1); err != nil {
				return err
			}
		}
		p = store.Pairing{Code: ask.Code, Platform: ask.Platform, PlatformUserID: ask.PlatformUserID, Sender: ask.Sender,
			AddressKey: ask.AddressKey, CreatedAt: fromMicros(now), ExpiresAt: fromMicros(micros(askNow.Add(ask.TTL))), Attempts: 1}
		issued = true
		_, err := tx.Exec(ctx, `INSERT INTO pairings (`+pairingCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7, 1, 0)
			ON CONFLICT (platform, platform_user_id) DO UPDATE SET code = excluded.code, sender = excluded.sender,
			address_key = excluded.address_key, created_at = excluded.created_at, expires_at = excluded.expires_at,
			attempts = 1, locked_until = 0`,
			p.Code, p.Platform, p.PlatformUserID, p.Sender, p.AddressKey, now, micros(p.ExpiresAt))
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
	rows, err := s.pool.Query(ctx, `SELECT `+pairingCols+` FROM pairings WHERE expires_at > $1 OR locked_until > $1
		ORDER BY created_at`, now.UnixMicro())
	if err != nil {
		return nil, fmt.Errorf("list pairings: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.Pairing, error) { return scanPairing(r) })
	if err != nil {
		return nil, fmt.Errorf("list pairings: %w", err)
	}
	return out, nil
}

// ApprovePairing links the code's identity to userID.
func (s *Store) ApprovePairing(ctx context.Context, code, userID string, now time.Time) (p store.Pairing, err error) {
	if err := store.CheckNames("user", userID); err != nil {
		return store.Pairing{}, fmt.Errorf("approve pairing: %w", err)
	}
	code = store.PairingCode(code)
	if !isText(code) {
		return store.Pairing{}, fmt.Errorf("approve pairing: no pending pairing with code %s: %w", code, store.ErrNotFound)
	}
	err = s.tx(ctx, func(tx pgx.Tx) error {
		p, err = scanPairing(tx.QueryRow(ctx, `SELECT `+pairingCols+` FROM pairings WHERE code = $1 AND expires_at > $2
			AND locked_until <= $2 FOR UPDATE`, code, now.UnixMicro()))
		if errors.Is(err, pgx.ErrNoRows) || errors.Is(notFound(err), store.ErrNotFound) {
			return fmt.Errorf("no pending pairing with code %s: %w", code, store.ErrNotFound)
		}
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO identities (platform, platform_user_id, user_id, display_name, created_at)
			VALUES ($1, $2, $3, $4, $5) ON CONFLICT (platform, platform_user_id)
			DO UPDATE SET user_id = excluded.user_id, display_name = excluded.display_name`,
			p.Platform, p.PlatformUserID, userID, p.Sender, now.UnixMicro()); err != nil {
			if isForeignKey(err) {
				return fmt.Errorf("user %s: %w", userID, store.ErrNotFound)
			}
			return err
		}
		_, err := tx.Exec(ctx, `DELETE FROM pairings WHERE code = $1`, code)
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
	if !isText(code) {
		return store.Pairing{}, fmt.Errorf("deny pairing: no pairing with code %s: %w", code, store.ErrNotFound)
	}
	err = s.tx(ctx, func(tx pgx.Tx) error {
		p, err = scanPairing(tx.QueryRow(ctx, `SELECT `+pairingCols+` FROM pairings WHERE code = $1 FOR UPDATE`, code))
		if errors.Is(err, pgx.ErrNoRows) || errors.Is(notFound(err), store.ErrNotFound) {
			return fmt.Errorf("no pairing with code %s: %w", code, store.ErrNotFound)
		}
		if err != nil {
			return err
		}
		p.LockedUntil, p.ExpiresAt = store.Micro(lockUntil), time.Time{}
		_, err := tx.Exec(ctx, `UPDATE pairings SET expires_at = 0, locked_until = $1 WHERE code = $2`, micros(lockUntil), code)
		return err
	})
	if err != nil {
		return store.Pairing{}, fmt.Errorf("deny pairing: %w", err)
	}
	return p, nil
}
