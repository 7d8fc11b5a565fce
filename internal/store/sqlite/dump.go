package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/baton-agent/baton/internal/store"
)

var (
	_ store.Dumper  = (*Store)(nil)
	_ store.Counter = (*Store)(nil)
)

// dumpRows is how many rows a batch of Dump holds; dumpFileBytes bounds
// the bytes of a batch of files (one larger file is a batch of its own).
const (
	dumpRows      = 2000
	dumpFileBytes = 32 << 20
)

// Dump implements store.Dumper: every row, read in one snapshot, and the
// files under files/ (no process writes them while the store is moved).
func (s *Store) Dump(ctx context.Context, load func(store.Batch) error) error {
	tx, err := s.beginRead(ctx, false)
	if err != nil {
		return fmt.Errorf("dump the store: %w", err)
	}
	defer tx.Rollback()
	steps := []struct {
		what string
		fn   func(context.Context, *sql.Tx, func(store.Batch) error) error
	}{
		{"users", dumpUsers}, {"identities", dumpIdentities}, {"sessions", dumpSessions},
		{"files", s.dumpFiles}, {"messages", dumpMessages}, {"bindings", dumpBindings},
		{"handoffs", dumpHandoffs}, {"notes", dumpNotes}, {"pairings", dumpPairings},
		{"home channels", dumpHomes}, {"platform states", dumpStates}, {"inbound events", dumpInbound},
		{"deliveries", dumpDeliveries},
	}
	for _, st := range steps {
		if err := st.fn(ctx, tx.Tx, load); err != nil {
			return fmt.Errorf("dump the store's %s: %w", st.what, err)
		}
	}
	return nil
}

// dumpQuery reads q's rows with scan, handing them to put dumpRows at a
// time.
func dumpQuery[T any](ctx context.Context, tx *sql.Tx, q string, scan func(*sql.Rows) (T, error), put func([]T) error) error {
	rows, err := tx.QueryContext(ctx, q)
	if err != nil {
		return err
	}
	defer rows.Close()
	var batch []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return err
		}
		if batch = append(batch, v); len(batch) == dumpRows {
			if err := put(batch); err != nil {
				return err
			}
			batch = nil
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if len(batch) > 0 {
		return put(batch)
	}
	return nil
}

func dumpUsers(ctx context.Context, tx *sql.Tx, load func(store.Batch) error) error {
	return dumpQuery(ctx, tx, `SELECT id, name, created_at FROM users ORDER BY rowid`,
		func(r *sql.Rows) (store.User, error) {
			var u store.User
			var t int64
			err := r.Scan(&u.ID, &u.Name, &t)
			u.CreatedAt = fromNanos(t)
			return u, err
		}, func(us []store.User) error { return load(store.Batch{Users: us}) })
}

func dumpIdentities(ctx context.Context, tx *sql.Tx, load func(store.Batch) error) error {
	return dumpQuery(ctx, tx, `SELECT platform, platform_user_id, user_id, display_name, created_at FROM identities ORDER BY rowid`,
		func(r *sql.Rows) (store.Identity, error) {
			var id store.Identity
			var t int64
			err := r.Scan(&id.Platform, &id.PlatformUserID, &id.UserID, &id.DisplayName, &t)
			id.CreatedAt = fromNanos(t)
			return id, err
		}, func(ids []store.Identity) error { return load(store.Batch{Identities: ids}) })
}

// dumpSessions lists sessions in the order they were made (rowid), the
// order that breaks ties among sessions active at one time.
func dumpSessions(ctx context.Context, tx *sql.Tx, load func(store.Batch) error) error {
	return dumpQuery(ctx, tx, `SELECT `+sessionCols+`, draft, next_seq FROM sessions ORDER BY rowid`,
		func(r *sql.Rows) (store.SessionRow, error) {
			var row store.SessionRow
			var err error
			row.Session, err = scanSession(r, &row.Draft, &row.NextSeq)
			return row, err
		}, func(ss []store.SessionRow) error { return load(store.Batch{Sessions: ss}) })
}

// dumpFiles reads every file under files/, dumpFileBytes at a time.
func (s *Store) dumpFiles(ctx context.Context, _ *sql.Tx, load func(store.Batch) error) error {
	var batch []store.FileRow
	var size int
	err := s.walkFiles(ctx, func(p, sha string, fi fs.FileInfo) error {
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if size > 0 && size+len(data) > dumpFileBytes {
			if err := load(store.Batch{Files: batch}); err != nil {
				return err
			}
			batch, size = nil, 0
		}
		batch = append(batch, store.FileRow{SHA256: sha, Data: data, PutAt: store.Micro(fi.ModTime())})
		size += len(data)
		return nil
	})
	if err == nil && len(batch) > 0 {
		err = load(store.Batch{Files: batch})
	}
	return err
}

