package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/baton-agent/baton/internal/store"
)

const inboundCols = `id, platform, platform_msg_id, address_key, sender_id, sender, text, received_at, done_at, attachments, claimed_by, claimed_until`

func scanInbound(row pgx.Row) (store.Inbound, error) {
	var in store.Inbound
	var received, done, until int64
	var text []byte
	var files string
	if err := row.Scan(&in.ID, &in.Platform, &in.PlatformMsgID, &in.AddressKey, &in.SenderID, &in.Sender, &text,
		&received, &done, &files, &in.ClaimedBy, &until); err != nil {
		return store.Inbound{}, err
	}
	if files != "" {
		if err := json.Unmarshal([]byte(files), &in.Attachments); err != nil {
			return store.Inbound{}, fmt.Errorf("inbound %d: attachments: %w", in.ID, err)
		}
	}
	in.Text = string(text)
	in.ReceivedAt, in.DoneAt, in.ClaimedUntil = fromMicros(received), fromMicros(done), fromMicros(until)
	return in, nil
}

func collectInbound(rows pgx.Rows, err error) ([]store.Inbound, error) {
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.Inbound, error) { return scanInbound(r) })
}

// AddInbound stores an inbound event, or returns the one stored before
// under the same platform message id.
func (s *Store) AddInbound(ctx context.Context, in store.Inbound) (store.Inbound, bool, error) {
	if in.Platform == "" || in.AddressKey == "" {
		return store.Inbound{}, false, fmt.Errorf("add inbound %s/%s: platform and address key are required: %w",
			in.Platform, in.PlatformMsgID, store.ErrInvalid)
	}
	if err := in.Check(); err != nil {
		return store.Inbound{}, false, fmt.Errorf("add inbound: %w", err)
	}
	received := micros(in.ReceivedAt)
	if received == 0 {
		received = nowMicros()
	}
	files, err := attachmentsJSON(in.Attachments)
	if err != nil {
		return store.Inbound{}, false, fmt.Errorf("add inbound %s/%s: %w", in.Platform, in.PlatformMsgID, err)
	}
	var (
		got   store.Inbound
		isNew bool
	)
	err = s.tx(ctx, func(tx pgx.Tx) error {
		for i, a := range in.Attachments {
			if err := checkKept(ctx, tx, i, a); err != nil {
				return err
			}
		}
		var err error
		got, err = scanInbound(tx.QueryRow(ctx, `INSERT INTO inbound (platform, platform_msg_id, address_key, sender_id, sender,
			text, received_at, attachments, claimed_by, claimed_until) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
			ON CONFLICT DO NOTHING RETURNING `+inboundCols,
			in.Platform, in.PlatformMsgID, in.AddressKey, in.SenderID, in.Sender, []byte(in.Text), received, files,
			in.ClaimedBy, claimUntil(in.ClaimedBy, in.ClaimedUntil)))
		if err == nil {
			isNew = true
			for _, a := range got.Attachments {
				if _, err := tx.Exec(ctx, `INSERT INTO inbound_files (inbound_id, sha256) VALUES ($1, $2) ON CONFLICT DO NOTHING`,
					got.ID, a.SHA256); err != nil {
					return err
				}
			}
			return nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		// A redelivery: the earlier row was committed (ON CONFLICT waits
		// for a concurrent insert of the same event to end).
		got, err = scanInbound(tx.QueryRow(ctx, `SELECT `+inboundCols+` FROM inbound
			WHERE platform = $1 AND platform_msg_id = $2 AND platform_msg_id <> ''`, in.Platform, in.PlatformMsgID))
		if err != nil {
			return fmt.Errorf("read earlier delivery: %w", err)
		}
		return nil
	})
	if err != nil {
		return store.Inbound{}, false, fmt.Errorf("add inbound %s/%s: %w", in.Platform, in.PlatformMsgID, notText(err))
	}
	return got, isNew, nil
}

// PendingInbound lists events not yet done after id after, first stored
// first.
func (s *Store) PendingInbound(ctx context.Context, after int64, limit int) ([]store.Inbound, error) {
	if limit <= 0 {
		limit = store.DefaultQueueLimit
	}
	out, err := collectInbound(s.pool.Query(ctx, `SELECT `+inboundCols+` FROM inbound WHERE done_at = 0 AND id > $1
		ORDER BY id LIMIT $2`, after, limit))
	if err != nil {
		return nil, fmt.Errorf("list pending inbound: %w", err)
	}
	return out, nil
}

const markInboundDoneSQL = `UPDATE inbound SET done_at = CASE WHEN done_at = 0 THEN $1 ELSE done_at END WHERE id = $2`

// MarkInboundDone records that an event was handled; the first time stays.
func (s *Store) MarkInboundDone(ctx context.Context, id int64) error {
	tag, err := s.pool.Exec(ctx, markInboundDoneSQL, nowMicros(), id)
	return affected(tag, err, fmt.Sprintf("mark inbound %d done", id))
}

// ParkInbound marks an event done and keeps it parked at addressKey.
func (s *Store) ParkInbound(ctx context.Context, id int64, sessionID, addressKey string) error {
	if err := store.CheckNames("session", sessionID, "address key", addressKey); err != nil {
		return fmt.Errorf("park inbound %d: %w", id, err)
	}
	t := nowMicros()
	err := s.tx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, markInboundDoneSQL, t, id); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO parked (inbound_id, session_id, address_key, parked_at) VALUES ($1, $2, $3, $4)
			ON CONFLICT (inbound_id) DO NOTHING`, id, sessionID, addressKey, t)
		return err
	})
	if err != nil {
		return fmt.Errorf("park inbound %d: %w", id, notText(err))
	}
	return nil
}

// Parked lists the events parked at addressKey, first stored first.
func (s *Store) Parked(ctx context.Context, addressKey string) ([]store.Inbound, error) {
	if !isText(addressKey) {
		return nil, nil
	}
	out, err := collectInbound(s.pool.Query(ctx, `SELECT `+prefixed("i.", inboundCols)+` FROM parked p
		JOIN inbound i ON i.id = p.inbound_id WHERE p.address_key = $1 ORDER BY i.id`, addressKey))
	if err != nil {
		return nil, fmt.Errorf("list parked at %s: %w", addressKey, notText(err))
	}
	return out, nil
}

// Unpark forgets that an event is parked.
func (s *Store) Unpark(ctx context.Context, id int64) error {
	if _, err := s.pool.Exec(ctx, `DELETE FROM parked WHERE inbound_id = $1`, id); err != nil {
		return fmt.Errorf("unpark inbound %d: %w", id, err)
	}
	return nil
}

const deliveryCols = `id, key, address_key, text, created_at, sent_at, attempts, last_error, platform_msg_id, abandoned, kind, data, attachments, claimed_by, claimed_until`

func scanDelivery(row pgx.Row) (store.Delivery, error) {
	var d store.Delivery
	var created, sent, until int64
	var text, lastError []byte
	var data, files string
	if err := row.Scan(&d.ID, &d.Key, &d.AddressKey, &text, &created, &sent, &d.Attempts, &lastError, &d.PlatformMsgID,
		&d.Abandoned, &d.Kind, &data, &files, &d.ClaimedBy, &until); err != nil {
		return store.Delivery{}, err
	}
	if files != "" {
		if err := json.Unmarshal([]byte(files), &d.Attachments); err != nil {
			return store.Delivery{}, fmt.Errorf("delivery %d: attachments: %w", d.ID, err)
		}
	}
	d.Text, d.LastError = string(text), string(lastError)
	d.CreatedAt, d.SentAt, d.ClaimedUntil = fromMicros(created), fromMicros(sent), fromMicros(until)
	if data != "" {
		if err := json.Unmarshal([]byte(data), &d.Data); err != nil {
			return store.Delivery{}, fmt.Errorf("delivery %d: read its %s data: %w", d.ID, d.Kind, err)
		}
	}
	return d, nil
}

// deliveryData is d's data as stored: JSON, or "" when it has none.
func deliveryData(d store.Delivery) (string, error) {
	if d.Data.Tool == "" && d.Data.Subject == "" && len(d.Data.Choices) == 0 && d.Data.Expires.IsZero() && d.Data.Place == "" {
		return "", nil
	}
	b, err := json.Marshal(d.Data)
	if err != nil {
		return "", fmt.Errorf("delivery %q: write its %s data: %w", d.Key, d.Kind, err)
	}
	return string(b), nil
}

const deliveryByKeySQL = `SELECT ` + deliveryCols + ` FROM deliveries WHERE key = $1 AND key <> ''`

// EnqueueDeliveries stores deliveries in one transaction, returning the
// stored row in place of any whose key was taken.
func (s *Store) EnqueueDeliveries(ctx context.Context, ds ...store.Delivery) ([]store.Delivery, error) {
	a, err := s.enqueue(ctx, 0, ds)
	return a.Deliveries, err
}

// AnswerInbound implements store.Outbox.
func (s *Store) AnswerInbound(ctx context.Context, id int64, ds ...store.Delivery) (store.Answer, error) {
	return s.enqueue(ctx, id, ds)
}

func (s *Store) enqueue(ctx context.Context, inboundID int64, ds []store.Delivery) (store.Answer, error) {
	data, files := make([]string, len(ds)), make([]string, len(ds))
	for i, d := range ds {
		if d.AddressKey == "" {
			return store.Answer{}, fmt.Errorf("enqueue delivery %d (%q): no address key: %w", i, d.Key, store.ErrInvalid)
		}
		if err := d.Check(); err != nil {
			return store.Answer{}, fmt.Errorf("enqueue delivery %d: %w", i, err)
		}
		var err error
		if data[i], err = deliveryData(d); err != nil {
			return store.Answer{}, fmt.Errorf("enqueue delivery %d: %w", i, err)
		}
		if files[i], err = attachmentsJSON(d.Attachments); err != nil {
			return store.Answer{}, fmt.Errorf("enqueue delivery %d: %w", i, err)
		}
	}
	if len(ds) == 0 && inboundID == 0 {
		return store.Answer{}, nil
	}
	a := store.Answer{Deliveries: make([]store.Delivery, len(ds))}
	err := s.tx(ctx, func(tx pgx.Tx) error {
		t := nowMicros()
		if inboundID != 0 {
			tag, err := tx.Exec(ctx, markInboundDoneSQL, t, inboundID)
			if err := affected(tag, err, fmt.Sprintf("mark inbound %d done", inboundID)); err != nil {
				return err
			}
		}
		for i, d := range ds {
			created := micros(d.CreatedAt)
			if created == 0 {
				created = t
			}
			for j, f := range d.Attachments {
				if err := checkKept(ctx, tx, j, f); err != nil {
					return fmt.Errorf("delivery %d (%q): %w", i, d.Key, err)
				}
			}
			got, err := scanDelivery(tx.QueryRow(ctx, `INSERT INTO deliveries (key, address_key, text, created_at, platform_msg_id,
				kind, data, attachments, claimed_by, claimed_until) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
				ON CONFLICT DO NOTHING RETURNING `+deliveryCols,
				d.Key, d.AddressKey, []byte(d.Text), created, d.PlatformMsgID, string(d.Kind), data[i], files[i],
				d.ClaimedBy, claimUntil(d.ClaimedBy, d.ClaimedUntil)))
			if err == nil {
				for _, f := range got.Attachments {
					if _, err := tx.Exec(ctx, `INSERT INTO delivery_files (delivery_id, sha256) VALUES ($1, $2) ON CONFLICT DO NOTHING`,
						got.ID, f.SHA256); err != nil {
						return fmt.Errorf("delivery %d (%q): %w", i, d.Key, err)
					}
				}
			}
			if errors.Is(err, pgx.ErrNoRows) {
				got, err = scanDelivery(tx.QueryRow(ctx, deliveryByKeySQL, d.Key))
			}
			if err != nil {
				return fmt.Errorf("delivery %d (%q): %w", i, d.Key, err)
			}
			a.Deliveries[i] = got
		}
		if inboundID == 0 || len(ds) == 0 {
			return nil
		}
		first := a.Deliveries[0].ID
		for _, d := range a.Deliveries {
			first = min(first, d.ID)
		}
		return tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM deliveries WHERE sent_at = 0 AND address_key = $1 AND id < $2)`,
			ds[0].AddressKey, first).Scan(&a.Behind)
	})
	if err != nil {
		return store.Answer{}, fmt.Errorf("enqueue deliveries: %w", notText(err))
	}
	return a, nil
}

