package postgres

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/baton-agent/baton/internal/attach"
	"github.com/baton-agent/baton/internal/store"
)

// validSHA reports whether sha is 64 lower-case hex digits.
func validSHA(sha string) bool {
	if len(sha) != 64 {
		return false
	}
	for _, c := range sha {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// PutFile implements store.Files: the bytes are read whole (up to the
// bound) and kept in the files table once per content.
func (s *Store) PutFile(ctx context.Context, r io.Reader, name string) (store.Attachment, error) {
	a, err := s.putFile(ctx, r, name)
	if err != nil {
		return store.Attachment{}, fmt.Errorf("keep file %q: %w", name, err)
	}
	return a, nil
}

func (s *Store) putFile(ctx context.Context, r io.Reader, name string) (store.Attachment, error) {
	limit := s.maxFileBytes
	if n, ok := r.(interface{ Len() int }); ok && int64(n.Len()) > limit {
		return store.Attachment{}, &store.FileTooLargeError{Size: int64(n.Len()), Limit: limit}
	}
	data, err := io.ReadAll(io.LimitReader(ctxReader{ctx, r}, limit+1))
	if err != nil {
		return store.Attachment{}, err
	}
	if int64(len(data)) > limit {
		return store.Attachment{}, &store.FileTooLargeError{Size: int64(len(data)), Limit: limit, AtLeast: true}
	}
	info := attach.Sniff(data[:min(len(data), attach.HeadSize)])
	sum := sha256.Sum256(data)
	a := store.Attachment{Name: name, MediaType: info.MediaType, Size: int64(len(data)), SHA256: hex.EncodeToString(sum[:]),
		Width: info.Width, Height: info.Height}
	if info.MediaType == "audio/ogg" {
		var ogg attach.OggDuration
		_, _ = ogg.Write(data)
		a.Duration = ogg.Duration()
	}
	// The same bytes put again are written once; put_at moves on, so a
	// removal of unnamed bytes leaves them to the message about to name
	// them.
	if _, err := s.pool.Exec(ctx, `INSERT INTO files (sha256, media_type, size, data, put_at) VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (sha256) DO UPDATE SET put_at = excluded.put_at`, a.SHA256, a.MediaType, a.Size, data, nowMicros()); err != nil {
		return store.Attachment{}, err
	}
	return a, nil
}

// ctxReader stops a copy when its context ends.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// OpenFile implements store.Files.
func (s *Store) OpenFile(ctx context.Context, sha string) (io.ReadCloser, error) {
	if !validSHA(sha) {
		return nil, fmt.Errorf("open file %q: not a SHA-256 in hex: %w", sha, store.ErrInvalid)
	}
	var data []byte
	err := s.pool.QueryRow(ctx, `SELECT data FROM files WHERE sha256 = $1`, sha).Scan(&data)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("open file %s: %w", sha, store.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("open file %s: %w", sha, err)
	}
	return io.NopCloser(bytes.NewReader(data)), nil
}

// checkKept refuses an attachment whose bytes the store does not hold. It
// locks the bytes' row against removal until tx ends, so a removal of
// unnamed bytes cannot slip in before the row naming them commits.
func checkKept(ctx context.Context, tx pgx.Tx, i int, a store.Attachment) error {
	if !validSHA(a.SHA256) {
		return fmt.Errorf("attachment %d (%q): SHA256 %q is not a SHA-256 in hex: %w", i, a.Name, a.SHA256, store.ErrInvalid)
	}
	var one int
	err := tx.QueryRow(ctx, `SELECT 1 FROM files WHERE sha256 = $1 FOR KEY SHARE`, a.SHA256).Scan(&one)
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("attachment %d (%q): its bytes (%s) are not kept, put them first: %w", i, a.Name, a.SHA256, store.ErrNotFound)
	}
	return err
}

const attachmentCols = `id, message_id, ordinal, name, media_type, size, sha256, width, height, duration, voice, transcript`

func scanAttachment(row pgx.Row) (store.Attachment, error) {
	var a store.Attachment
	var dur int64
	var transcript []byte
	err := row.Scan(&a.ID, &a.MessageID, &a.Ordinal, &a.Name, &a.MediaType, &a.Size, &a.SHA256,
		&a.Width, &a.Height, &dur, &a.Voice, &transcript)
	a.Duration, a.Transcript = time.Duration(dur), string(transcript)
	return a, err
}

// insertAttachments stores m's attachments in tx, each once its bytes
// are seen to be kept.
func insertAttachments(ctx context.Context, tx pgx.Tx, m *store.Message) error {
	if len(m.Attachments) == 0 {
		return nil
	}
	as := make([]store.Attachment, len(m.Attachments))
	for i, a := range m.Attachments {
		if err := checkKept(ctx, tx, i, a); err != nil {
			return err
		}
		a.MessageID, a.Ordinal = m.ID, i
		if err := tx.QueryRow(ctx, `INSERT INTO attachments (message_id, session_id, ordinal, name, media_type, size, sha256,
			width, height, duration, voice, transcript) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) RETURNING id`,
			a.MessageID, m.SessionID, a.Ordinal, a.Name, a.MediaType, a.Size, a.SHA256, a.Width, a.Height, int64(a.Duration),
			a.Voice, []byte(a.Transcript)).Scan(&a.ID); err != nil {
			return err
		}
		as[i] = a
	}
	m.Attachments = as
	return nil
}

// attachmentsJSON is as, as a queue row keeps them: JSON, "" for none.
func attachmentsJSON(as []store.Attachment) (string, error) {
	if len(as) == 0 {
		return "", nil
	}
	out := make([]store.Attachment, len(as))
	for i, a := range as {
		a.ID, a.MessageID, a.Ordinal = 0, 0, i
		out[i] = a
	}
	data, err := json.Marshal(out)
	return string(data), err
}

// SetTranscript records a voice note's transcript. The session's
// generation is bumped with it, so every process's cached transcript is
// read again.
func (s *Store) SetTranscript(ctx context.Context, attachmentID int64, text string) error {
	err := s.tx(ctx, func(tx pgx.Tx) error {
		var session string
		err := tx.QueryRow(ctx, `UPDATE attachments SET transcript = $1 WHERE id = $2 RETURNING session_id`,
			[]byte(text), attachmentID).Scan(&session)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("attachment %d: %w", attachmentID, store.ErrNotFound)
		}
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `UPDATE sessions SET generation = generation + 1 WHERE id = $1`, session)
		return err
	})
	if err != nil {
		return fmt.Errorf("set transcript: %w", err)
	}
	return nil
}

