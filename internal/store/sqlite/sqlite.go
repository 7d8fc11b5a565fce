// Package sqlite is baton's embedded store: one SQLite file in WAL mode,
// shared safely by the terminal and gateway processes.
package sqlite

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/baton-agent/baton/internal/store"
	"github.com/baton-agent/baton/internal/store/transcriptcache"
)

// FileName is the store's file inside BATON_HOME.
const FileName = "state.db"

// busyTimeout is how long a writer waits for another process's transaction.
const busyTimeout = 10 * time.Second

// maxReaders is how many reader connections the store keeps open.
const maxReaders = 4

// Store is the SQLite implementation of store.Store. All writes go through
// one connection (SQLite has one writer anyway; a single connection removes
// lock upgrades within the process), reads through a small pool.
type Store struct {
	path string
	w    *sql.DB
	r    *sql.DB
	// helpers read parts of long transcripts next to a reader of r. They
	// are a pool of their own so that a reader holding an r connection
	// never waits for another r connection (that could deadlock the pool).
	helpers *sql.DB // nil when parallel loading is off

	writer      *writer       // runs every write, on w's one connection (writer.go)
	checkpoints *checkpointer // keeps the write-ahead log short (checkpoint.go)

	stmtMu sync.Mutex
	rstmts map[string]*sql.Stmt // prepared on the reader pool, each connection once
	hstmts map[string]*sql.Stmt // the same on the helpers' pool

	transcripts *transcriptcache.Cache // nil when disabled
	sequential  bool                   // WithSequentialLoads

	// bg runs the writes of transcript packs, off the loads that made
	// them; Close waits for them.
	bgMu             sync.Mutex
	bg               sync.WaitGroup
	bgClosed         bool
	closing          chan struct{}  // closed by Close: background work stops
	sweeper          sync.WaitGroup // the hourly sweep of files/ (files.go)
	index            *indexer       // the full-text index's background (index.go)
	noIndexer        bool           // no background indexing (tests, ForInspection)
	noIdleCheckpoint bool           // tests: no checkpoint for being idle

	maxFileBytes int64 // PutFile's bound (WithMaxFileBytes)

	recorded     bool // the store passed its record's check: keep the record
	recordFrozen bool // ForInspection
}

// Option changes how Open sets up a store.
type Option func(*Store)

// WithoutTranscriptCache makes every Transcript call read all rows from the
// file, as a process that never read the session before would.
func WithoutTranscriptCache() Option { return func(s *Store) { s.transcripts = nil } }

// WithSequentialLoads reads every transcript on one connection, never
// splitting a long one between readers.
func WithSequentialLoads() Option { return func(s *Store) { s.sequential = true } }

// ForInspection opens the store to look at it, as `baton doctor` does:
// it is checked against its record (record.go) but the record is never
// written, and nothing is indexed for search in the background.
func ForInspection() Option {
	return func(s *Store) { s.recordFrozen, s.noIndexer = true, true }
}

var _ store.Store = (*Store)(nil)

// Open opens (creating if needed, mode 0600) the store at path and applies
// pending migrations. Several processes may open the same file at once.
func Open(ctx context.Context, path string, opts ...Option) (*Store, error) {
	s, err := open(ctx, path, opts...)
	return s, Explain(path, err)
}

