package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"sync/atomic"
	"time"

	"modernc.org/sqlite"
)

// Checkpoints run in the background. SQLite's own automatic checkpoint
// runs inside the commit that takes the write-ahead log past 1,000 pages:
// that commit waits while the log is copied into the database file and
// both files are synced. In a store that keeps writing, that was about a
// quarter of an append's time, paid by whichever turn happened to commit
// then. Here the writer counts the pages it commits and, past
// checkpointPages, wakes a goroutine that checkpoints on a connection of
// its own. The checkpoint is PASSIVE: it copies what no reader still
// needs and never blocks the writer or a reader, so the next writes go on
// meanwhile.
//
// SQLite starts the log afresh only when a write begins and finds all of
// it copied. Writes go on during a checkpoint, so once woken the
// checkpointer runs again every catchUpWait until a run finds the log all
// copied with no transaction of the writer's under way when it began or
// begun while it ran: between a person's turns it catches up and the log
// starts afresh. Under writes that never pause, the writer connection's own
// automatic checkpoint, at backstopPages, does that.
//
// A store that stops writing is checkpointed too, idleWait after its last
// commit: its file then holds everything, so a copy of state.db alone
// made while baton runs idle (not a backup: `baton backup` makes one) is
// not a store that lost its latest conversations.
const (
	checkpointPages = 1000 // SQLite's own default mark
	backstopPages   = 4 * checkpointPages
	catchUpWait     = 50 * time.Millisecond
	idleWait        = time.Second
)

// checkpointer checkpoints the store's write-ahead log when woken.
type checkpointer struct {
	db      *sql.DB // one connection, used for nothing else
	wake    chan struct{}
	stop    context.CancelFunc
	stopped chan struct{}

	pending int // pages committed since the last wake; the writer's leader only
	// begun and ended count the writer's transactions (committed or not):
	// a checkpoint has caught up only if none was under way when it began
	// and none began while it ran.
	begun, ended atomic.Int64
	runs         atomic.Int64 // checkpoints run; tests read it
	// woken counts wakes; caughtUp is woken as it was when the latest
	// checkpoint that caught up began. Equal: nothing is due (idle).
	woken, caughtUp atomic.Int64

	// lastCommit is when the writer last committed (Unix nanoseconds);
	// dirty, that it committed since the checkpointer was last woken.
	lastCommit atomic.Int64
	dirty      atomic.Bool
	arm        chan struct{} // dirty became true: time the idle checkpoint
	noIdle     bool          // no checkpoint for being idle (tests)

	// The log as it was when the store opened, to see it deleted or
	// replaced under the running store (logGone); the writer's leader only.
	walPath string
	wal     os.FileInfo
	walGone bool
}

// The log deleted under a running store. Every process that had the store
// open goes on writing into the deleted file, which vanishes with the last
// of them: a kill then loses every commit since the last checkpoint (SQLite
// on the next start finds no log). So the writer looks at the log's path
// after each commit (a stat: well under a microsecond), and once it is
// deleted or replaced, checkpoints on the writer connection after every
// commit, before the commit's writers are answered: SQLite copies the
// deleted file's pages into the store's file (all of them but those a
// reader's open snapshot still needs, copied after the next commit) and
// syncs it, so what a writer was told is stored is in the file. It says so in the log once;
// a clean restart gives the store a log of its own again.

// startCheckpointer opens the checkpointer's connection (lazily, on its
// first checkpoint) and starts its goroutine.
func startCheckpointer(path, dsn string, noIdle bool) (*checkpointer, error) {
	db, err := sql.Open("sqlite", path+"?"+dsn)
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	// An idle store lets the connection go.
	db.SetConnMaxIdleTime(time.Minute)
	ctx, stop := context.WithCancel(context.Background())
	c := &checkpointer{db: db, wake: make(chan struct{}, 1), stop: stop, stopped: make(chan struct{}), walPath: path + "-wal", noIdle: noIdle, arm: make(chan struct{}, 1)}
	c.wal, _ = os.Stat(c.walPath) // the store's connections are open: it is there
	go c.run(ctx)
	return c, nil
}