// PendingDeliveries lists unsent deliveries, lowest id first.
func (s *Store) PendingDeliveries(ctx context.Context, addressKey string, limit int) ([]store.Delivery, error) {
	if limit <= 0 {
		limit = store.DefaultQueueLimit
	}
	if !isText(addressKey) {
		return nil, nil
	}
	rows, err := s.pool.Query(ctx, `SELECT `+deliveryCols+` FROM deliveries WHERE sent_at = 0 AND ($1 = '' OR address_key = $1)
		ORDER BY id LIMIT $2`, addressKey, limit)
	if err != nil {
		return nil, fmt.Errorf("list pending deliveries: %w", notText(err))
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.Delivery, error) { return scanDelivery(r) })
	if err != nil {
		return nil, fmt.Errorf("list pending deliveries: %w", err)
	}
	return out, nil
}

// WaitingDeliveries counts unsent deliveries per address key.
func (s *Store) WaitingDeliveries(ctx context.Context) (map[string]int, error) {
	rows, err := s.pool.Query(ctx, `SELECT address_key, count(*) FROM deliveries WHERE sent_at = 0 GROUP BY address_key`)
	if err != nil {
		return nil, fmt.Errorf("count waiting deliveries: %w", err)
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var key string
		var n int
		if err := rows.Scan(&key, &n); err != nil {
			return nil, fmt.Errorf("count waiting deliveries: %w", err)
		}
		out[key] = n
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("count waiting deliveries: %w", err)
	}
	return out, nil
}

