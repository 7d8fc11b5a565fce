package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/baton-agent/baton/internal/store"
)

const handoffCols = `id, session_id, state, from_platform, platform, destination, error, claimed_by,
	lease_until, attempts, requested_at, claimed_at, finished_at`

func scanHandoff(row interface{ Scan(...any) error }) (store.Handoff, error) {
	var h store.Handoff
	var lease, req, claimed, fin int64
	err := row.Scan(&h.ID, &h.SessionID, &h.State, &h.FromPlatform, &h.Platform, &h.Destination, &h.Error,
		&h.ClaimedBy, &lease, &h.Attempts, &req, &claimed, &fin)
	if err != nil {
		return store.Handoff{}, err
	}
	h.LeaseUntil, h.RequestedAt, h.ClaimedAt, h.FinishedAt = fromNanos(lease), fromNanos(req), fromNanos(claimed), fromNanos(fin)
	return h, nil
}

// RequestHandoff starts a new handoff for the session.
func (s *Store) RequestHandoff(ctx context.Context, sessionID, fromPlatform, toPlatform string) (store.Handoff, error) {
	return s.RequestHandoffTo(ctx, sessionID, fromPlatform, toPlatform, "")
}

// RequestHandoffTo starts a handoff whose destination is known already
// (/continue: the place asking).
func (s *Store) RequestHandoffTo(ctx context.Context, sessionID, fromPlatform, toPlatform, destination string) (store.Handoff, error) {
	if toPlatform == "" {
		return store.Handoff{}, fmt.Errorf("request handoff of %s: no destination platform: %w", sessionID, store.ErrInvalid)
	}
	if err := store.CheckNames("session", sessionID, "platform", fromPlatform, "platform", toPlatform, "destination", destination); err != nil {
		return store.Handoff{}, fmt.Errorf("request handoff: %w", err)
	}
	// One statement: the session must exist, and the partial unique index
	// refuses a second live handoff.
	// Only the id is new: the rest is what was written.
	t := now()
	h := store.Handoff{SessionID: sessionID, State: store.HandoffPending, FromPlatform: fromPlatform,
		Platform: toPlatform, Destination: destination, RequestedAt: fromNanos(t)}
	err := s.queryRow(ctx, func(r *sql.Row) error { return r.Scan(&h.ID) },
		`INSERT INTO handoffs (session_id, state, from_platform, platform, destination, requested_at)
		SELECT id, 'pending', ?, ?, ?, ? FROM sessions WHERE id = ? RETURNING id`,
		fromPlatform, toPlatform, destination, t, sessionID)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		err = fmt.Errorf("session %s: %w", sessionID, store.ErrNotFound)
	case isUnique(err):
		err = store.ErrHandoffInFlight
	}
	if err != nil {
		return store.Handoff{}, fmt.Errorf("request handoff of %s to %s: %w", sessionID, toPlatform, err)
	}
	return h, nil
}

// HandoffState is the session's newest handoff, or State none.
func (s *Store) HandoffState(ctx context.Context, sessionID string) (store.Handoff, error) {
	h, err := scanHandoff(s.readRow(ctx, `SELECT `+handoffCols+` FROM handoffs
		WHERE session_id = ? ORDER BY id DESC LIMIT 1`, sessionID))
	if errors.Is(err, sql.ErrNoRows) {
		return store.Handoff{SessionID: sessionID, State: store.HandoffNone}, nil
	}
	if err != nil {
		return store.Handoff{}, fmt.Errorf("handoff state of %s: %w", sessionID, err)
	}
	return h, nil
}

