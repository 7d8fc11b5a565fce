package sqlite

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/baton-agent/baton/internal/attach"
	"github.com/baton-agent/baton/internal/store"
)

// Attachments' bytes live beside the store's file, in files/, one file
// per content named by its SHA-256 under a folder of its first two hex
// digits: files/ab/abcdef…. A file is written whole to a temporary name,
// synced and renamed into place before any row names it, and
// AppendMessages checks, under the write lock, that each attachment's
// file is there: no row without its bytes. Deleting a session removes,
// under the write lock again, the files no remaining row names. What a
// crash can leave is the other way round, bytes no row names (put, and
// the process killed before its message was stored, or killed between a
// delete and its sweep): Open removes such files once they are older
// than orphanGrace, which no put waits that long for its message.

// FilesDir is the folder beside the store file that keeps attachments.
const FilesDir = "files"

// orphanGrace is how old a file no row names must be before Open removes
// it: younger ones may be the bytes of a message another process is
// about to store.
const orphanGrace = time.Hour

// tempPrefix starts the names of files being written.
const tempPrefix = ".put-"

// WithMaxFileBytes sets the per-file bound of PutFile (default
// store.DefaultMaxFileBytes).
func WithMaxFileBytes(n int64) Option { return func(s *Store) { s.maxFileBytes = n } }

// FilePath is where the bytes kept under sha256 are on disk, for people
// and the file tools to read (never to write: other messages may name
// them too); false for a malformed hash.
func (s *Store) FilePath(sha256 string) (string, bool) {
	if !validSHA(sha256) {
		return "", false
	}
	return s.filePath(sha256), true
}

// FilesPath is the folder holding the store's attachments.
func (s *Store) FilesPath() string { return filepath.Join(filepath.Dir(s.path), FilesDir) }

// filePath is where the bytes of sha live.
func (s *Store) filePath(sha string) string {
	return filepath.Join(s.FilesPath(), sha[:2], sha)
}

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

// PutFile implements store.Files. The bytes are read once, through the
// hash and into the temporary file; only the first attach.HeadSize of
// them are held, for sniffing.
func (s *Store) PutFile(ctx context.Context, r io.Reader, name string) (store.Attachment, error) {
	a, err := s.putFile(ctx, r, name)
	if err != nil {
		return store.Attachment{}, fmt.Errorf("keep file %q: %w", name, err)
	}
	return a, nil
}

func (s *Store) putFile(ctx context.Context, r io.Reader, name string) (store.Attachment, error) {
	limit := s.maxFileBytes
	if n, ok := knownSize(r); ok && n > limit {
		return store.Attachment{}, &store.FileTooLargeError{Size: n, Limit: limit}
	}
	dir := s.FilesPath()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return store.Attachment{}, err
	}
	tmp, err := os.CreateTemp(dir, tempPrefix+"*")
	if err != nil {
		return store.Attachment{}, err
	}
	kept := false
	defer func() {
		if !kept {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	src := io.LimitReader(ctxReader{ctx, r}, limit+1)
	buf := make([]byte, attach.HeadSize)
	n, err := io.ReadFull(src, buf)
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
		return store.Attachment{}, err
	}
	info := attach.Sniff(buf[:n])
	hash := sha256.New()
	sinks := []io.Writer{tmp, hash}
	var ogg *attach.OggDuration
	if info.MediaType == "audio/ogg" {
		ogg = &attach.OggDuration{}
		sinks = append(sinks, ogg)
	}
	w := io.MultiWriter(sinks...)
	if _, err := w.Write(buf[:n]); err != nil {
		return store.Attachment{}, err
	}
	size := int64(n)
	if n == len(buf) {
		more, err := io.CopyBuffer(w, src, buf)
		size += more
		if err != nil {
			return store.Attachment{}, err
		}
	}
	if size > limit {
		return store.Attachment{}, &store.FileTooLargeError{Size: size, Limit: limit, AtLeast: true}
	}
	if err := tmp.Sync(); err != nil {
		return store.Attachment{}, err
	}
	if err := tmp.Close(); err != nil {
		return store.Attachment{}, err
	}
	sum := hex.EncodeToString(hash.Sum(nil))
	a := store.Attachment{Name: name, MediaType: info.MediaType, Size: size, SHA256: sum, Width: info.Width, Height: info.Height}
	if ogg != nil {
		a.Duration = ogg.Duration()
	}
	final := s.filePath(sum)
	if err := os.MkdirAll(filepath.Dir(final), 0o700); err != nil {
		return store.Attachment{}, err
	}
	// The same bytes put again replace their file with itself: the name
	// gets a new modification time, so the sweep of files no row names
	// leaves it to the message about to name it.
	if err := os.Rename(tmp.Name(), final); err != nil {
		return store.Attachment{}, err
	}
	kept = true
	if err := syncDir(filepath.Dir(final)); err != nil {
		return store.Attachment{}, err
	}
	return a, nil
}

