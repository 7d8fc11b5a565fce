package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/baton-agent/baton/internal/store"
)

// The claims and leases of store.Replicas. One gateway on a SQLite file
// claims nothing; they are kept as on every store so the contract is one,
// and every write here goes through the one writer, which orders them.

// claimUntil is the claim's end as stored: 0 without a claimer.
func claimUntil(by string, until time.Time) int64 {
	if by == "" {
		return 0
	}
	return toNanos(until)
}

// ClaimInbound claims pending events whose claim is none or lapsed.
func (s *Store) ClaimInbound(ctx context.Context, by string, ttl time.Duration, limit int, platforms ...string) ([]store.Inbound, error) {
	if err := checkHolder(by); err != nil {
		return nil, fmt.Errorf("claim inbound: %w", err)
	}
	if limit <= 0 {
		limit = store.DefaultQueueLimit
	}
	var out []store.Inbound
	err := s.tx(ctx, func(tx *wtx) error {
		out = out[:0]
		t := now()
		only, args := "", []any{by, t + int64(ttl), t}
		if len(platforms) > 0 {
			only = " AND platform IN (?" + strings.Repeat(", ?", len(platforms)-1) + ")"
			for _, p := range platforms {
				args = append(args, p)
			}
		}
		rows, err := tx.Query(`UPDATE inbound SET claimed_by = ?, claimed_until = ? WHERE id IN (
			SELECT id FROM inbound WHERE done_at = 0 AND claimed_until < ?`+only+` ORDER BY id`+limitClause(limit)+`) RETURNING `+inboundCols,
			args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			in, err := scanInbound(rows)
			if err != nil {
				return err
			}
			out = append(out, in)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("claim inbound for %s: %w", by, err)
	}
	slices.SortFunc(out, func(a, b store.Inbound) int { return int(a.ID - b.ID) })
	return out, nil
}

// HoldInbound renews or takes by's claim on an inbound event.
func (s *Store) HoldInbound(ctx context.Context, id int64, by string, ttl time.Duration) error {
	if err := s.claimRow(ctx, "inbound", "done_at", id, by, ttl); err != nil {
		return fmt.Errorf("hold inbound %d: %w", id, err)
	}
	return nil
}

// ClaimDelivery claims an unsent delivery for by.
func (s *Store) ClaimDelivery(ctx context.Context, id int64, by string, ttl time.Duration) error {
	if err := s.claimRow(ctx, "deliveries", "sent_at", id, by, ttl); err != nil {
		return fmt.Errorf("claim delivery %d: %w", id, err)
	}
	return nil
}

// claimRow gives by the claim on row id of table, for ttl, while the
// row's work is not done (its column done is 0) and its claim is by's
// or has lapsed: ErrClaimed otherwise, ErrNotFound for no such row.
// table and done are the callers' constants.
func (s *Store) claimRow(ctx context.Context, table, done string, id int64, by string, ttl time.Duration) error {
	if err := checkHolder(by); err != nil {
		return err
	}
	return s.tx(ctx, func(tx *wtx) error {
		t := now()
		res, err := tx.Exec(`UPDATE `+table+` SET claimed_by = ?, claimed_until = ?
			WHERE id = ? AND `+done+` = 0 AND (claimed_by = ? OR claimed_until < ?)`, by, t+int64(ttl), id, by, t)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 1 {
			return nil
		}
		var exists bool
		if err := tx.QueryRow(`SELECT EXISTS (SELECT 1 FROM `+table+` WHERE id = ?)`, id).Scan(&exists); err != nil {
			return err
		}
		if !exists {
			return store.ErrNotFound
		}
		return store.ErrClaimed
	})
}

// ReleaseDelivery gives up by's claim on a delivery.
func (s *Store) ReleaseDelivery(ctx context.Context, id int64, by string) error {
	if _, err := s.exec(ctx, `UPDATE deliveries SET claimed_by = '', claimed_until = 0 WHERE id = ? AND claimed_by = ?`,
		id, by); err != nil {
		return fmt.Errorf("release delivery %d: %w", id, err)
	}
	return nil
}

// TakeLease takes, renews or refuses the lease name.
func (s *Store) TakeLease(ctx context.Context, name, holder string, ttl time.Duration) (store.Lease, error) {
	if name == "" {
		return store.Lease{}, fmt.Errorf("take lease: empty name: %w", store.ErrInvalid)
	}
	if err := checkHolder(holder); err != nil {
		return store.Lease{}, fmt.Errorf("take lease %s: %w", name, err)
	}
	if err := store.CheckNames("lease", name); err != nil {
		return store.Lease{}, fmt.Errorf("take lease: %w", err)
	}
	var since, until int64
	err := s.tx(ctx, func(tx *wtx) error {
		t := now()
		return tx.QueryRow(`INSERT INTO leases (name, holder, since, until) VALUES (?1, ?2, ?3, ?4)
		ON CONFLICT (name) DO UPDATE SET
			since = CASE WHEN leases.holder = excluded.holder AND leases.until >= ?3 THEN leases.since ELSE excluded.since END,
			holder = excluded.holder, until = excluded.until
		WHERE leases.holder = excluded.holder OR leases.until < ?3
		RETURNING since, until`, name, holder, t, t+int64(ttl)).Scan(&since, &until)
	})
	if errors.Is(err, sql.ErrNoRows) {
		return store.Lease{}, fmt.Errorf("take lease %s: %w", name, store.ErrClaimed)
	}
	if err != nil {
		return store.Lease{}, fmt.Errorf("take lease %s: %w", name, err)
	}
	return store.Lease{Name: name, Holder: holder, Since: fromNanos(since), Until: fromNanos(until)}, nil
}

// ReleaseLease ends holder's lease on name.
func (s *Store) ReleaseLease(ctx context.Context, name, holder string) error {
	if _, err := s.exec(ctx, `DELETE FROM leases WHERE name = ? AND holder = ?`, name, holder); err != nil {
		return fmt.Errorf("release lease %s: %w", name, err)
	}
	return nil
}

// Leases lists the live leases by name.
func (s *Store) Leases(ctx context.Context) ([]store.Lease, error) {
	rows, err := s.read(ctx, `SELECT name, holder, since, until FROM leases WHERE until >= ? ORDER BY name`, now())
	if err != nil {
		return nil, fmt.Errorf("list leases: %w", err)
	}
	defer rows.Close()
	var out []store.Lease
	for rows.Next() {
		var l store.Lease
		var since, until int64
		if err := rows.Scan(&l.Name, &l.Holder, &since, &until); err != nil {
			return nil, fmt.Errorf("list leases: %w", err)
		}
		l.Since, l.Until = fromNanos(since), fromNanos(until)
		out = append(out, l)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list leases: %w", err)
	}
	return out, nil
}

// Heartbeat records r as seen and renews what it holds, in one write.
func (s *Store) Heartbeat(ctx context.Context, r store.Replica, ttl time.Duration) ([]string, error) {
	if err := checkHolder(r.ID); err != nil {
		return nil, fmt.Errorf("heartbeat: %w", err)
	}
	if err := store.CheckNames("host", r.Host); err != nil {
		return nil, fmt.Errorf("heartbeat of %s: %w", r.ID, err)
	}
	var held []string
	err := s.tx(ctx, func(tx *wtx) error {
		held = held[:0]
		t := now()
		until := t + int64(ttl)
		started := toNanos(r.Started)
		if started == 0 {
			started = t
		}
		if _, err := tx.Exec(`INSERT INTO replicas (id, host, pid, started_at, seen_at) VALUES (?, ?, ?, ?, ?)
			ON CONFLICT (id) DO UPDATE SET host = excluded.host, pid = excluded.pid, seen_at = excluded.seen_at`,
			r.ID, r.Host, r.PID, started, t); err != nil {
			return err
		}
		if _, err := tx.Exec(`DELETE FROM replicas WHERE seen_at < ?`, t-int64(store.ReplicaForget)); err != nil {
			return err
		}
		if _, err := tx.Exec(`UPDATE inbound SET claimed_until = ? WHERE claimed_by = ? AND done_at = 0`, until, r.ID); err != nil {
			return err
		}
		if _, err := tx.Exec(`UPDATE deliveries SET claimed_until = ? WHERE claimed_by = ? AND sent_at = 0`, until, r.ID); err != nil {
			return err
		}
		rows, err := tx.Query(`UPDATE leases SET until = ? WHERE holder = ? RETURNING name`, until, r.ID)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var name string
			if err := rows.Scan(&name); err != nil {
				return err
			}
			held = append(held, name)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("heartbeat of %s: %w", r.ID, err)
	}
	slices.Sort(held)
	return held, nil
}

// ReplicaList lists the replicas that beat lately, first started first.
func (s *Store) ReplicaList(ctx context.Context) ([]store.Replica, error) {
	rows, err := s.read(ctx, `SELECT id, host, pid, started_at, seen_at FROM replicas WHERE seen_at >= ?
		ORDER BY started_at, id`, now()-int64(store.ReplicaForget))
	if err != nil {
		return nil, fmt.Errorf("list replicas: %w", err)
	}
	defer rows.Close()
	var out []store.Replica
	for rows.Next() {
		var rep store.Replica
		var started, seen int64
		if err := rows.Scan(&rep.ID, &rep.Host, &rep.PID, &started, &seen); err != nil {
			return nil, fmt.Errorf("list replicas: %w", err)
		}
		rep.Started, rep.Seen = fromNanos(started), fromNanos(seen)
		out = append(out, rep)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list replicas: %w", err)
	}
	return out, nil
}

// LeaveReplica releases everything id holds and forgets it.
func (s *Store) LeaveReplica(ctx context.Context, id string) error {
	if id == "" {
		return nil
	}
	err := s.tx(ctx, func(tx *wtx) error {
		for _, q := range []string{
			`UPDATE inbound SET claimed_by = '', claimed_until = 0 WHERE claimed_by = ? AND done_at = 0`,
			`UPDATE deliveries SET claimed_by = '', claimed_until = 0 WHERE claimed_by = ? AND sent_at = 0`,
			`DELETE FROM leases WHERE holder = ?`,
			`DELETE FROM replicas WHERE id = ?`,
		} {
			if _, err := tx.Exec(q, id); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("leave replica %s: %w", id, err)
	}
	return nil
}

// checkHolder refuses an empty or non-text claimer.
func checkHolder(by string) error {
	if by == "" {
		return fmt.Errorf("empty claimer: %w", store.ErrInvalid)
	}
	return store.CheckNames("claimer", by)
}
