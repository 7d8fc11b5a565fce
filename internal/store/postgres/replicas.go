package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/baton-agent/baton/internal/store"
)

// claimUntil is the claim's end as stored: 0 without a claimer.
func claimUntil(by string, until time.Time) int64 {
	if by == "" {
		return 0
	}
	return micros(until)
}

// ClaimInbound claims pending events whose claim is none or lapsed. SKIP
// LOCKED lets replicas claim side by side without waiting on each other's
// rows; the claim itself is what keeps them apart after commit.
func (s *Store) ClaimInbound(ctx context.Context, by string, ttl time.Duration, limit int, platforms ...string) ([]store.Inbound, error) {
	if err := checkHolder(by); err != nil {
		return nil, fmt.Errorf("claim inbound: %w", err)
	}
	if limit <= 0 {
		limit = store.DefaultQueueLimit
	}
	t := nowMicros()
	out, err := collectInbound(s.pool.Query(ctx, `UPDATE inbound SET claimed_by = $1, claimed_until = $2 WHERE id IN (
		SELECT id FROM inbound WHERE done_at = 0 AND claimed_until < $3 AND (coalesce(cardinality($5::text[]), 0) = 0 OR platform = ANY($5))
		ORDER BY id LIMIT $4 FOR UPDATE SKIP LOCKED)
		RETURNING `+inboundCols, by, t+ttl.Microseconds(), t, limit, platforms))
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
	t := nowMicros()
	tag, err := s.pool.Exec(ctx, `UPDATE `+table+` SET claimed_by = $1, claimed_until = $2
		WHERE id = $3 AND `+done+` = 0 AND (claimed_by = $1 OR claimed_until < $4)`, by, t+ttl.Microseconds(), id, t)
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 1 {
		return nil
	}
	var exists bool
	if err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM `+table+` WHERE id = $1)`, id).Scan(&exists); err != nil {
		return err
	}
	if !exists {
		return store.ErrNotFound
	}
	return store.ErrClaimed
}

// ReleaseDelivery gives up by's claim on a delivery.
func (s *Store) ReleaseDelivery(ctx context.Context, id int64, by string) error {
	if !isText(by) {
		return nil
	}
	if _, err := s.pool.Exec(ctx, `UPDATE deliveries SET claimed_by = '', claimed_until = 0 WHERE id = $1 AND claimed_by = $2`,
		id, by); err != nil {
		return fmt.Errorf("release delivery %d: %w", id, err)
	}
	return nil
}

// TakeLease takes, renews or refuses the lease name. The upsert's WHERE
// is the compare-and-swap: a row locked by a concurrent taker is waited
// for, then judged as it stands.
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
	t := nowMicros()
	var since, until int64
	err := s.pool.QueryRow(ctx, `INSERT INTO leases (name, holder, since, until) VALUES ($1, $2, $3, $4)
		ON CONFLICT (name) DO UPDATE SET
			since = CASE WHEN leases.holder = excluded.holder AND leases.until >= $3 THEN leases.since ELSE excluded.since END,
			holder = excluded.holder, until = excluded.until
		WHERE leases.holder = excluded.holder OR leases.until < $3
		RETURNING since, until`, name, holder, t, t+ttl.Microseconds()).Scan(&since, &until)
	if errors.Is(err, pgx.ErrNoRows) {
		return store.Lease{}, fmt.Errorf("take lease %s: %w", name, store.ErrClaimed)
	}
	if err != nil {
		return store.Lease{}, fmt.Errorf("take lease %s: %w", name, err)
	}
	return store.Lease{Name: name, Holder: holder, Since: fromMicros(since), Until: fromMicros(until)}, nil
}

// ReleaseLease ends holder's lease on name.
func (s *Store) ReleaseLease(ctx context.Context, name, holder string) error {
	if !isText(name, holder) {
		return nil
	}
	if _, err := s.pool.Exec(ctx, `DELETE FROM leases WHERE name = $1 AND holder = $2`, name, holder); err != nil {
		return fmt.Errorf("release lease %s: %w", name, err)
	}
	return nil
}

// Leases lists the live leases by name.
func (s *Store) Leases(ctx context.Context) ([]store.Lease, error) {
	rows, err := s.pool.Query(ctx, `SELECT name, holder, since, until FROM leases WHERE until >= $1 ORDER BY name`, nowMicros())
	if err != nil {
		return nil, fmt.Errorf("list leases: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.Lease, error) {
		var l store.Lease
		var since, until int64
		err := r.Scan(&l.Name, &l.Holder, &since, &until)
		l.Since, l.Until = fromMicros(since), fromMicros(until)
		return l, err
	})
	if err != nil {
		return nil, fmt.Errorf("list leases: %w", err)
	}
	return out, nil
}

// Heartbeat records r as seen and renews what it holds, in one
// transaction.
func (s *Store) Heartbeat(ctx context.Context, r store.Replica, ttl time.Duration) ([]string, error) {
	if err := checkHolder(r.ID); err != nil {
		return nil, fmt.Errorf("heartbeat: %w", err)
	}
	if err := store.CheckNames("host", r.Host); err != nil {
		return nil, fmt.Errorf("heartbeat of %s: %w", r.ID, err)
	}
	t := nowMicros()
	until := t + ttl.Microseconds()
	started := micros(r.Started)
	if started == 0 {
		started = t
	}
	var held []string
	err := s.tx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO replicas (id, host, pid, started_at, seen_at) VALUES ($1, $2, $3, $4, $5)
			ON CONFLICT (id) DO UPDATE SET host = excluded.host, pid = excluded.pid, seen_at = excluded.seen_at`,
			r.ID, r.Host, r.PID, started, t); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM replicas WHERE seen_at < $1`, t-store.ReplicaForget.Microseconds()); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE inbound SET claimed_until = $1 WHERE claimed_by = $2 AND done_at = 0`, until, r.ID); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE deliveries SET claimed_until = $1 WHERE claimed_by = $2 AND sent_at = 0`, until, r.ID); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `UPDATE leases SET until = $1 WHERE holder = $2 RETURNING name`, until, r.ID)
		if err != nil {
			return err
		}
		held, err = pgx.CollectRows(rows, pgx.RowTo[string])
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("heartbeat of %s: %w", r.ID, err)
	}
	slices.Sort(held)
	return held, nil
}

// ReplicaList lists the replicas that beat lately, first started first.
func (s *Store) ReplicaList(ctx context.Context) ([]store.Replica, error) {
	rows, err := s.pool.Query(ctx, `SELECT id, host, pid, started_at, seen_at FROM replicas WHERE seen_at >= $1
		ORDER BY started_at, id`, nowMicros()-store.ReplicaForget.Microseconds())
	if err != nil {
		return nil, fmt.Errorf("list replicas: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.Replica, error) {
		var rep store.Replica
		var started, seen int64
		err := r.Scan(&rep.ID, &rep.Host, &rep.PID, &started, &seen)
		rep.Started, rep.Seen = fromMicros(started), fromMicros(seen)
		return rep, err
	})
	if err != nil {
		return nil, fmt.Errorf("list replicas: %w", err)
	}
	return out, nil
}

// LeaveReplica releases everything id holds and forgets it.
func (s *Store) LeaveReplica(ctx context.Context, id string) error {
	if !isText(id) || id == "" {
		return nil
	}
	err := s.tx(ctx, func(tx pgx.Tx) error {
		for _, q := range []string{
			`UPDATE inbound SET claimed_by = '', claimed_until = 0 WHERE claimed_by = $1 AND done_at = 0`,
			`UPDATE deliveries SET claimed_by = '', claimed_until = 0 WHERE claimed_by = $1 AND sent_at = 0`,
			`DELETE FROM leases WHERE holder = $1`,
			`DELETE FROM replicas WHERE id = $1`,
		} {
			if _, err := tx.Exec(ctx, q, id); err != nil {
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