// walkFiles calls fn with each file of bytes kept under files/, skipping
// what is no such file (one being written when a process stopped).
func (s *Store) walkFiles(ctx context.Context, fn func(path, sha string, fi fs.FileInfo) error) error {
	root := s.FilesPath()
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) && p == root {
			return fs.SkipAll
		}
		if err != nil || d.IsDir() {
			return err
		}
		name := d.Name()
		if !validSHA(name) || filepath.Base(filepath.Dir(p)) != name[:2] {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		return fn(p, name, fi)
	})
}

// dumpMessages reads the messages dumpRows at a time by id, each batch
// with its attachments.
func dumpMessages(ctx context.Context, tx *sql.Tx, load func(store.Batch) error) error {
	var after int64
	for {
		var msgs []store.Message
		err := dumpQuery(ctx, tx, fmt.Sprintf(`SELECT %s FROM messages WHERE id > %d ORDER BY id LIMIT %d`, messageCols, after, dumpRows),
			func(r *sql.Rows) (store.Message, error) { return scanMessage(r) },
			func(ms []store.Message) error { msgs = append(msgs, ms...); return nil })
		if err != nil || len(msgs) == 0 {
			return err
		}
		at := make(map[int64]int, len(msgs))
		for i, m := range msgs {
			at[m.ID] = i
		}
		after = msgs[len(msgs)-1].ID
		rows, err := tx.QueryContext(ctx, `SELECT `+attachmentCols+` FROM attachments WHERE message_id BETWEEN ? AND ?
			ORDER BY message_id, ordinal`, msgs[0].ID, after)
		if err != nil {
			return err
		}
		for rows.Next() {
			var a store.Attachment
			var dur int64
			if err := rows.Scan(&a.ID, &a.MessageID, &a.Ordinal, &a.Name, &a.MediaType, &a.Size, &a.SHA256,
				&a.Width, &a.Height, &dur, &a.Voice, &a.Transcript); err != nil {
				rows.Close()
				return err
			}
			a.Duration = time.Duration(dur)
			if i, ok := at[a.MessageID]; ok {
				msgs[i].Attachments = append(msgs[i].Attachments, a)
			}
		}
		if err := errors.Join(rows.Err(), rows.Close()); err != nil {
			return err
		}
		if err := load(store.Batch{Messages: msgs}); err != nil {
			return err
		}
	}
}

func dumpBindings(ctx context.Context, tx *sql.Tx, load func(store.Batch) error) error {
	return dumpQuery(ctx, tx, `SELECT key, session_id, updated_at FROM bindings ORDER BY key`,
		func(r *sql.Rows) (store.Binding, error) {
			var b store.Binding
			var t int64
			err := r.Scan(&b.Key, &b.SessionID, &t)
			b.UpdatedAt = fromNanos(t)
			return b, err
		}, func(bs []store.Binding) error { return load(store.Batch{Bindings: bs}) })
}

func dumpHandoffs(ctx context.Context, tx *sql.Tx, load func(store.Batch) error) error {
	return dumpQuery(ctx, tx, `SELECT `+handoffCols+` FROM handoffs ORDER BY id`,
		func(r *sql.Rows) (store.Handoff, error) { return scanHandoff(r) },
		func(hs []store.Handoff) error { return load(store.Batch{Handoffs: hs}) })
}

func dumpNotes(ctx context.Context, tx *sql.Tx, load func(store.Batch) error) error {
	return dumpQuery(ctx, tx, `SELECT `+noteCols+` FROM notes ORDER BY id`,
		func(r *sql.Rows) (store.Note, error) { return scanNote(r) },
		func(ns []store.Note) error { return load(store.Batch{Notes: ns}) })
}

func dumpPairings(ctx context.Context, tx *sql.Tx, load func(store.Batch) error) error {
	return dumpQuery(ctx, tx, `SELECT `+pairingCols+` FROM pairings ORDER BY rowid`,
		func(r *sql.Rows) (store.Pairing, error) { return scanPairing(r) },
		func(ps []store.Pairing) error { return load(store.Batch{Pairings: ps}) })
}