// knownSize is r's length when r can tell it without reading.
func knownSize(r io.Reader) (int64, bool) {
	switch v := r.(type) {
	case interface{ Len() int }: // bytes.Reader, strings.Reader, bytes.Buffer: what is left
		return int64(v.Len()), true
	case *os.File:
		if fi, err := v.Stat(); err == nil && fi.Mode().IsRegular() {
			if off, err := v.Seek(0, io.SeekCurrent); err == nil {
				return fi.Size() - off, true
			}
		}
	}
	return 0, false
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

// syncDir makes a rename in dir survive a power cut.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// OpenFile implements store.Files.
func (s *Store) OpenFile(ctx context.Context, sha string) (io.ReadCloser, error) {
	if !validSHA(sha) {
		return nil, fmt.Errorf("open file %q: not a SHA-256 in hex: %w", sha, store.ErrInvalid)
	}
	f, err := os.Open(s.filePath(sha))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("open file %s: %w", sha, store.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("open file %s: %w", sha, err)
	}
	return f, nil
}

const insertAttachmentSQL = `INSERT INTO attachments (message_id, session_id, ordinal, name, media_type, size, sha256,
	width, height, duration, voice, transcript) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`

// insertAttachments stores m's attachments in tx, each once its bytes
// are seen to be kept.
func (s *Store) insertAttachments(tx *wtx, m *store.Message) error {
	if len(m.Attachments) == 0 {
		return nil
	}
	as := make([]store.Attachment, len(m.Attachments))
	for i, a := range m.Attachments {
		if err := s.checkKept(i, a); err != nil {
			return err
		}
		a.MessageID, a.Ordinal = m.ID, i
		if err := tx.QueryRow(insertAttachmentSQL, a.MessageID, m.SessionID, a.Ordinal, a.Name, a.MediaType, a.Size,
			a.SHA256, a.Width, a.Height, int64(a.Duration), a.Voice, a.Transcript).Scan(&a.ID); err != nil {
			return err
		}
		as[i] = a
	}
	m.Attachments = as
	return nil
}

// checkKept refuses an attachment whose bytes the store does not hold;
// run under the write lock, a removal of unnamed bytes cannot slip in
// before the row naming them commits.
func (s *Store) checkKept(i int, a store.Attachment) error {
	if !validSHA(a.SHA256) {
		return fmt.Errorf("attachment %d (%q): SHA256 %q is not a SHA-256 in hex: %w", i, a.Name, a.SHA256, store.ErrInvalid)
	}
	if _, err := os.Stat(s.filePath(a.SHA256)); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			err = store.ErrNotFound
		}
		return fmt.Errorf("attachment %d (%q): its bytes (%s) are not kept, put them first: %w", i, a.Name, a.SHA256, err)
	}
	return nil
}

// namedSQL tells whether a row needs the bytes of sha: a message's
// attachment, an inbound event's while it waits to be handled or is
// parked, a delivery's while it is unsent.
const namedSQL = `SELECT EXISTS (SELECT 1 FROM attachments WHERE sha256 = ?1)
	OR EXISTS (SELECT 1 FROM inbound_files f JOIN inbound i ON i.id = f.inbound_id
		WHERE f.sha256 = ?1 AND (i.done_at = 0 OR EXISTS (SELECT 1 FROM parked p WHERE p.inbound_id = i.id)))
	OR EXISTS (SELECT 1 FROM delivery_files f JOIN deliveries d ON d.id = f.delivery_id
		WHERE f.sha256 = ?1 AND d.sent_at = 0)`

// attachmentsJSON is as, as a queue row keeps them: JSON, "" for none,
// each with its place and no row of its own.
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

const attachmentCols = `id, message_id, ordinal, name, media_type, size, sha256, width, height, duration, voice, transcript`

// fillAttachments sets the attachments of msgs (ordered by id, all of
// sessionID) from rows read by query, which selects attachmentCols of
// the session's messages with ids from msgs[0].ID on.
func fillAttachments(msgs []store.Message, rows *sql.Rows) error {
	defer rows.Close()
	at := make(map[int64]int, 0)
	for rows.Next() {
		var a store.Attachment
		var dur int64
		if err := rows.Scan(&a.ID, &a.MessageID, &a.Ordinal, &a.Name, &a.MediaType, &a.Size, &a.SHA256,
			&a.Width, &a.Height, &dur, &a.Voice, &a.Transcript); err != nil {
			return err
		}
		a.Duration = time.Duration(dur)
		if len(at) == 0 {
			for i, m := range msgs {
				at[m.ID] = i
			}
		}
		if i, ok := at[a.MessageID]; ok {
			msgs[i].Attachments = append(msgs[i].Attachments, a)
		}
	}
	return rows.Err()
}

const sessionAttachmentsSQL = `SELECT ` + attachmentCols + ` FROM attachments
	WHERE session_id = ? AND message_id >= ? ORDER BY message_id, ordinal`