// DeliveryByKey reads the delivery stored under key.
func (s *Store) DeliveryByKey(ctx context.Context, key string) (store.Delivery, error) {
	if !isText(key) {
		return store.Delivery{}, fmt.Errorf("delivery %q: %w", key, store.ErrNotFound)
	}
	d, err := scanDelivery(s.pool.QueryRow(ctx, deliveryByKeySQL, key))
	if errors.Is(err, pgx.ErrNoRows) {
		return store.Delivery{}, fmt.Errorf("delivery %q: %w", key, store.ErrNotFound)
	} else if err != nil {
		return store.Delivery{}, fmt.Errorf("delivery %q: %w", key, notFound(err))
	}
	return d, nil
}

// MarkDelivered records a send; an already sent delivery keeps its first
// time and message id.
func (s *Store) MarkDelivered(ctx context.Context, id int64, platformMsgID string) error {
	if err := store.CheckNames("platform message id", platformMsgID); err != nil {
		return fmt.Errorf("mark delivery %d sent: %w", id, err)
	}
	tag, err := s.pool.Exec(ctx, `UPDATE deliveries SET
		sent_at = CASE WHEN sent_at = 0 THEN $1 ELSE sent_at END,
		platform_msg_id = CASE WHEN sent_at = 0 THEN $2 ELSE platform_msg_id END
		WHERE id = $3`, nowMicros(), platformMsgID, id)
	return affected(tag, err, fmt.Sprintf("mark delivery %d sent", id))
}

