package postgres

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/baton-agent/baton/internal/attach"
	"github.com/baton-agent/baton/internal/plural"
	"github.com/baton-agent/baton/internal/store"
)

var (
	_ store.Importer = (*Store)(nil)
	_ store.Counter  = (*Store)(nil)
)

// importTables are the tables Import fills, in the order it fills them:
// each is locked for the import and must be empty before it.
var importTables = []string{
	"users", "identities", "sessions", "files", "messages", "attachments", "bindings", "handoffs", "notes",
	"pairings", "home_channels", "platform_state", "inbound", "inbound_files", "parked", "deliveries", "delivery_files",
}

// serials are the columns whose sequences Import moves past the ids it
// kept, so that rows made afterwards take new ones.
var serials = [][2]string{
	{"messages", "id"}, {"attachments", "id"}, {"handoffs", "id"}, {"notes", "id"}, {"inbound", "id"}, {"deliveries", "id"},
}

// Import implements store.Importer with COPY, in one transaction that
// locks every table it fills: other processes wait for it, and see all
// of it or none.
func (s *Store) Import(ctx context.Context, dump func(load func(store.Batch) error) error) error {
	err := s.tx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `LOCK TABLE `+strings.Join(importTables, ", ")+` IN EXCLUSIVE MODE`); err != nil {
			return fmt.Errorf("lock the tables: %w", err)
		}
		held, err := holding(ctx, tx)
		if err != nil {
			return err
		}
		if held != "" {
			return fmt.Errorf("%w (%s)", store.ErrNotEmpty, held)
		}
		// Messages go through a table of their own first: COPY cannot
		// write a tsvector, which the index column is.
		if _, err := tx.Exec(ctx, `CREATE TEMPORARY TABLE import_messages (
			id bigint, session_id text, seq bigint, role text, kind text, content bytea, tool_calls bytea,
			tool_call_id text, tool_name text, platform text, platform_msg_id text, created_at bigint,
			superseded boolean, words text) ON COMMIT DROP`); err != nil {
			return fmt.Errorf("make the messages' staging table: %w", err)
		}
		if err := dump(func(b store.Batch) error { return loadBatch(ctx, tx, b) }); err != nil {
			return err
		}
		for _, sc := range serials {
			if _, err := tx.Exec(ctx, fmt.Sprintf(`SELECT setval(pg_get_serial_sequence('%[1]s', '%[2]s'),
				COALESCE(MAX(%[2]s), 0) + 1, false) FROM %[1]s`, sc[0], sc[1])); err != nil {
				return fmt.Errorf("move the %s ids on: %w", sc[0], err)
			}
		}
		return checkNamedKept(ctx, tx)
	})
	if err != nil {
		return fmt.Errorf("import into %s: %w", s.where, notText(err))
	}
	return nil
}