func open(ctx context.Context, path string, opts ...Option) (*Store, error) {
	if strings.ContainsAny(path, "?#") {
		return nil, fmt.Errorf("open store %s: path may not contain '?' or '#'", path)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	rec, err := readRecord(path)
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		if rec.Held() {
			return nil, fmt.Errorf("open store %s: %w", path, lost(path, rec, lostFile, whyFile))
		}
		// A new file would take the old log's pages as its own.
		if wal, err := os.Stat(path + "-wal"); err == nil && wal.Size() > 0 {
			return nil, fmt.Errorf("open store %s: %w", path, damaged(path, fmt.Sprintf(
				"the file is gone, and its write-ahead log (%s-wal, %d bytes) is still there", path, wal.Size())))
		}
	}
	if err := create(ctx, path); err != nil {
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	if err := checkFile(path); err != nil {
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}

	q := url.Values{}
	q.Set("_busy_timeout", fmt.Sprint(busyTimeout.Milliseconds()))
	q.Set("_journal_mode", "WAL")
	q.Set("_foreign_keys", "1")
	rq := q.Encode()
	// FULL syncs the log at every commit, so what the store has committed,
	// and baton then acknowledges to a service or marks sent, survives a
	// power cut too, not only a crash of baton (NORMAL's promise). The
	// writer's group commit pays for one sync per batch of writes.
	q.Set("_synchronous", "FULL")
	q.Set("_txlock", "immediate") // take the write lock at BEGIN: no upgrade deadlocks between processes
	// Checkpoints run in the background (checkpoint.go); the writer's own
	// is the backstop.
	q.Add("_pragma", fmt.Sprintf("wal_autocheckpoint(%d)", backstopPages))
	wq := q.Encode()

	w, err := sql.Open("sqlite", path+"?"+wq)
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	w.SetMaxOpenConns(1)
	w.SetConnMaxIdleTime(0)
	r, err := sql.Open("sqlite", path+"?"+rq)
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	// Every reader stays open: database/sql keeps two idle by default, so
	// under load the others were closed and opened again, each time
	// reading the schema and preparing its statements anew.
	r.SetMaxOpenConns(maxReaders)
	r.SetMaxIdleConns(maxReaders)
	s := &Store{path: path, w: w, r: r, closing: make(chan struct{}), rstmts: map[string]*sql.Stmt{}, hstmts: map[string]*sql.Stmt{},
		transcripts: newTranscriptCache(transcriptcache.DefaultMessages), maxFileBytes: store.DefaultMaxFileBytes}
	for _, o := range opts {
		o(s)
	}
	if !s.sequential {
		if s.helpers, err = sql.Open("sqlite", path+"?"+rq); err != nil {
			s.Close()
			return nil, fmt.Errorf("open store %s: %w", path, err)
		}
		s.helpers.SetMaxOpenConns(maxHelpers)
		// Helpers serve the odd long load; let their page caches go after.
		s.helpers.SetConnMaxIdleTime(time.Minute)
	}
	if err := s.setUp(ctx); err != nil {
		s.Close()
		switch {
		case errors.Is(err, errNoSchema):
			err = damaged(path, "it holds no baton tables: it is another program's database, or a copy of "+
				filepath.Base(path)+" made without its "+filepath.Base(path)+"-wal, where a running store keeps "+
				"its latest writes (copy a store with `baton backup FILE`)")
		case isDamage(err):
			err = damaged(path, err.Error())
		}
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	if err := s.checkRecord(ctx, rec); err != nil {
		s.Close()
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	s.recorded = true
	s.keepRecord(ctx)
	if s.checkpoints, err = startCheckpointer(path, rq, s.noIdleCheckpoint); err != nil {
		s.Close()
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	if err := s.startWriter(ctx); err != nil {
		s.Close()
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	s.startIndexer()
	if !s.recordFrozen {
		// Leftovers cost only disk space: a sweep that fails is tried
		// again at the next open.
		if err := s.sweepFiles(ctx); err != nil {
			slog.Warn("remove files of the store no message names", "dir", s.FilesPath(), "err", err)
		}
		s.startSweeper()
	}
	// What a transcript load runs inside its read transaction (the
	// session beside it only on the readers' pool: TurnStart).
	if _, err := s.readStmt(ctx, turnStartSQL); err != nil {
		s.Close()
		return nil, fmt.Errorf("open store %s: prepare: %w", path, err)
	}
	for _, q := range []string{transcriptVersionSQL, packedLiveSQL, packSQL} {
		if _, err := s.readStmt(ctx, q); err != nil {
			s.Close()
			return nil, fmt.Errorf("open store %s: prepare: %w", path, err)
		}
		if s.helpers == nil {
			continue
		}
		if _, err := s.poolStmt(ctx, s.helpers, s.hstmts, q); err != nil {
			s.Close()
			return nil, fmt.Errorf("open store %s: prepare: %w", path, err)
		}
	}
	return s, nil
}

// create makes a new database file at path when there is none. The file
// is made whole beside it (private from the first byte: SQLite gives the
// -wal and -shm files the same mode) and linked into place, so no process
// ever sees an empty file at path: an empty one there means it was
// emptied, and checkFile refuses it. Two processes creating at once both
// succeed; the first link wins and both use its file.
func create(ctx context.Context, path string) error {
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		return nil // exists, or Open's own checks say why not
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".new-*")
	if err != nil {
		return err
	}
	name := tmp.Name()
	tmp.Close()
	defer func() {
		for _, f := range []string{name, name + "-wal", name + "-shm", name + "-journal"} {
			_ = os.Remove(f)
		}
	}()
	db, err := sql.Open("sqlite", name)
	if err != nil {
		return err
	}
	// WAL mode lives in the file's header, and the schema is made here
	// too: closing the only connection copies both into the file, so a
	// store's main file always holds its tables (see migrate).
	db.SetMaxOpenConns(1)
	_, err = db.ExecContext(ctx, "PRAGMA journal_mode=WAL")
	if err == nil {
		var tx *sql.Tx
		if tx, err = db.BeginTx(ctx, nil); err == nil {
			if err = migrateIn(ctx, tx); err == nil {
				err = tx.Commit()
			} else {
				tx.Rollback()
			}
		}
	}
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("create: %w", err)
	}
	if fi, err := os.Stat(name); err != nil || fi.Size() == 0 {
		return fmt.Errorf("create: the new database file stayed empty (%v)", err)
	}
	err = os.Link(name, path)
	switch {
	case err == nil, errors.Is(err, fs.ErrExist):
		return nil
	default:
		// A file system without hard links: rename, unless someone was
		// quicker (renaming would replace their file).
		if _, serr := os.Stat(path); serr == nil {
			return nil
		}
		if rerr := os.Rename(name, path); rerr != nil {
			return fmt.Errorf("create: %w", errors.Join(err, rerr))
		}
		return nil
	}
}

// checkFile refuses an existing database file that is empty: SQLite would
// quietly make a new database of it, and the person would find their
// conversations gone instead of being told. A new file is made only where
// none exists.
func checkFile(path string) error {
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	} else if err != nil {
		return err
	}
	if fi.Size() > 0 {
		return nil
	}
	// SQLite would not read a write-ahead log beside an empty file: it
	// would start a new database and drop the log. What the log holds is
	// only a part of the store anyway, the pages written since the last
	// checkpoint.
	if wal, err := os.Stat(path + "-wal"); err == nil && wal.Size() > 0 {
		return damaged(path, fmt.Sprintf("the file is empty (0 bytes) beside a write-ahead log of %d bytes (%s-wal): "+
			"it was emptied, and the log alone cannot rebuild it. Keep both files as they are", wal.Size(), path))
	}
	return damaged(path, "the file is empty (0 bytes)")
}

// damaged says what is wrong with the file at path and what to do.
func damaged(path, what string) error {
	aside := filepath.Join(filepath.Dir(path), "damaged-"+time.Now().Format("20060102-150405"))
	return fmt.Errorf("%w: %s. baton will not start a new store on top of it. "+
		"Restore it from a backup, or move it away with the files beside it to start afresh: mkdir %s && mv %s* %s/",
		store.ErrDamaged, what, aside, path, aside)
}

// isDamage reports whether err says the file is not a usable database.
func isDamage(err error) bool {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return false
	}
	switch se.Code() & 0xff {
	case sqlite3.SQLITE_NOTADB, sqlite3.SQLITE_CORRUPT:
		return true
	}
	return false
}

// Path is the database file.
func (s *Store) Path() string { return s.path }

// Close releases both connection pools.
func (s *Store) Close() error {
	s.bgMu.Lock()
	first := !s.bgClosed
	if first {
		close(s.closing)
	}
	s.bgClosed = true
	s.bgMu.Unlock()
	if s.index != nil {
		<-s.index.done
	}
	s.bg.Wait()
	s.sweeper.Wait()
	if first && s.recorded {
		s.keepRecord(context.Background())
	}
	werr := s.stopWriter()
	s.stmtMu.Lock()
	for _, st := range s.rstmts {
		st.Close()
	}
	for _, st := range s.hstmts {
		st.Close()
	}
	s.rstmts, s.hstmts = map[string]*sql.Stmt{}, map[string]*sql.Stmt{}
	s.stmtMu.Unlock()
	var helpers, checkpoints error
	if s.helpers != nil {
		helpers = s.helpers.Close()
	}
	if s.checkpoints != nil {
		checkpoints = s.checkpoints.close()
	}
	return errors.Join(werr, checkpoints, s.w.Close(), s.r.Close(), helpers)
}

// setUp switches a new file to WAL and migrates it. While another process
// is doing the same, SQLite can answer SQLITE_BUSY at once, without waiting
// in its busy handler (a journal-mode change or WAL recovery is under way):
// such answers are retried until busyTimeout.
func (s *Store) setUp(ctx context.Context) error {
	if s.schemaCurrent(ctx) {
		// Nothing to migrate: no write lock is taken, so opening a store
		// a busy gateway writes to never waits for (or starves behind) it.
		return nil
	}
	deadline := time.Now().Add(busyTimeout)
	for wait := time.Millisecond; ; wait = min(2*wait, 50*time.Millisecond) {
		err := s.migrate(ctx)
		if err == nil || !isBusy(err) || time.Now().After(deadline) {
			return err
		}
		// A failed first connection stays broken: drop it and retry fresh.
		s.w.SetMaxIdleConns(0)
		s.w.SetMaxIdleConns(2)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
	}
}

// schemaCurrent reports, by a read that takes no lock a writer waits on,
// whether the file holds baton's tables at the newest schema. Anything
// else (an error, a new or older file) goes through migrate, which decides
// under the write lock.
func (s *Store) schemaCurrent(ctx context.Context) bool {
	var have int
	err := s.r.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&have)
	return err == nil && have == len(migrations)
}

