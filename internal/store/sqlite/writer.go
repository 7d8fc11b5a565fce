package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
)

// Group commit. Every write of the store runs on the writer connection,
// one batch at a time. Writes queued while a transaction runs are done
// together in the next one, each in a savepoint of its own, so a write
// that fails is undone alone and gets its own error while the others
// commit. Committing is most of a small write's cost (WAL frames for each
// page it touched, the WAL index and its locks), and writes queued at
// the same time mostly touch the same pages, so a batch costs little more
// than one write. Every caller returns only once its write is committed
// (or failed): what the store promises about a write returned holds as
// before.
//
// A write that finds nobody writing runs its batch on its own goroutine
// (the usual case: one person, one turn at a time), which saves two
// goroutine switches per write. If writes queued meanwhile, a goroutine
// goes on committing them until the queue is empty, so the caller that
// led returns once its own write is done.
//
// A statement runs detached from its caller's context: SQLite answers an
// interrupted write inside a transaction by rolling the whole transaction
// back, which would undo the other writes of the batch. A caller that
// gives up before its write started withdraws it; once started, it waits
// the batch out (a few milliseconds).

// maxBatch bounds the writes committed together, so the write lock, which
// the other process on the file waits for, is held briefly.
const maxBatch = 128

// maxWriteStmts bounds the writer's prepared statements; the store's
// writes have a fixed set of shapes, far fewer.
const maxWriteStmts = 128

// errStoreClosed answers writes made after Close.
var errStoreClosed = errors.New("the store is closed")

// errBatchRolledBack answers the writes of a batch that SQLite rolled back
// whole because of another write's failure (a full disk, an I/O error):
// none of them is stored, and each may be tried again.
var errBatchRolledBack = errors.New("not stored: the transaction it shared with another write was rolled back")

// A write op is queued, then either started by the writer or withdrawn
// by its caller: never both.
const (
	opQueued int32 = iota
	opStarted
	opWithdrawn
)

type writeOp struct {
	fn    func(tx *wtx) error
	one   bool // fn runs a single statement (see commit)
	state atomic.Int32
	done  chan error // buffered: the writer never waits for the caller
	taken bool       // out of the queue, into a batch; guarded by writer.mu
}

// writer runs every write on the writer connection.
type writer struct {
	conn        *sql.Conn
	stmts       map[string]*sql.Stmt // prepared on conn; used by the leader only
	checkpoints *checkpointer        // told of each commit; nil in none

	mu      sync.Mutex
	idle    *sync.Cond // signalled when leading ends
	queue   []*writeOp
	leading bool // a goroutine runs batches; the queue is empty when nobody does
	closed  bool

	// waiting counts writes queued and not yet taken into a batch;
	// commits counts transactions committed. Tests read them.
	waiting, commits atomic.Int64
}

// startWriter takes the writer connection.
func (s *Store) startWriter(ctx context.Context) error {
	conn, err := s.w.Conn(ctx)
	if err != nil {
		return err
	}
	w := &writer{conn: conn, stmts: map[string]*sql.Stmt{}, checkpoints: s.checkpoints}
	w.idle = sync.NewCond(&w.mu)
	s.writer = w
	return nil
}

// stopWriter refuses new writes, waits for the batches of those queued,
// and releases the connection.
func (s *Store) stopWriter() error {
	w := s.writer
	if w == nil {
		return nil
	}
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return nil
	}
	w.closed = true
	for w.leading {
		w.idle.Wait()
	}
	w.mu.Unlock()
	for _, st := range w.stmts {
		st.Close()
	}
	return w.conn.Close()
}

// next takes the next batch off the queue, or ends leading when the queue
// is empty. Called with w.mu held.
func (w *writer) next() []*writeOp {
	if len(w.queue) == 0 {
		w.leading = false
		w.idle.Broadcast()
		return nil
	}
	n := min(len(w.queue), maxBatch)
	batch := make([]*writeOp, n)
	copy(batch, w.queue)
	clear(w.queue[:n])
	w.queue = w.queue[n:]
	if len(w.queue) == 0 {
		w.queue = nil // let the backing array go
	}
	for _, op := range batch {
		op.taken = true
	}
	w.waiting.Add(-int64(n))
	return batch
}