// namedSQL tells whether a row needs the bytes of $1: a message's
// attachment, an inbound event's while it waits or is parked, a
// delivery's while it is unsent.
const namedSQL = `EXISTS (SELECT 1 FROM attachments WHERE sha256 = f.sha256)
	OR EXISTS (SELECT 1 FROM inbound_files x JOIN inbound i ON i.id = x.inbound_id
		WHERE x.sha256 = f.sha256 AND (i.done_at = 0 OR EXISTS (SELECT 1 FROM parked p WHERE p.inbound_id = i.id)))
	OR EXISTS (SELECT 1 FROM delivery_files x JOIN deliveries d ON d.id = x.delivery_id
		WHERE x.sha256 = f.sha256 AND d.sent_at = 0)`

// DeleteSession removes a session with its messages, bindings, handoffs
// and attachments, and then the bytes no other row names.
func (s *Store) DeleteSession(ctx context.Context, id string) error {
	if !isText(id) {
		return fmt.Errorf("delete session %s: %w", id, store.ErrNotFound)
	}
	began := nowMicros()
	var shas []string
	err := s.tx(ctx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `SELECT DISTINCT sha256 FROM attachments WHERE session_id = $1`, id)
		if err != nil {
			return err
		}
		if shas, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `DELETE FROM sessions WHERE id = $1`, id)
		return affected(tag, notFound(err), "session "+id)
	})
	if s.transcripts != nil {
		s.transcripts.Drop(id)
	}
	if err != nil {
		return fmt.Errorf("delete session %s: %w", id, err)
	}
	if err := s.removeUnnamed(ctx, shas, began); err != nil {
		return fmt.Errorf("delete session %s: remove its files: %w", id, err)
	}
	return nil
}

// removeUnnamed removes the bytes of shas that no row names and that were
// last put before cutoff. The rows are locked first, which waits for any
// append holding them (checkKept); the next statement, seeing what those
// appends committed, removes only what stays unnamed.
func (s *Store) removeUnnamed(ctx context.Context, shas []string, cutoff int64) error {
	if len(shas) == 0 {
		return nil
	}
	return s.tx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT 1 FROM files WHERE sha256 = ANY($1) FOR UPDATE`, shas); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `DELETE FROM files f WHERE f.sha256 = ANY($1) AND f.put_at < $2 AND NOT (`+namedSQL+`)`, shas, cutoff)
		return err
	})
}

// orphanGrace is how long bytes put and never named are kept: the message
// that is to name them may still be on its way.
const orphanGrace = time.Hour

// sweepFiles removes bytes put more than orphanGrace ago that no row
// names (a stranger's photo never stored with a message). Open runs it.
func (s *Store) sweepFiles(ctx context.Context) error {
	cutoff := time.Now().Add(-orphanGrace).UnixMicro()
	rows, err := s.pool.Query(ctx, `SELECT f.sha256 FROM files f WHERE f.put_at < $1 AND NOT (`+namedSQL+`)`, cutoff)
	if err != nil {
		return err
	}
	shas, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return err
	}
	return s.removeUnnamed(ctx, shas, cutoff)
}