// migrate applies pending migrations in one immediate transaction, so two
// processes opening a new file together apply each migration exactly once.
// A file without baton's tables is refused: create makes every new store
// with them, so such a file is another program's database, or a copy of
// a store's main file made without its write-ahead log.
func (s *Store) migrate(ctx context.Context) error {
	return s.migrateTx(ctx, func(tx *sql.Tx) error {
		var tables int
		if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM sqlite_master WHERE name = 'schema_migrations'`).Scan(&tables); err != nil {
			return fmt.Errorf("read the schema: %w", err)
		}
		if tables == 0 {
			return errNoSchema
		}
		return migrateIn(ctx, tx)
	})
}

// errNoSchema is a database file without baton's tables.
var errNoSchema = errors.New("the file holds no baton tables")

// migrateIn applies pending migrations in tx.
func migrateIn(ctx context.Context, tx *sql.Tx) error {
	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version INTEGER PRIMARY KEY, applied_at INTEGER NOT NULL)`); err != nil {
		return fmt.Errorf("migrations table: %w", err)
	}
	var have int
	if err := tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&have); err != nil {
		return fmt.Errorf("read schema version: %w", err)
	}
	if have > len(migrations) {
		return fmt.Errorf("schema version %d is newer than this baton knows (%d): upgrade baton", have, len(migrations))
	}
	for v := have + 1; v <= len(migrations); v++ {
		if _, err := tx.ExecContext(ctx, migrations[v-1]); err != nil {
			return fmt.Errorf("migration %d: %w", v, err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations(version, applied_at) VALUES (?, ?)`, v, now()); err != nil {
			return fmt.Errorf("record migration %d: %w", v, err)
		}
	}
	return nil
}

// SchemaVersion is the newest applied migration.
func (s *Store) SchemaVersion(ctx context.Context) (int, error) {
	var v int
	err := s.readRow(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&v)
	return v, err
}

// maxReadStmts bounds the reader's statement cache: the few queries built
// from their arguments (a list of platforms) have a handful of shapes, and
// any beyond the bound run unprepared.
const maxReadStmts = 128

// readStmt returns the reader pool's prepared statement for q, preparing
// it once: parsing SQL costs more than running most reads. database/sql
// prepares it again on each pool connection that runs it, once. It is nil
// (and the query runs unprepared) once the cache is full.
func (s *Store) readStmt(ctx context.Context, q string) (*sql.Stmt, error) {
	return s.poolStmt(ctx, s.r, s.rstmts, q)
}

// poolStmt is readStmt for pool, whose statements cache holds.
func (s *Store) poolStmt(ctx context.Context, pool *sql.DB, cache map[string]*sql.Stmt, q string) (*sql.Stmt, error) {
	s.stmtMu.Lock()
	st, ok := cache[q]
	full := len(cache) >= maxReadStmts
	s.stmtMu.Unlock()
	if ok || full {
		return st, nil
	}
	st, err := pool.PrepareContext(ctx, q)
	if err != nil {
		return nil, err
	}
	s.stmtMu.Lock()
	defer s.stmtMu.Unlock()
	if prev, ok := cache[q]; ok { // prepared meanwhile by another caller
		st.Close()
		return prev, nil
	}
	cache[q] = st
	return st, nil
}

// snapshot is a read transaction on one of the store's read pools.
type snapshot struct {
	*sql.Tx
	s      *Store
	helper bool // on the helpers' pool, not the readers'
}

// beginRead starts a read transaction on the readers' pool, or with
// helper on the helpers'.
func (s *Store) beginRead(ctx context.Context, helper bool) (snapshot, error) {
	pool := s.r
	if helper {
		pool = s.helpers
	}
	tx, err := pool.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	return snapshot{Tx: tx, s: s, helper: helper}, err
}

// stmt is q prepared for the snapshot's connection, once per connection
// for the statements Open prepared on the pool; the caller closes it
// (which leaves the connection's statement prepared). It never prepares
// on the pool itself: that waits for a free connection, which every
// other snapshot may hold while waiting for the same.
func (sn snapshot) stmt(ctx context.Context, q string) (*sql.Stmt, error) {
	cache := sn.s.rstmts
	if sn.helper {
		cache = sn.s.hstmts
	}
	sn.s.stmtMu.Lock()
	st := cache[q]
	sn.s.stmtMu.Unlock()
	if st == nil {
		return sn.PrepareContext(ctx, q)
	}
	return sn.StmtContext(ctx, st), nil
}

// limitClause is " LIMIT n" written into the SQL: SQLite plans a bound
// LIMIT by its value, so a statement with "LIMIT ?" is prepared again on
// every run, which costs as much as the query itself. The few limits
// callers use keep the statement cache small.
func limitClause(n int) string { return " LIMIT " + strconv.Itoa(n) }

// read runs a read on the reader pool through its prepared statement.
func (s *Store) read(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	st, err := s.readStmt(ctx, q)
	var rows *sql.Rows
	if err != nil || st == nil {
		rows, err = s.r.QueryContext(ctx, q, args...) // the error surfaces here, as database/sql does
	} else {
		rows, err = st.QueryContext(ctx, args...)
	}
	return rows, Explain(s.path, err)
}

// readRow is read for one row.
//
// A one-row lookup takes microseconds, so once ctx is checked it runs
// detached from it: watching a context costs the driver and database/sql
// a goroutine each per query, more than the lookup itself.
func (s *Store) readRow(ctx context.Context, q string, args ...any) *sql.Row {
	st, err := s.readStmt(ctx, q)
	if err != nil || st == nil || ctx.Err() != nil {
		return s.r.QueryRowContext(ctx, q, args...) // the error surfaces from Scan
	}
	return st.QueryRowContext(context.WithoutCancel(ctx), args...)
}

// migrateTx runs fn in a write transaction (BEGIN IMMEDIATE) straight on
// the writer pool: migrations run before the writer goroutine starts.
func (s *Store) migrateTx(ctx context.Context, fn func(*sql.Tx) error) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		tx.Rollback()
		return err
	}
	return tx.Commit()
}

// Times are nanoseconds since 1970 in the file, kept to the microsecond
// as every store keeps them (store.Micro); 0 is none.
func now() int64 { return store.Micro(time.Now()).UnixNano() }

func fromNanos(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return store.Micro(time.Unix(0, n))
}

func toNanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return store.Micro(t).UnixNano()
}

// newID is 16 random hex characters: short enough to type a prefix of.
func newID() string {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(fmt.Sprintf("crypto/rand: %v", err)) // cannot happen on supported platforms
	}
	return hex.EncodeToString(b[:])
}

func isConstraint(err error, code int) bool {
	var se *sqlite.Error
	return errors.As(err, &se) && se.Code() == code
}

func isUnique(err error) bool {
	return isConstraint(err, sqlite3.SQLITE_CONSTRAINT_UNIQUE) || isConstraint(err, sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY)
}

func isBusy(err error) bool {
	var se *sqlite.Error
	return errors.As(err, &se) && (se.Code()&0xff == sqlite3.SQLITE_BUSY || se.Code()&0xff == sqlite3.SQLITE_LOCKED)
}

// isTooBig reports a string or blob over SQLite's length limit.
func isTooBig(err error) bool {
	var se *sqlite.Error
	return errors.As(err, &se) && se.Code()&0xff == sqlite3.SQLITE_TOOBIG
}

func isForeignKey(err error) bool { return isConstraint(err, sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY) }

// escapeLike makes s match literally inside a LIKE pattern with ESCAPE '\'.
func escapeLike(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
	return r.Replace(s)
}

// Check runs SQLite's quick integrity check over the whole file; a
// problem found wraps store.ErrDamaged and names the first few.
func (s *Store) Check(ctx context.Context) error {
	rows, err := s.read(ctx, "PRAGMA quick_check(10)")
	if err != nil {
		if isDamage(err) {
			return damaged(s.path, err.Error())
		}
		return fmt.Errorf("check store %s: %w", s.path, err)
	}
	defer rows.Close()
	var problems []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			return fmt.Errorf("check store %s: %w", s.path, err)
		}
		if line != "ok" {
			problems = append(problems, line)
		}
	}
	if err := rows.Err(); err != nil {
		if isDamage(err) {
			return damaged(s.path, err.Error())
		}
		return fmt.Errorf("check store %s: %w", s.path, err)
	}
	if len(problems) > 0 {
		return damaged(s.path, "the integrity check found: "+strings.Join(problems, "; "))
	}
	return nil
}