// lead commits batches until the queue is empty.
func (w *writer) lead() {
	for {
		w.mu.Lock()
		batch := w.next()
		w.mu.Unlock()
		if batch == nil {
			return
		}
		w.commit(batch)
	}
}

// commit runs the batch's writes in one transaction and answers each.
// Every answer, a failure's too, waits for the transaction's end, so that
// a caller who reads after its answer sees what the batch stored (the row
// a conflicting insert ran into, say).
func (w *writer) commit(batch []*writeOp) {
	if w.checkpoints != nil {
		w.checkpoints.begin()
		defer w.checkpoints.end()
	}
	if len(batch) == 1 && batch[0].one {
		w.commitOne(batch[0])
		return
	}
	var begun bool
	savepoints := len(batch) > 1
	var done []*writeOp // ran without error, answered after the commit
	var failed []failure
	defer func() {
		for _, f := range failed {
			f.op.done <- f.err
		}
	}()
	for i, op := range batch {
		if !op.state.CompareAndSwap(opQueued, opStarted) {
			continue // its caller gave up
		}
		if !begun {
			if _, err := w.exec("BEGIN IMMEDIATE"); err != nil {
				op.done <- err
				for _, rest := range batch[i+1:] {
					if rest.state.CompareAndSwap(opQueued, opStarted) {
						rest.done <- err
					}
				}
				return
			}
			begun = true
		}
		if !savepoints {
			if err := op.fn(&wtx{w: w}); err != nil {
				w.rollback()
				op.done <- err
				return
			}
			done = append(done, op)
			continue
		}
		if _, err := w.exec("SAVEPOINT op"); err != nil {
			w.abort(op, err, done, batch[i+1:])
			return
		}
		err := op.fn(&wtx{w: w})
		if err == nil {
			if _, err := w.exec("RELEASE op"); err != nil {
				w.abort(op, err, done, batch[i+1:])
				return
			}
			done = append(done, op)
			continue
		}
		// Undo this write alone. If SQLite rolled the whole transaction
		// back already, the savepoint is gone with it.
		if _, rerr := w.exec("ROLLBACK TO op"); rerr != nil {
			w.abort(op, err, done, batch[i+1:])
			return
		}
		if _, rerr := w.exec("RELEASE op"); rerr != nil {
			w.abort(op, err, done, batch[i+1:])
			return
		}
		failed = append(failed, failure{op, err})
	}
	if !begun {
		return
	}
	if _, err := w.exec("COMMIT"); err != nil {
		w.rollback()
		for _, op := range done {
			op.done <- err
		}
		return
	}
	w.commits.Add(1)
	if w.checkpoints != nil {
		w.checkpoints.committed(w.conn)
	}
	for _, op := range done {
		op.done <- nil
	}
}

// commitOne runs a lone single-statement write as SQLite's own
// transaction: the statement takes the write lock as it starts (waiting
// under the busy timeout, as BEGIN IMMEDIATE does) and commits as it
// ends, or undoes itself whole. The same write and the same durability as
// BEGIN IMMEDIATE, statement, COMMIT, in one statement instead of three:
// a tenth of a small write's time.
func (w *writer) commitOne(op *writeOp) {
	if !op.state.CompareAndSwap(opQueued, opStarted) {
		return // its caller gave up
	}
	err := op.fn(&wtx{w: w})
	if err == nil {
		w.commits.Add(1)
		if w.checkpoints != nil {
			w.checkpoints.committed(w.conn)
		}
	}
	op.done <- err
}

// failure is a write of a batch that failed alone, and why.
type failure struct {
	op  *writeOp
	err error
}

// abort ends a batch whose transaction is lost or cannot go on: failed
// gets err, the writes done before it are not stored, and the writes
// after it run in a new transaction.
func (w *writer) abort(failed *writeOp, err error, done, rest []*writeOp) {
	w.rollback()
	failed.done <- err
	for _, op := range done {
		op.done <- fmt.Errorf("%w (%v)", errBatchRolledBack, err)
	}
	if len(rest) > 0 {
		w.commit(rest)
	}
}

func (w *writer) rollback() {
	_, _ = w.exec("ROLLBACK") // fails harmlessly when SQLite rolled back already
}