// holding says what the tables already hold, "" when nothing.
func holding(ctx context.Context, tx pgx.Tx) (string, error) {
	var held []string
	for _, t := range []struct{ table, one, many string }{
		{"sessions", "session", "sessions"}, {"messages", "message", "messages"}, {"users", "user", "users"},
		{"identities", "identity", "identities"}, {"inbound", "inbound event", "inbound events"},
		{"deliveries", "delivery", "deliveries"}, {"files", "file", "files"}, {"pairings", "pairing", "pairings"},
		{"home_channels", "home channel", "home channels"}, {"platform_state", "platform state", "platform states"},
	} {
		var n int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM `+t.table).Scan(&n); err != nil {
			return "", fmt.Errorf("count %s: %w", t.table, err)
		}
		if n > 0 {
			held = append(held, plural.Count(n, t.one, t.many))
		}
	}
	return strings.Join(held, ", "), nil
}

// checkNamedKept refuses an import whose rows name bytes it did not
// bring: the copy would not be whole.
func checkNamedKept(ctx context.Context, tx pgx.Tx) error {
	var sha string
	err := tx.QueryRow(ctx, `SELECT sha256 FROM (SELECT sha256 FROM attachments UNION SELECT sha256 FROM inbound_files
		UNION SELECT sha256 FROM delivery_files) named WHERE NOT EXISTS (SELECT 1 FROM files f WHERE f.sha256 = named.sha256)
		LIMIT 1`).Scan(&sha)
	if err == pgx.ErrNoRows {
		return nil
	}
	if err != nil {
		return fmt.Errorf("check that every file named was brought: %w", err)
	}
	return fmt.Errorf("a row names the file %s, whose bytes were not among the files: %w", sha, store.ErrNotFound)
}

// copyRows copies rows into table's cols.
func copyRows(ctx context.Context, tx pgx.Tx, table string, cols []string, rows [][]any) error {
	if len(rows) == 0 {
		return nil
	}
	if _, err := tx.CopyFrom(ctx, pgx.Identifier{table}, cols, pgx.CopyFromRows(rows)); err != nil {
		return fmt.Errorf("copy %s: %w", table, err)
	}
	return nil
}

// loadBatch stores b's rows in tx, as they are.
func loadBatch(ctx context.Context, tx pgx.Tx, b store.Batch) error {
	var rows [][]any
	for _, u := range b.Users {
		rows = append(rows, []any{u.ID, u.Name, micros(u.CreatedAt)})
	}
	if err := copyRows(ctx, tx, "users", []string{"id", "name", "created_at"}, rows); err != nil {
		return err
	}
	rows = nil
	for _, id := range b.Identities {
		rows = append(rows, []any{id.Platform, id.PlatformUserID, id.UserID, id.DisplayName, micros(id.CreatedAt)})
	}
	if err := copyRows(ctx, tx, "identities", []string{"platform", "platform_user_id", "user_id", "display_name", "created_at"}, rows); err != nil {
		return err
	}
	rows = nil
	for _, s := range b.Sessions {
		rows = append(rows, []any{s.ID, s.OwnerID, s.Title, s.Model, s.Platform, s.ParentID, micros(s.CreatedAt), micros(s.UpdatedAt),
			micros(s.EndedAt), s.EndReason, s.InputTokens, s.OutputTokens, s.NextSeq, s.MessageCount, s.Holder, micros(s.HeldSince),
			[]byte(s.Draft), s.Voice})
	}
	// Rows are copied in order, so made (a serial) keeps the order the
	// sessions were made in.
	if err := copyRows(ctx, tx, "sessions", []string{"id", "owner_id", "title", "model", "platform", "parent_id", "created_at",
		"updated_at", "ended_at", "end_reason", "input_tokens", "output_tokens", "next_seq", "message_count", "holder",
		"held_since", "draft", "voice"}, rows); err != nil {
		return err
	}
	rows = nil
	for _, f := range b.Files {
		sum := sha256.Sum256(f.Data)
		if hex.EncodeToString(sum[:]) != f.SHA256 {
			return fmt.Errorf("the file kept as %s holds other bytes (their SHA-256 is %x): it was damaged", f.SHA256, sum)
		}
		info := attach.Sniff(f.Data[:min(len(f.Data), attach.HeadSize)])
		rows = append(rows, []any{f.SHA256, info.MediaType, int64(len(f.Data)), f.Data, micros(f.PutAt)})
	}
	if err := copyRows(ctx, tx, "files", []string{"sha256", "media_type", "size", "data", "put_at"}, rows); err != nil {
		return err
	}
	if err := importMessages(ctx, tx, b.Messages); err != nil {
		return err
	}
	rows = nil
	for _, bd := range b.Bindings {
		rows = append(rows, []any{bd.Key, bd.SessionID, micros(bd.UpdatedAt)})
	}
	if err := copyRows(ctx, tx, "bindings", []string{"key", "session_id", "updated_at"}, rows); err != nil {
		return err
	}
	rows = nil
	for _, h := range b.Handoffs {
		rows = append(rows, []any{h.ID, h.SessionID, string(h.State), h.FromPlatform, h.Platform, h.Destination, []byte(h.Error),
			h.ClaimedBy, micros(h.LeaseUntil), h.Attempts, micros(h.RequestedAt), micros(h.ClaimedAt), micros(h.FinishedAt)})
	}
	if err := copyRows(ctx, tx, "handoffs", []string{"id", "session_id", "state", "from_platform", "platform", "destination",
		"error", "claimed_by", "lease_until", "attempts", "requested_at", "claimed_at", "finished_at"}, rows); err != nil {
		return err
	}
	rows = nil
	for _, n := range b.Notes {
		var handoff *int64
		if n.HandoffID != 0 {
			handoff = &n.HandoffID
		}
		rows = append(rows, []any{n.ID, n.SessionID, handoff, []byte(n.Body), []byte(n.Fallback), micros(n.CreatedAt)})
	}
	if err := copyRows(ctx, tx, "notes", []string{"id", "session_id", "handoff_id", "body", "fallback", "created_at"}, rows); err != nil {
		return err
	}
	rows = nil
	for _, p := range b.Pairings {
		rows = append(rows, []any{p.Platform, p.PlatformUserID, p.Code, p.Sender, p.AddressKey, micros(p.CreatedAt),
			micros(p.ExpiresAt), p.Attempts, micros(p.LockedUntil)})
	}
	if err := copyRows(ctx, tx, "pairings", []string{"platform", "platform_user_id", "code", "sender", "address_key",
		"created_at", "expires_at", "attempts", "locked_until"}, rows); err != nil {
		return err
	}
	rows = nil
	for _, h := range b.Homes {
		rows = append(rows, []any{h.Platform, h.AddressKey, micros(h.UpdatedAt)})
	}
	if err := copyRows(ctx, tx, "home_channels", []string{"platform", "address_key", "updated_at"}, rows); err != nil {
		return err
	}
	rows = nil
	for _, p := range b.States {
		rows = append(rows, []any{p.Platform, p.Key, []byte(p.Value), micros(p.UpdatedAt)})
	}
	if err := copyRows(ctx, tx, "platform_state", []string{"platform", "key", "value", "updated_at"}, rows); err != nil {
		return err
	}
	if err := loadInbound(ctx, tx, b.Inbound); err != nil {
		return err
	}
	return loadDeliveries(ctx, tx, b.Deliveries)
}

// importMessages stores msgs and their attachments, ids kept.
func importMessages(ctx context.Context, tx pgx.Tx, msgs []store.Message) error {
	if len(msgs) == 0 {
		return nil
	}
	rows := make([][]any, 0, len(msgs))
	var atts [][]any
	for _, m := range msgs {
		rows = append(rows, []any{m.ID, m.SessionID, m.Seq, string(m.Role), string(m.Kind), []byte(m.Content), []byte(m.ToolCalls),
			m.ToolCallID, m.ToolName, m.Platform, m.PlatformMsgID, micros(m.CreatedAt), m.Superseded, documentVector(m.Content)})
		for _, a := range m.Attachments {
			atts = append(atts, []any{a.ID, a.MessageID, m.SessionID, a.Ordinal, a.Name, a.MediaType, a.Size, a.SHA256,
				a.Width, a.Height, int64(a.Duration), a.Voice, []byte(a.Transcript)})
		}
	}
	cols := []string{"id", "session_id", "seq", "role", "kind", "content", "tool_calls", "tool_call_id", "tool_name",
		"platform", "platform_msg_id", "created_at", "superseded"}
	if err := copyRows(ctx, tx, "import_messages", append(cols, "words"), rows); err != nil {
		return err
	}
	list := strings.Join(cols, ", ")
	if _, err := tx.Exec(ctx, `INSERT INTO messages (`+list+`, words) SELECT `+list+`, words::tsvector FROM import_messages`); err != nil {
		return fmt.Errorf("copy messages: %w", err)
	}
	if _, err := tx.Exec(ctx, `TRUNCATE import_messages`); err != nil {
		return fmt.Errorf("copy messages: %w", err)
	}
	return copyRows(ctx, tx, "attachments", []string{"id", "message_id", "session_id", "ordinal", "name", "media_type", "size",
		"sha256", "width", "height", "duration", "voice", "transcript"}, atts)
}

// loadInbound stores inbound events, the files they name and their
// parking.
func loadInbound(ctx context.Context, tx pgx.Tx, ins []store.InboundRow) error {
	var rows, files, parked [][]any
	for _, in := range ins {
		atts, err := attachmentsJSON(in.Attachments)
		if err != nil {
			return fmt.Errorf("inbound %d: %w", in.ID, err)
		}
		rows = append(rows, []any{in.ID, in.Platform, in.PlatformMsgID, in.AddressKey, in.SenderID, in.Sender, []byte(in.Text),
			micros(in.ReceivedAt), micros(in.DoneAt), atts})
		for _, sha := range distinctSHAs(in.Attachments) {
			files = append(files, []any{in.ID, sha})
		}
		if p := in.Parked; p != nil {
			parked = append(parked, []any{in.ID, p.SessionID, p.AddressKey, micros(p.ParkedAt)})
		}
	}
	if err := copyRows(ctx, tx, "inbound", []string{"id", "platform", "platform_msg_id", "address_key", "sender_id", "sender",
		"text", "received_at", "done_at", "attachments"}, rows); err != nil {
		return err
	}
	if err := copyRows(ctx, tx, "inbound_files", []string{"inbound_id", "sha256"}, files); err != nil {
		return err
	}
	return copyRows(ctx, tx, "parked", []string{"inbound_id", "session_id", "address_key", "parked_at"}, parked)
}

// loadDeliveries stores deliveries and the files they name.
func loadDeliveries(ctx context.Context, tx pgx.Tx, ds []store.Delivery) error {
	var rows, files [][]any
	for _, d := range ds {
		atts, err := attachmentsJSON(d.Attachments)
		if err != nil {
			return fmt.Errorf("delivery %d: %w", d.ID, err)
		}
		data, err := deliveryData(d)
		if err != nil {
			return err
		}
		rows = append(rows, []any{d.ID, d.Key, d.AddressKey, []byte(d.Text), micros(d.CreatedAt), micros(d.SentAt), d.Attempts,
			[]byte(d.LastError), d.PlatformMsgID, d.Abandoned, string(d.Kind), data, atts})
		for _, sha := range distinctSHAs(d.Attachments) {
			files = append(files, []any{d.ID, sha})
		}
	}
	if err := copyRows(ctx, tx, "deliveries", []string{"id", "key", "address_key", "text", "created_at", "sent_at", "attempts",
		"last_error", "platform_msg_id", "abandoned", "kind", "data", "attachments"}, rows); err != nil {
		return err
	}
	return copyRows(ctx, tx, "delivery_files", []string{"delivery_id", "sha256"}, files)
}

// distinctSHAs are the bytes as names, once each, in order.
func distinctSHAs(as []store.Attachment) []string {
	var out []string
	seen := map[string]bool{}
	for _, a := range as {
		if !seen[a.SHA256] {
			seen[a.SHA256] = true
			out = append(out, a.SHA256)
		}
	}
	return out
}

// Count implements store.Counter, in one snapshot.
func (s *Store) Count(ctx context.Context) (map[string]int64, error) {
	out := map[string]int64{}
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		for kind, q := range map[string]string{
			"users":               `SELECT count(*) FROM users`,
			"identities":          `SELECT count(*) FROM identities`,
			"sessions":            `SELECT count(*) FROM sessions`,
			"messages":            `SELECT count(*) FROM messages`,
			"superseded messages": `SELECT count(*) FROM messages WHERE superseded`,
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
			"files":               `SELECT count(*) FROM files`,
			"file bytes":          `SELECT COALESCE(sum(size), 0)::bigint FROM files`,
		} {
			var n int64
			if err := tx.QueryRow(ctx, q).Scan(&n); err != nil {
				return fmt.Errorf("count %s: %w", kind, err)
			}
			out[kind] = n
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("count the rows of %s: %w", s.where, err)
	}
	return out, nil
}
