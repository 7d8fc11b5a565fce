// Package postgres is baton's store on a Postgres server, so that
// processes on several machines share one store with nothing but its URL
// between them.
//
// It keeps what the SQLite store keeps, under the same contract
// (storetest.Run), with these differences, all written down here:
//
//   - Attachments' bytes are rows (files.data, bytea), not files beside
//     the store: a second machine needs only the URL. A file is read
//     whole into memory while it is put (the bound is
//     store.DefaultMaxFileBytes), and streamed from memory when opened.
//   - There is no folder of files on this machine's disk: the store
//     implements neither store.FilePather nor store.SessionFiler, so a
//     file is named without a path (store.SessionFileOf gives "") and read
//     through Files.OpenFile.
//   - Times are bigint microseconds since 1970 (0 for none), the precision
//     the contract promises; the words people and models wrote are bytea
//     columns, kept byte for byte (store's text contract), and the search
//     index (messages.words) is built from them here, cut into words as
//     the store's search contract says.
//   - Each process keeps the transcripts it read (transcriptcache), as
//     the SQLite store does, checked against the session's generation and
//     next seq at every load: a load reads one row, and the messages
//     stored since.
//   - Nothing detects a lost store (SQLite's record beside its file): a
//     server's own backups and replication are the place for that.
package postgres

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/baton-agent/baton/internal/store"
	"github.com/baton-agent/baton/internal/store/transcriptcache"
)

// Store is the Postgres implementation of store.Store.
type Store struct {
	pool         *pgxpool.Pool
	where        string // the server and database, without credentials, for errors
	maxFileBytes int64
	transcripts  *transcriptcache.Cache // nil when disabled
}

var _ store.Store = (*Store)(nil)

// IsURL reports whether s names a Postgres store (postgres:// or
// postgresql://).
func IsURL(s string) bool {
	return strings.HasPrefix(s, "postgres://") || strings.HasPrefix(s, "postgresql://")
}

// Redact is u with any password removed, fit for logs and errors.
func Redact(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return "a postgres:// URL that does not parse"
	}
	if p.User != nil {
		p.User = url.User(p.User.Username())
	}
	q := p.Query()
	if q.Has("password") {
		q.Set("password", "xxxxx")
		p.RawQuery = q.Encode()
	}
	return p.String()
}

// Open connects to the database at rawURL and applies pending
// migrations. Several processes, on any machines, may open one database
// at once.
func Open(ctx context.Context, rawURL string, opts ...Option) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(rawURL)
	if err != nil {
		// pgx's message may quote the URL; say only what is wrong.
		return nil, fmt.Errorf("open store %s: the URL does not parse (postgres://user:password@host:port/database): %w",
			Redact(rawURL), store.ErrInvalid)
	}
	where := fmt.Sprintf("postgres %s:%d/%s", cfg.ConnConfig.Host, cfg.ConnConfig.Port, cfg.ConnConfig.Database)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", where, err)
	}
	s := &Store{pool: pool, where: where, maxFileBytes: store.DefaultMaxFileBytes,
		transcripts: transcriptcache.New(transcriptcache.DefaultMessages, transcriptcache.DefaultBytes)}
	for _, o := range opts {
		o(s)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("open store: %s", explainConnect(cfg.ConnConfig.Host, cfg.ConnConfig.Port, cfg.ConnConfig.Database, cfg.ConnConfig.User, err))
	}
	if err := s.migrate(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("open store %s: %w", where, err)
	}
	// Leftovers cost only space: a sweep that fails is tried at the next open.
	if err := s.sweepFiles(ctx); err != nil {
		slog.Warn("remove files of the store no message names", "store", where, "err", err)
	}
	return s, nil
}

// explainConnect says in one line why the server could not be reached
// and what to check; never the password.
func explainConnect(host string, port uint16, db, user string, err error) string {
	at := fmt.Sprintf("%s:%d", host, port)
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch pe.Code {
		case "28P01", "28000":
			return fmt.Sprintf("the Postgres server at %s refused user %q (%s): check the user and password in the store URL and the server's pg_hba.conf", at, user, pe.Message)
		case "3D000":
			return fmt.Sprintf("the Postgres server at %s has no database %q: create it (createdb %s) or fix the store URL", at, db, db)
		}
		return fmt.Sprintf("the Postgres server at %s answered: %s (%s)", at, pe.Message, pe.Code)
	}
	return fmt.Sprintf("cannot reach the Postgres server at %s: check that it runs, listens there (listen_addresses, port) and that no firewall is in the way (%s)",
		at, redactErr(err))
}