func dumpHomes(ctx context.Context, tx *sql.Tx, load func(store.Batch) error) error {
	return dumpQuery(ctx, tx, `SELECT platform, address_key, updated_at FROM home_channels ORDER BY platform`,
		func(r *sql.Rows) (store.HomeChannel, error) {
			var h store.HomeChannel
			var t int64
			err := r.Scan(&h.Platform, &h.AddressKey, &t)
			h.UpdatedAt = fromNanos(t)
			return h, err
		}, func(hs []store.HomeChannel) error { return load(store.Batch{Homes: hs}) })
}

func dumpStates(ctx context.Context, tx *sql.Tx, load func(store.Batch) error) error {
	return dumpQuery(ctx, tx, `SELECT platform, key, value, updated_at FROM platform_state ORDER BY platform, key`,
		func(r *sql.Rows) (store.PlatformStateRow, error) {
			var p store.PlatformStateRow
			var t int64
			err := r.Scan(&p.Platform, &p.Key, &p.Value, &t)
			p.UpdatedAt = fromNanos(t)
			return p, err
		}, func(ps []store.PlatformStateRow) error { return load(store.Batch{States: ps}) })
}

func dumpInbound(ctx context.Context, tx *sql.Tx, load func(store.Batch) error) error {
	return dumpQuery(ctx, tx, `SELECT `+prefixed("i.", inboundCols)+`, p.session_id, p.address_key, p.parked_at
		FROM inbound i LEFT JOIN parked p ON p.inbound_id = i.id ORDER BY i.id`,
		func(r *sql.Rows) (store.InboundRow, error) {
			var row store.InboundRow
			var session, key sql.NullString
			var parked sql.NullInt64
			var err error
			row.Inbound, err = scanInbound(scanWith{r, []any{&session, &key, &parked}})
			if session.Valid {
				row.Parked = &store.Parking{SessionID: session.String, AddressKey: key.String, ParkedAt: fromNanos(parked.Int64)}
			}
			return row, err
		}, func(ins []store.InboundRow) error { return load(store.Batch{Inbound: ins}) })
}

func dumpDeliveries(ctx context.Context, tx *sql.Tx, load func(store.Batch) error) error {
	return dumpQuery(ctx, tx, `SELECT `+deliveryCols+` FROM deliveries ORDER BY id`,
		func(r *sql.Rows) (store.Delivery, error) { return scanDelivery(r) },
		func(ds []store.Delivery) error { return load(store.Batch{Deliveries: ds}) })
}

// scanWith scans a row's leading columns with a scanner that knows only
// those, and the rest into more.
type scanWith struct {
	r    *sql.Rows
	more []any
}

func (s scanWith) Scan(dest ...any) error { return s.r.Scan(append(dest, s.more...)...) }

// Count implements store.Counter, in one snapshot; files are those under
// files/.
func (s *Store) Count(ctx context.Context) (map[string]int64, error) {
	tx, err := s.beginRead(ctx, false)
	if err != nil {
		return nil, fmt.Errorf("count the store's rows: %w", err)
	}
	defer tx.Rollback()
	out := map[string]int64{}
	for kind, q := range map[string]string{
		"users":               `SELECT count(*) FROM users`,
		"identities":          `SELECT count(*) FROM identities`,
		"sessions":            `SELECT count(*) FROM sessions`,
		"messages":            `SELECT count(*) FROM messages`,
		"superseded messages": `SELECT count(*) FROM messages WHERE superseded <> 0`,
		"attachments":         `SELECT count(*) FROM attachments`,
		"bindings":            `SELECT count(*) FROM bindings`,
		"handoffs":            `SELECT count(*) FROM handoffs`,
		"notes":               `SELECT count(*) FROM notes`,
		"pairings":            `SELECT count(*) FROM pairings`,
		"home channels":       `SELECT count(*) FROM home_channels`,
		"platform states":     `SELECT count(*) FROM platform_state`,
		"inbound events":      `SELECT count(*) FROM inbound`,
		"parked events":       `SELECT count(*) FROM parked`,
		"deliveries":          `SELECT count(*) FROM deliveries`,
	} {
		var n int64
		if err := tx.QueryRowContext(ctx, q).Scan(&n); err != nil {
			return nil, fmt.Errorf("count the store's %s: %w", kind, err)
		}
		out[kind] = n
	}
	err = s.walkFiles(ctx, func(_, _ string, fi fs.FileInfo) error {
		out["files"]++
		out["file bytes"] += fi.Size()
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("count the store's files: %w", err)
	}
	return out, nil
}