// RecordDeliveryFailure counts a failed send of an unsent delivery.
func (s *Store) RecordDeliveryFailure(ctx context.Context, id int64, reason string) error {
	tag, err := s.pool.Exec(ctx, `UPDATE deliveries SET
		attempts = attempts + CASE WHEN sent_at = 0 THEN 1 ELSE 0 END,
		last_error = CASE WHEN sent_at = 0 THEN $1 ELSE last_error END
		WHERE id = $2`, []byte(store.TruncateReason(reason)), id)
	return affected(tag, err, fmt.Sprintf("record failure of delivery %d", id))
}

// AbandonDelivery gives up on an unsent delivery.
func (s *Store) AbandonDelivery(ctx context.Context, id int64, reason string) error {
	tag, err := s.pool.Exec(ctx, `UPDATE deliveries SET
		abandoned = CASE WHEN sent_at = 0 THEN true ELSE abandoned END,
		last_error = CASE WHEN sent_at = 0 THEN $1 ELSE last_error END,
		sent_at = CASE WHEN sent_at = 0 THEN $2 ELSE sent_at END
		WHERE id = $3`, []byte(store.TruncateReason(reason)), nowMicros(), id)
	return affected(tag, err, fmt.Sprintf("abandon delivery %d", id))
}

// SetHomeChannel sets or, with an empty address key, clears a platform's home.
func (s *Store) SetHomeChannel(ctx context.Context, platform, addressKey string) error {
	if platform == "" {
		return fmt.Errorf("set home channel: empty platform: %w", store.ErrInvalid)
	}
	if err := store.CheckNames("platform", platform, "address key", addressKey); err != nil {
		return fmt.Errorf("set home channel: %w", err)
	}
	var err error
	if addressKey == "" {
		_, err = s.pool.Exec(ctx, `DELETE FROM home_channels WHERE platform = $1`, platform)
	} else {
		_, err = s.pool.Exec(ctx, `INSERT INTO home_channels (platform, address_key, updated_at) VALUES ($1, $2, $3)
			ON CONFLICT (platform) DO UPDATE SET address_key = excluded.address_key, updated_at = excluded.updated_at`,
			platform, addressKey, nowMicros())
	}
	if err != nil {
		return fmt.Errorf("set home channel of %s to %q: %w", platform, addressKey, notText(err))
	}
	return nil
}