// DeleteSession removes a session with its messages, bindings, handoffs
// and attachments, and then the files no other row names.
func (s *Store) DeleteSession(ctx context.Context, id string) error {
	var shas []string
	began := time.Now()
	err := s.tx(ctx, func(tx *wtx) error {
		rows, err := tx.Query(`SELECT DISTINCT sha256 FROM attachments WHERE session_id = ?`, id)
		if err != nil {
			return err
		}
		for rows.Next() {
			var sha string
			if err := rows.Scan(&sha); err != nil {
				rows.Close()
				return err
			}
			shas = append(shas, sha)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		res, err := tx.Exec(`DELETE FROM sessions WHERE id = ?`, id)
		return affected(res, err, "session "+id)
	})
	if err != nil {
		return fmt.Errorf("delete session %s: %w", id, err)
	}
	// Its folder of links goes first: a link would keep the bytes on disk
	// after removeUnnamed.
	if err := os.RemoveAll(s.SessionFolder(id)); err != nil {
		return fmt.Errorf("delete session %s: remove its folder: %w", id, err)
	}
	if err := s.removeUnnamed(ctx, shas, began); err != nil {
		return fmt.Errorf("delete session %s: remove its files: %w", id, err)
	}
	return nil
}

// removeUnnamed removes the files of shas that no row names and that
// were last written before cutoff, under the write lock: an append
// naming one of them either committed before (and the file stays) or
// runs after and finds it gone. A file written since cutoff was put
// again, for a message about to name it: it stays.
func (s *Store) removeUnnamed(ctx context.Context, shas []string, cutoff time.Time) error {
	if len(shas) == 0 {
		return nil
	}
	return s.tx(ctx, func(tx *wtx) error {
		for _, sha := range shas {
			var named int
			if err := tx.QueryRow(namedSQL, sha).Scan(&named); err != nil {
				return err
			}
			if named != 0 {
				continue
			}
			p := s.filePath(sha)
			if fi, err := os.Stat(p); err != nil || !fi.ModTime().Before(cutoff) {
				continue
			}
			if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
		}
		return nil
	})
}

// sweepFiles removes what a crash left in files/: temporary files and
// files no row names, both older than orphanGrace.
func (s *Store) sweepFiles(ctx context.Context) error {
	root := s.FilesPath()
	cutoff := time.Now().Add(-orphanGrace)
	var old []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) && p == root {
			return fs.SkipAll
		}
		if err != nil || d.IsDir() {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if !fi.ModTime().Before(cutoff) {
			return nil
		}
		switch name := d.Name(); {
		case strings.HasPrefix(name, tempPrefix):
			if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
		case validSHA(name) && filepath.Base(filepath.Dir(p)) == name[:2]:
			old = append(old, name)
		}
		return nil
	})
	if err != nil {
		return err
	}
	return s.removeUnnamed(ctx, old, cutoff)
}

// attachmentsIn fills the attachments of msgs, a stretch of the
// session's transcript in seq (so id) order, in tx's snapshot.
func attachmentsIn(ctx context.Context, tx snapshot, sessionID string, msgs []store.Message) error {
	st, err := tx.stmt(ctx, sessionAttachmentsSQL)
	if err != nil {
		return err
	}
	defer st.Close()
	rows, err := st.QueryContext(ctx, sessionID, msgs[0].ID)
	if err != nil {
		return err
	}
	return fillAttachments(msgs, rows)
}

// startSweeper sweeps files/ again every orphanGrace while the store is
// open: a gateway runs for weeks, and the files of events it handled
// without storing a message (a stranger's photo) would wait for the next
// open otherwise.
func (s *Store) startSweeper() {
	s.bgMu.Lock()
	defer s.bgMu.Unlock()
	if s.bgClosed {
		return
	}
	// Not on s.bg: waiting for the packs being saved must not wait for it.
	s.sweeper.Go(func() {
		tick := time.NewTicker(orphanGrace)
		defer tick.Stop()
		for {
			select {
			case <-s.closing:
				return
			case <-tick.C:
				if err := s.sweepFiles(context.Background()); err != nil {
					slog.Warn("remove files of the store no message names", "dir", s.FilesPath(), "err", err)
				}
			}
		}
	})
}

// SetTranscript records a voice note's transcript. The session's
// transcript generation is bumped with it, so every process's cached
// transcript is read again.
func (s *Store) SetTranscript(ctx context.Context, attachmentID int64, text string) error {
	err := s.tx(ctx, func(tx *wtx) error {
		var session string
		if err := tx.QueryRow(`UPDATE attachments SET transcript = ? WHERE id = ? RETURNING session_id`, text, attachmentID).Scan(&session); err != nil {
			if errors.Is(err, sql.ErrNoRows) {
				return fmt.Errorf("attachment %d: %w", attachmentID, store.ErrNotFound)
			}
			return err
		}
		_, err := tx.Exec(`UPDATE sessions SET generation = generation + 1 WHERE id = ?`, session)
		return err
	})
	if err != nil {
		return fmt.Errorf("set transcript: %w", err)
	}
	return nil
}
