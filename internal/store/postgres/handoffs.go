package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/baton-agent/baton/internal/store"
)

const handoffCols = `id, session_id, state, from_platform, platform, destination, error, claimed_by,
	lease_until, attempts, requested_at, claimed_at, finished_at`

func scanHandoff(row pgx.Row) (store.Handoff, error) {
	var h store.Handoff
	var lease, req, claimed, fin int64
	var errText []byte
	err := row.Scan(&h.ID, &h.SessionID, &h.State, &h.FromPlatform, &h.Platform, &h.Destination, &errText,
		&h.ClaimedBy, &lease, &h.Attempts, &req, &claimed, &fin)
	if err != nil {
		return store.Handoff{}, err
	}
	h.Error = string(errText)
	h.LeaseUntil, h.RequestedAt, h.ClaimedAt, h.FinishedAt = fromMicros(lease), fromMicros(req), fromMicros(claimed), fromMicros(fin)
	return h, nil
}

// RequestHandoff starts a new handoff for the session.
func (s *Store) RequestHandoff(ctx context.Context, sessionID, fromPlatform, toPlatform string) (store.Handoff, error) {
	return s.RequestHandoffTo(ctx, sessionID, fromPlatform, toPlatform, "")
}

// RequestHandoffTo starts a handoff whose destination is known already.
// The partial unique index on live handoffs refuses a second one, from
// any process.
func (s *Store) RequestHandoffTo(ctx context.Context, sessionID, fromPlatform, toPlatform, destination string) (store.Handoff, error) {
	if toPlatform == "" {
		return store.Handoff{}, fmt.Errorf("request handoff of %s: no destination platform: %w", sessionID, store.ErrInvalid)
	}
	if err := store.CheckNames("session", sessionID, "platform", fromPlatform, "platform", toPlatform, "destination", destination); err != nil {
		return store.Handoff{}, fmt.Errorf("request handoff: %w", err)
	}
	h, err := scanHandoff(s.pool.QueryRow(ctx, `INSERT INTO handoffs (session_id, state, from_platform, platform, destination, requested_at)
		SELECT id, 'pending', $1, $2, $3, $4 FROM sessions WHERE id = $5 RETURNING `+handoffCols,
		fromPlatform, toPlatform, destination, nowMicros(), sessionID))
	switch {
	case errors.Is(err, pgx.ErrNoRows):
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
	if !isText(sessionID) {
		return store.Handoff{SessionID: sessionID, State: store.HandoffNone}, nil
	}
	h, err := scanHandoff(s.pool.QueryRow(ctx, `SELECT `+handoffCols+` FROM handoffs
		WHERE session_id = $1 ORDER BY id DESC LIMIT 1`, sessionID))
	if errors.Is(err, pgx.ErrNoRows) || errors.Is(notFound(err), store.ErrNotFound) {
		return store.Handoff{SessionID: sessionID, State: store.HandoffNone}, nil
	}
	if err != nil {
		return store.Handoff{}, fmt.Errorf("handoff state of %s: %w", sessionID, err)
	}
	return h, nil
}

// GetHandoff loads one handoff by id.
func (s *Store) GetHandoff(ctx context.Context, id int64) (store.Handoff, error) {
	h, err := scanHandoff(s.pool.QueryRow(ctx, `SELECT `+handoffCols+` FROM handoffs WHERE id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return store.Handoff{}, fmt.Errorf("handoff %d: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return store.Handoff{}, fmt.Errorf("load handoff %d: %w", id, err)
	}
	return h, nil
}

// PendingHandoffs lists pending handoffs, oldest request first.
func (s *Store) PendingHandoffs(ctx context.Context, platforms ...string) ([]store.Handoff, error) {
	if len(platforms) > 0 {
		// A platform that is not text names none: the others still count.
		var named []string
		for _, p := range platforms {
			if isText(p) {
				named = append(named, p)
			}
		}
		if len(named) == 0 {
			return nil, nil
		}
		platforms = named
	}
	rows, err := s.pool.Query(ctx, `SELECT `+handoffCols+` FROM handoffs WHERE finished_at = 0 AND state = 'pending'
		AND (COALESCE(cardinality($1::text[]), 0) = 0 OR platform = ANY($1)) ORDER BY requested_at, id`, platforms)
	if err != nil {
		return nil, fmt.Errorf("list pending handoffs: %w", notText(err))
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.Handoff, error) { return scanHandoff(r) })
	if err != nil {
		return nil, fmt.Errorf("list pending handoffs: %w", err)
	}
	return out, nil
}

// ClaimHandoff moves a pending handoff to running for claimer. The
// UPDATE is a compare-and-swap on the state: of processes claiming one
// handoff at once, Postgres lets one through and re-reads the row for the
// others, which then find it running and claim nothing.
func (s *Store) ClaimHandoff(ctx context.Context, id int64, claimer string, lease time.Duration) (store.Handoff, bool, error) {
	if claimer == "" {
		return store.Handoff{}, false, fmt.Errorf("claim handoff %d: empty claimer: %w", id, store.ErrInvalid)
	}
	if err := store.CheckNames("claimer", claimer); err != nil {
		return store.Handoff{}, false, fmt.Errorf("claim handoff %d: %w", id, err)
	}
	t := nowMicros()
	h, err := scanHandoff(s.pool.QueryRow(ctx, `UPDATE handoffs
		SET state = 'running', claimed_by = $1, lease_until = $2, claimed_at = $3, attempts = attempts + 1, error = ''::bytea
		WHERE id = $4 AND state = 'pending' RETURNING `+handoffCols, claimer, t+lease.Microseconds(), t, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return store.Handoff{}, false, nil
	}
	if err != nil {
		return store.Handoff{}, false, fmt.Errorf("claim handoff %d: %w", id, notText(err))
	}
	return h, true, nil
}

// RenewHandoff extends claimer's lease on a running handoff.
func (s *Store) RenewHandoff(ctx context.Context, id int64, claimer string, lease time.Duration) (bool, error) {
	return s.ifClaimed(ctx, "renew", id, claimer, `lease_until = $3`, nowMicros()+lease.Microseconds())
}

// SetHandoffDestination records where the session is moving.
func (s *Store) SetHandoffDestination(ctx context.Context, id int64, claimer, destination string) (bool, error) {
	if err := store.CheckNames("destination", destination); err != nil {
		return false, fmt.Errorf("set destination of handoff %d: %w", id, err)
	}
	return s.ifClaimed(ctx, "set destination of", id, claimer, `destination = $3`, destination)
}

// CompleteHandoff finishes a running handoff successfully and, in the
// same transaction, moves the session's holder to its destination.
func (s *Store) CompleteHandoff(ctx context.Context, id int64, claimer string) (bool, error) {
	if !isText(claimer) {
		return false, nil
	}
	var ok bool
	err := s.tx(ctx, func(tx pgx.Tx) error {
		var session, dest string
		var fin int64
		err := tx.QueryRow(ctx, `UPDATE handoffs SET state = 'completed', error = ''::bytea, lease_until = 0, finished_at = $3
			WHERE id = $1 AND state = 'running' AND claimed_by = $2 RETURNING session_id, destination, finished_at`,
			id, claimer, nowMicros()).Scan(&session, &dest, &fin)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		ok = true
		if dest == "" {
			return nil
		}
		_, err = tx.Exec(ctx, `UPDATE sessions SET holder = $1, held_since = $2 WHERE id = $3`, dest, fin, session)
		return err
	})
	if err != nil {
		return false, fmt.Errorf("complete handoff %d: %w", id, notText(err))
	}
	return ok, nil
}

// FailHandoff finishes a running handoff with a reason.
func (s *Store) FailHandoff(ctx context.Context, id int64, claimer, reason string) (bool, error) {
	return s.ifClaimed(ctx, "fail", id, claimer, `state = 'failed', error = $3, lease_until = 0, finished_at = $4`,
		[]byte(store.TruncateReason(reason)), nowMicros())
}

// ifClaimed applies set (whose parameters start at $3) to a handoff only
// while claimer holds it running.
func (s *Store) ifClaimed(ctx context.Context, verb string, id int64, claimer, set string, args ...any) (bool, error) {
	if !isText(claimer) {
		return false, nil // no one holds it under that name
	}
	tag, err := s.pool.Exec(ctx, `UPDATE handoffs SET `+set+` WHERE id = $1 AND state = 'running' AND claimed_by = $2`,
		append([]any{id, claimer}, args...)...)
	if err != nil {
		return false, fmt.Errorf("%s handoff %d: %w", verb, id, notText(err))
	}
	return tag.RowsAffected() == 1, nil
}

// ReapHandoffs takes back running handoffs whose lease ended before at.
func (s *Store) ReapHandoffs(ctx context.Context, at time.Time) (requeued int, failed []int64, err error) {
	cut := at.UnixMicro()
	err = s.tx(ctx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `UPDATE handoffs SET state = 'failed', lease_until = 0, finished_at = $1,
			error = convert_to('the gateway working on it stopped answering (lease expired after ' || attempts || ' attempts; last claimed by ' || claimed_by || ')', 'UTF8')
			WHERE finished_at = 0 AND state = 'running' AND lease_until < $1 AND attempts >= `+strconv.Itoa(store.MaxHandoffAttempts)+`
			RETURNING id`, cut)
		if err != nil {
			return err
		}
		if failed, err = pgx.CollectRows(rows, pgx.RowTo[int64]); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `UPDATE handoffs SET state = 'pending', claimed_by = '', lease_until = 0
			WHERE finished_at = 0 AND state = 'running' AND lease_until < $1`, cut)
		if err != nil {
			return err
		}
		requeued = int(tag.RowsAffected())
		return nil
	})
	if err != nil {
		return 0, nil, fmt.Errorf("reap handoffs: %w", err)
	}
	return requeued, failed, nil
}