// HomeChannels maps each platform to its home address key.
func (s *Store) HomeChannels(ctx context.Context) (map[string]string, error) {
	rows, err := s.pool.Query(ctx, `SELECT platform, address_key FROM home_channels`)
	if err != nil {
		return nil, fmt.Errorf("list home channels: %w", err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var p, k string
		if err := rows.Scan(&p, &k); err != nil {
			return nil, fmt.Errorf("list home channels: %w", err)
		}
		out[p] = k
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list home channels: %w", err)
	}
	return out, nil
}

// PlatformState is the value stored under key for platform, "" if none.
func (s *Store) PlatformState(ctx context.Context, platform, key string) (string, error) {
	if !isText(platform, key) {
		return "", nil
	}
	var v []byte
	err := s.pool.QueryRow(ctx, `SELECT value FROM platform_state WHERE platform = $1 AND key = $2`, platform, key).Scan(&v)
	if errors.Is(err, pgx.ErrNoRows) || errors.Is(notFound(err), store.ErrNotFound) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read %s state %q: %w", platform, key, err)
	}
	return string(v), nil
}

// SetPlatformState stores or, with an empty value, clears a platform's
// state under key.
func (s *Store) SetPlatformState(ctx context.Context, platform, key, value string) error {
	if platform == "" || key == "" {
		return fmt.Errorf("set platform state %q of %q: empty platform or key: %w", key, platform, store.ErrInvalid)
	}
	if err := store.CheckNames("platform", platform, "key", key); err != nil {
		return fmt.Errorf("set platform state: %w", err)
	}
	var err error
	if value == "" {
		_, err = s.pool.Exec(ctx, `DELETE FROM platform_state WHERE platform = $1 AND key = $2`, platform, key)
	} else {
		_, err = s.pool.Exec(ctx, `INSERT INTO platform_state (platform, key, value, updated_at) VALUES ($1, $2, $3, $4)
			ON CONFLICT (platform, key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`,
			platform, key, []byte(value), nowMicros())
	}
	if err != nil {
		return fmt.Errorf("set %s state %q: %w", platform, key, notText(err))
	}
	return nil
}