func (c *checkpointer) run(ctx context.Context) {
	defer close(c.stopped)
	for {
		var idle <-chan time.Time
		if c.dirty.Load() && !c.noIdle {
			idle = time.After(idleWait - time.Since(time.Unix(0, c.lastCommit.Load())))
		}
		select {
		case <-ctx.Done():
			return
		case <-c.arm:
			continue
		case <-c.wake:
		case <-idle:
			if time.Since(time.Unix(0, c.lastCommit.Load())) < idleWait {
				continue // committed meanwhile: wait on
			}
			c.woken.Add(1)
		}
		c.dirty.Store(false)
		for {
			wakes, begun := c.woken.Load(), c.begun.Load()
			quiet := c.ended.Load() == begun
			if c.checkpoint(ctx) && quiet && c.begun.Load() == begun {
				c.caughtUp.Store(wakes)
				break
			}
			select {
			case <-ctx.Done():
				return
			case <-c.wake:
			case <-time.After(catchUpWait):
			}
		}
	}
}

// checkpoint runs one PASSIVE checkpoint and reports whether the log is
// all copied now (or trying again would not help). Another process
// checkpointing at the same time makes it busy: not caught up.
func (c *checkpointer) checkpoint(ctx context.Context) (caughtUp bool) {
	var busy, frames, copied int
	err := c.db.QueryRowContext(ctx, "PRAGMA wal_checkpoint(PASSIVE)").Scan(&busy, &frames, &copied)
	c.runs.Add(1)
	if err != nil {
		if ctx.Err() == nil {
			slog.Warn("background checkpoint of the store", "err", err)
		}
		return true // the writer's own checkpoint is the backstop
	}
	return busy == 0 && copied >= frames
}

// idle reports whether a checkpoint that began after the latest wake has
// caught up; tests wait for it.
func (c *checkpointer) idle() bool { return c.caughtUp.Load() == c.woken.Load() }

// committed counts the pages the writer connection has written to the log
// since it was last asked, and wakes the checkpointer past the mark.
// Called by the writer after each commit.
func (c *checkpointer) committed(conn *sql.Conn) {
	if c.logGone() {
		c.rescue(conn)
		return
	}
	c.lastCommit.Store(time.Now().UnixNano())
	if !c.dirty.Load() {
		c.dirty.Store(true)
		select { // arm the idle checkpoint
		case c.arm <- struct{}{}:
		default:
		}
	}
	_ = conn.Raw(func(dc any) error {
		if st, ok := dc.(sqlite.DBStatus); ok {
			n, _, err := st.Status(sqlite.DBStatusCacheWrite, true)
			if err == nil {
				c.pending += n
			}
		}
		return nil
	})
	if c.pending < checkpointPages {
		return
	}
	c.pending = 0
	c.woken.Add(1)
	select {
	case c.wake <- struct{}{}:
	default: // one is running or already due
	}
}

// begin and end bracket each of the writer's transactions.
func (c *checkpointer) begin() { c.begun.Add(1) }
func (c *checkpointer) end()   { c.ended.Add(1) }

// close stops the goroutine and releases the connection.
func (c *checkpointer) close() error {
	c.stop()
	<-c.stopped
	return c.db.Close()
}

// logGone reports whether the store's log is no longer at its path.
func (c *checkpointer) logGone() bool {
	fi, err := os.Stat(c.walPath)
	switch {
	case c.wal == nil:
		c.wal = fi // it was not there at open: the first seen is the one
		return false
	case errors.Is(err, fs.ErrNotExist):
		return true
	case err != nil:
		return c.walGone // cannot tell: as it was
	}
	return !os.SameFile(c.wal, fi)
}

// rescue copies the deleted log into the store's file (see logGone).
func (c *checkpointer) rescue(conn *sql.Conn) {
	if !c.walGone {
		c.walGone = true
		slog.Error("the store's write-ahead log was deleted or replaced while baton runs: from now on every commit is "+
			"copied into the store's file at once (slower). Stop baton cleanly and start it again (not with kill -9)", "file", c.walPath)
	}
	var busy, frames, copied int
	err := conn.QueryRowContext(context.Background(), "PRAGMA wal_checkpoint(PASSIVE)").Scan(&busy, &frames, &copied)
	if err != nil {
		slog.Error("copy the deleted write-ahead log into the store's file", "file", c.walPath, "err", err)
	}
	c.runs.Add(1)
}