// GetHandoff loads one handoff by id.
func (s *Store) GetHandoff(ctx context.Context, id int64) (store.Handoff, error) {
	h, err := scanHandoff(s.readRow(ctx, `SELECT `+handoffCols+` FROM handoffs WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return store.Handoff{}, fmt.Errorf("handoff %d: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return store.Handoff{}, fmt.Errorf("load handoff %d: %w", id, err)
	}
	return h, nil
}

// liveHandoff is handoffs_live's condition, written into a query so that
// SQLite walks that index (the few live handoffs) instead of the table,
// which keeps every finished one. A handoff is live, pending or running,
// until it is finished: every end sets finished_at, and nothing else does.
const liveHandoff = `finished_at = 0`

// PendingHandoffs lists pending handoffs, oldest request first.
func (s *Store) PendingHandoffs(ctx context.Context, platforms ...string) ([]store.Handoff, error) {
	q := `SELECT ` + handoffCols + ` FROM handoffs WHERE ` + liveHandoff + ` AND state = 'pending'`
	args := make([]any, len(platforms))
	if len(platforms) > 0 {
		q += ` AND platform IN (?` + strings.Repeat(", ?", len(platforms)-1) + `)`
		for i, p := range platforms {
			args[i] = p
		}
	}
	q += ` ORDER BY requested_at, id`
	rows, err := s.read(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("list pending handoffs: %w", err)
	}
	defer rows.Close()
	var out []store.Handoff
	for rows.Next() {
		h, err := scanHandoff(rows)
		if err != nil {
			return nil, fmt.Errorf("list pending handoffs: %w", err)
		}
		out = append(out, h)
	}
	return out, rows.Err()
}

// ClaimHandoff moves a pending handoff to running for claimer, atomically.
func (s *Store) ClaimHandoff(ctx context.Context, id int64, claimer string, lease time.Duration) (store.Handoff, bool, error) {
	if claimer == "" {
		return store.Handoff{}, false, fmt.Errorf("claim handoff %d: empty claimer: %w", id, store.ErrInvalid)
	}
	if err := store.CheckNames("claimer", claimer); err != nil {
		return store.Handoff{}, false, fmt.Errorf("claim handoff %d: %w", id, err)
	}
	t := now()
	// What the claim wrote is known; the rest is read back.
	h := store.Handoff{ID: id, State: store.HandoffRunning, ClaimedBy: claimer, LeaseUntil: fromNanos(t + int64(lease)), ClaimedAt: fromNanos(t)}
	err := s.queryRow(ctx, func(r *sql.Row) error {
		var req, fin int64
		err := r.Scan(&h.SessionID, &h.FromPlatform, &h.Platform, &h.Destination, &h.Attempts, &req, &fin)
		h.RequestedAt, h.FinishedAt = fromNanos(req), fromNanos(fin)
		return err
	}, `UPDATE handoffs
		SET state = 'running', claimed_by = ?, lease_until = ?, claimed_at = ?, attempts = attempts + 1, error = ''
		WHERE id = ? AND state = 'pending' RETURNING session_id, from_platform, platform, destination, attempts, requested_at, finished_at`,
		claimer, t+int64(lease), t, id)
	if errors.Is(err, sql.ErrNoRows) {
		return store.Handoff{}, false, nil
	}
	if err != nil {
		return store.Handoff{}, false, fmt.Errorf("claim handoff %d: %w", id, err)
	}
	return h, true, nil
}

// RenewHandoff extends claimer's lease on a running handoff.
func (s *Store) RenewHandoff(ctx context.Context, id int64, claimer string, lease time.Duration) (bool, error) {
	return s.ifClaimed(ctx, "renew", id, claimer, `lease_until = ?`, now()+int64(lease))
}

// SetHandoffDestination records where the session is moving.
func (s *Store) SetHandoffDestination(ctx context.Context, id int64, claimer, destination string) (bool, error) {
	if err := store.CheckNames("destination", destination); err != nil {
		return false, fmt.Errorf("set destination of handoff %d: %w", id, err)
	}
	return s.ifClaimed(ctx, "set destination of", id, claimer, `destination = ?`, destination)
}

// CompleteHandoff finishes a running handoff successfully.
func (s *Store) CompleteHandoff(ctx context.Context, id int64, claimer string) (bool, error) {
	return s.ifClaimed(ctx, "complete", id, claimer, `state = 'completed', error = '', lease_until = 0, finished_at = ?`, now())
}

// FailHandoff finishes a running handoff with a reason.
func (s *Store) FailHandoff(ctx context.Context, id int64, claimer, reason string) (bool, error) {
	return s.ifClaimed(ctx, "fail", id, claimer, `state = 'failed', error = ?, lease_until = 0, finished_at = ?`,
		store.TruncateReason(reason), now())
}

// ifClaimed applies set to a handoff only while claimer holds it running.
func (s *Store) ifClaimed(ctx context.Context, verb string, id int64, claimer, set string, args ...any) (bool, error) {
	args = append(args, id, claimer)
	res, err := s.exec(ctx, `UPDATE handoffs SET `+set+` WHERE id = ? AND state = 'running' AND claimed_by = ?`, args...)
	if err != nil {
		return false, fmt.Errorf("%s handoff %d: %w", verb, id, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("%s handoff %d: %w", verb, id, err)
	}
	return n == 1, nil
}

// ReapHandoffs takes back running handoffs whose lease ended before now.
func (s *Store) ReapHandoffs(ctx context.Context, at time.Time) (requeued int, failed []int64, err error) {
	cut := at.UnixNano()
	err = s.tx(ctx, func(tx *wtx) error {
		failed = nil
		rows, err := tx.Query(`UPDATE handoffs SET state = 'failed', lease_until = 0, finished_at = ?,
			error = 'the gateway working on it stopped answering (lease expired after ' || attempts || ' attempts; last claimed by ' || claimed_by || ')'
			WHERE `+liveHandoff+` AND state = 'running' AND lease_until < ? AND attempts >= ? RETURNING id`, cut, cut, store.MaxHandoffAttempts)
		if err != nil {
			return err
		}
		for rows.Next() {
			var id int64
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return err
			}
			failed = append(failed, id)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		res, err := tx.Exec(`UPDATE handoffs SET state = 'pending', claimed_by = '', lease_until = 0
			WHERE `+liveHandoff+` AND state = 'running' AND lease_until < ?`, cut)
		if err != nil {
			return err
		}
		nr, _ := res.RowsAffected()
		requeued = int(nr)
		return nil
	})
	if err != nil {
		return 0, nil, fmt.Errorf("reap handoffs: %w", err)
	}
	return requeued, failed, nil
}
