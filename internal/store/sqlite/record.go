package sqlite

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/baton-agent/baton/internal/store"
)

// The record. Beside the store's file baton keeps a small file of its own,
// state.db.record, saying which store was there and how much it held:
// its id, the sessions ever created in it and the highest message id it
// ever held (store_meta, migration 14; both only grow). SQLite cannot
// tell a store that lost its write-ahead log, or was replaced by a copy
// of its main file alone, from a store that is simply new or older: both
// are valid databases. The record can. Open refuses a store that holds
// less than its record says, and a store whose file is gone while its
// record is there, instead of starting afresh on its own.
//
// The record is written after the facts it states are committed (at open,
// after a session is created, at close), so it never says more than the
// store held; a record that says less only makes the check weaker.

// RecordSuffix names the record: the store's file name and this.
const RecordSuffix = ".record"

// Record is what the record file holds.
type Record struct {
	Store        string    `json:"store"`         // the store's id
	SessionsMade int64     `json:"sessions_made"` // sessions ever created in it
	LastMessage  int64     `json:"last_message"`  // the highest message id it ever held
	Sessions     int64     `json:"sessions"`      // sessions it held then, for people
	At           time.Time `json:"at"`            // when this was written
}

// Holding says how many sessions the record counts, and up to which
// message: "1 session, up to message 3".
func (r *Record) Holding() string {
	n := fmt.Sprintf("%d sessions", r.Sessions)
	if r.Sessions == 1 {
		n = "1 session"
	}
	return fmt.Sprintf("%s, up to message %d", n, r.LastMessage)
}

// Held reports whether the record says the store held anything: a store
// that held nothing loses nothing, whatever becomes of it.
func (r *Record) Held() bool { return r != nil && (r.SessionsMade > 0 || r.LastMessage > 0) }

// ReadRecord reads the record of the store at path; nil when there is none.
func ReadRecord(path string) (*Record, error) { return readRecord(path) }

func readRecord(path string) (*Record, error) {
	b, err := os.ReadFile(path + RecordSuffix)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the store's record: %w", err)
	}
	var r Record
	if err := json.Unmarshal(b, &r); err != nil || r.Store == "" {
		// A record cut short (a crash while it was replaced cannot do
		// that, a person's editor can) says nothing: the next write
		// replaces it.
		slog.Warn("the store's record does not read; it is written again", "file", path+RecordSuffix, "err", err)
		return nil, nil
	}
	return &r, nil
}

// currentRecordSQL reads what the record states, from the store.
const currentRecordSQL = `SELECT id, sessions_made,
	max(last_deleted, (SELECT COALESCE(MAX(id), 0) FROM messages)), (SELECT COUNT(*) FROM sessions)
	FROM store_meta`

// current is the record the store's contents make now.
func (s *Store) current(ctx context.Context) (Record, error) {
	var r Record
	err := s.readRow(ctx, currentRecordSQL).Scan(&r.Store, &r.SessionsMade, &r.LastMessage, &r.Sessions)
	r.At = time.Now().UTC()
	return r, err
}

// Record is what the store holds now, as its record would say it.
func (s *Store) Record(ctx context.Context) (Record, error) { return s.current(ctx) }

// checkRecord refuses the store when it holds less than rec says.
func (s *Store) checkRecord(ctx context.Context, rec *Record) error {
	if !rec.Held() {
		return nil
	}
	cur, err := s.current(ctx)
	if err != nil {
		return fmt.Errorf("read the store's own record: %w", err)
	}
	switch {
	case cur.Store != rec.Store:
		return lost(s.path, rec, "the file is another store ("+cur.Holding()+"), not the one baton kept here", whyOther)
	case cur.SessionsMade < rec.SessionsMade || cur.LastMessage < rec.LastMessage:
		return lost(s.path, rec, "it holds "+cur.Holding(),
			fmt.Sprintf(whyLog, s.path, filepath.Base(s.path)))
	}
	return nil
}

// keepRecord writes the store's record as it stands now. A record that
// cannot be written weakens the check of the next open, nothing more:
// the store goes on.
func (s *Store) keepRecord(ctx context.Context) {
	if s.recordFrozen {
		return
	}
	cur, err := s.current(ctx)
	if err == nil {
		err = writeRecord(s.path, cur)
	}
	if err != nil {
		slog.Warn("keep the store's record", "file", s.path+RecordSuffix, "err", err)
	}
}

// writeRecord replaces the record whole: written beside it, then renamed
// over it, so it is never read half written.
func writeRecord(path string, r Record) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+RecordSuffix+".new-*")
	if err != nil {
		return err
	}
	_, err = tmp.Write(append(b, '\n'))
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path+RecordSuffix)
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
}

// Why a store holds less than its record says, for lost.
const (
	lostFile = "the file is gone"
	whyLog   = "Its write-ahead log (%s-wal) was probably lost: deleted while baton ran, or the file replaced by a copy of %s made without it"
	whyFile  = "It was removed or moved away"
	whyOther = "Another store's file was put in its place"
)

// lost says that the store at path holds less than its record (now says
// what it holds), why that may be, and what to do.
func lost(path string, rec *Record, now, why string) error {
	return fmt.Errorf("%w: baton's record of this store (%s, written %s) says it held %s; "+
		"now %s. %s. baton will not start afresh on its own. Restore it from a backup (see `baton backup`); "+
		"or, to go on with the store as it is now (an older copy put back on purpose, or a new start), remove the record: rm %s",
		store.ErrLost, path+RecordSuffix, rec.At.Local().Format("2006-01-02 15:04"), rec.Holding(),
		now, why, path+RecordSuffix)
}