// stmt is q prepared on the writer connection, once.
func (w *writer) stmt(q string) (*sql.Stmt, error) {
	if st, ok := w.stmts[q]; ok {
		return st, nil
	}
	if len(w.stmts) >= maxWriteStmts {
		return nil, nil
	}
	st, err := w.conn.PrepareContext(context.Background(), q)
	if err != nil {
		return nil, err
	}
	w.stmts[q] = st
	return st, nil
}

func (w *writer) exec(q string, args ...any) (sql.Result, error) {
	st, err := w.stmt(q)
	if err != nil {
		return nil, err
	}
	if st == nil {
		return w.conn.ExecContext(context.Background(), q, args...)
	}
	return st.ExecContext(context.Background(), args...)
}

// wtx is the writer connection inside a write's transaction (or its
// savepoint). Statements are prepared once and run without a context:
// see the comment at the top of this file.
type wtx struct{ w *writer }

// Exec runs a statement that returns no rows.
func (tx *wtx) Exec(q string, args ...any) (sql.Result, error) { return tx.w.exec(q, args...) }

// QueryRow runs a statement that returns at most one row; scan it before
// running the next statement.
func (tx *wtx) QueryRow(q string, args ...any) *sql.Row {
	st, err := tx.w.stmt(q)
	if err != nil || st == nil {
		// Let the error surface from Scan, as database/sql does.
		return tx.w.conn.QueryRowContext(context.Background(), q, args...)
	}
	return st.QueryRowContext(context.Background(), args...)
}

// Query runs a statement that returns rows; close them before running
// the next statement.
func (tx *wtx) Query(q string, args ...any) (*sql.Rows, error) {
	st, err := tx.w.stmt(q)
	if err != nil {
		return nil, err
	}
	if st == nil {
		return tx.w.conn.QueryContext(context.Background(), q, args...)
	}
	return st.QueryContext(context.Background(), args...)
}

// tx runs fn as one write: in a transaction shared with the writes queued
// beside it, undone alone if it fails. It returns once the write is
// committed, or with why not.
func (s *Store) tx(ctx context.Context, fn func(tx *wtx) error) error {
	return s.write(ctx, &writeOp{fn: fn})
}

// write queues op and waits for its answer (see tx), saying what to do
// about a failure SQLite's words do not (Explain).
func (s *Store) write(ctx context.Context, op *writeOp) error {
	return Explain(s.path, s.queue(ctx, op))
}

// queue is write without the explanation.
func (s *Store) queue(ctx context.Context, op *writeOp) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	w := s.writer
	op.done = make(chan error, 1)
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return errStoreClosed
	}
	w.queue = append(w.queue, op)
	w.waiting.Add(1)
	if !w.leading {
		// Nobody writes: run the batch here. The queue was empty, so this
		// write is in the first batch.
		w.leading = true
		batch := w.next()
		w.mu.Unlock()
		w.commit(batch)
		w.mu.Lock()
		if len(w.queue) > 0 {
			go w.lead()
		} else {
			w.next() // ends leading
		}
		w.mu.Unlock()
		return <-op.done
	}
	w.mu.Unlock()
	select {
	case err := <-op.done:
		return err
	case <-ctx.Done():
		w.mu.Lock()
		if !op.taken {
			w.queue = slices.DeleteFunc(w.queue, func(o *writeOp) bool { return o == op })
			w.waiting.Add(-1)
			w.mu.Unlock()
			return ctx.Err()
		}
		w.mu.Unlock()
		if op.state.CompareAndSwap(opQueued, opWithdrawn) {
			return ctx.Err()
		}
		return <-op.done // started: it ends with its batch
	}
}

// exec runs one statement as a write (see tx).
func (s *Store) exec(ctx context.Context, q string, args ...any) (sql.Result, error) {
	var res sql.Result
	err := s.write(ctx, &writeOp{one: true, fn: func(tx *wtx) (err error) {
		res, err = tx.Exec(q, args...)
		return err
	}})
	return res, err
}

// queryRow runs one statement that returns at most one row as a write
// (see tx), handing the row to scan inside the write.
func (s *Store) queryRow(ctx context.Context, scan func(*sql.Row) error, q string, args ...any) error {
	return s.write(ctx, &writeOp{one: true, fn: func(tx *wtx) error { return scan(tx.QueryRow(q, args...)) }})
}