// redactErr is the cause of a failed connection in one line: pgx's own
// message lists every address tried, on lines of their own, and names
// the user and database.
func redactErr(err error) string {
	for {
		next := errors.Unwrap(err)
		if next == nil {
			break
		}
		err = next
	}
	msg := strings.Join(strings.Fields(err.Error()), " ")
	if i := strings.Index(msg, "password="); i >= 0 {
		msg = msg[:i] + "password=xxxxx"
	}
	return msg
}

// Close closes the connection pool.
func (s *Store) Close() error {
	s.pool.Close()
	return nil
}

// Option changes how Open sets up a store.
type Option func(*Store)

// WithoutTranscriptCache makes every transcript load read all its rows
// from the server, as a process that never read the session before does.
func WithoutTranscriptCache() Option { return func(s *Store) { s.transcripts = nil } }

// WithMaxFileBytes sets PutFile's bound (store.DefaultMaxFileBytes
// otherwise).
func WithMaxFileBytes(n int64) Option { return func(s *Store) { s.maxFileBytes = n } }

// micros is t as stored: microseconds since 1970, 0 for none.
func micros(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMicro()
}

func fromMicros(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.UnixMicro(n)
}

func nowMicros() int64 { return time.Now().UnixMicro() }

// newID is 16 random hex characters, as the SQLite store makes them.
func newID() string {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(fmt.Sprintf("crypto/rand: %v", err))
	}
	return hex.EncodeToString(b[:])
}

func pgCode(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

func isUnique(err error) bool     { return pgCode(err) == "23505" }
func isForeignKey(err error) bool { return pgCode(err) == "23503" }

// notText turns Postgres's refusal of a name that is not text (a NUL
// byte, invalid UTF-8) into store.ErrInvalid, as the contract says.
func notText(err error) error {
	switch pgCode(err) {
	case "22021", "22P05":
		return fmt.Errorf("%w: %w", store.ErrInvalid, err)
	}
	return err
}

// isText reports whether every name could be stored (store.CheckNames):
// a lookup by one that could not finds nothing, as in every store, and
// is not sent to the server, which would refuse it.
func isText(names ...string) bool {
	for _, n := range names {
		if !utf8.ValidString(n) || strings.IndexByte(n, 0) >= 0 {
			return false
		}
	}
	return true
}

// tx runs fn in a transaction, committing when it returns nil.
func (s *Store) tx(ctx context.Context, fn func(pgx.Tx) error) error {
	return pgx.BeginFunc(ctx, s.pool, fn)
}

// affected turns an UPDATE/DELETE that touched nothing into ErrNotFound.
func affected(tag pgconn.CommandTag, err error, what string) error {
	if err != nil {
		return fmt.Errorf("%s: %w", what, notText(err))
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("%s: %w", what, store.ErrNotFound)
	}
	return nil
}

// escapeLike makes s match literally inside a LIKE pattern with ESCAPE '\'.
func escapeLike(s string) string {
	return strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(s)
}

// migrate applies pending migrations in one transaction, holding an
// advisory lock so that processes opening a new database together apply
// each migration exactly once.
func (s *Store) migrate(ctx context.Context) error {
	return s.tx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(7362951)`); err != nil {
			return fmt.Errorf("lock for migrations: %w", err)
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
			version integer PRIMARY KEY, applied_at bigint NOT NULL)`); err != nil {
			return fmt.Errorf("migrations table: %w", err)
		}
		var have int
		if err := tx.QueryRow(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&have); err != nil {
			return fmt.Errorf("read schema version: %w", err)
		}
		if have > len(migrations) {
			return fmt.Errorf("schema version %d is newer than this baton knows (%d): upgrade baton", have, len(migrations))
		}
		for v := have + 1; v <= len(migrations); v++ {
			if _, err := tx.Exec(ctx, migrations[v-1]); err != nil {
				return fmt.Errorf("migration %d: %w", v, err)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version, applied_at) VALUES ($1, $2)`, v, nowMicros()); err != nil {
				return fmt.Errorf("record migration %d: %w", v, err)
			}
		}
		return nil
	})
}

// SchemaVersion is the newest applied migration.
func (s *Store) SchemaVersion(ctx context.Context) (int, error) {
	var v int
	err := s.pool.QueryRow(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&v)
	return v, err
}
