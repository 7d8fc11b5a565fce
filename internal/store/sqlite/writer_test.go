package sqlite

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/store"
	"github.com/baton-agent/baton/internal/testutil"
)

// blockingWrite queues a write that, once started, waits until release is
// called.
func blockingWrite(t *testing.T, s *Store) (started <-chan struct{}, release func()) {
	t.Helper()
	start, proceed := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- s.tx(context.Background(), func(*wtx) error {
			close(start)
			<-proceed
			return nil
		})
	}()
	var once sync.Once
	release = func() {
		once.Do(func() {
			close(proceed)
			if err := testutil.Receive(t, done, "the blocking write to end"); err != nil {
				t.Errorf("blocking write: %v", err)
			}
		})
	}
	t.Cleanup(release)
	return start, release
}

// holdWriter occupies the writer with a blocking write, so that the
// writes made meanwhile queue up and are committed together in the next
// batch.
func holdWriter(t *testing.T, s *Store) (release func()) {
	t.Helper()
	started, release := blockingWrite(t, s)
	testutil.Receive(t, started, "the holding write to start")
	return release
}

// waitQueued waits until n writes wait for the writer.
func waitQueued(t *testing.T, s *Store, n int64) {
	t.Helper()
	testutil.Eventually(t, 10*time.Second, func() bool { return s.writer.waiting.Load() == n },
		fmt.Sprintf("%d writes to queue", n))
}

func openWriterTest(t *testing.T) (*Store, store.Session) {
	t.Helper()
	ctx := context.Background()
	// Nothing but the test writes: these tests count the writes queued,
	// and the background index and idle checkpoints would queue theirs.
	s, err := Open(ctx, filepath.Join(t.TempDir(), "s.db"), WithoutBackgroundIndex(), WithoutIdleCheckpoints())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	u, err := s.CreateUser(ctx, "owner")
	if err != nil {
		t.Fatal(err)
	}
	sess, err := s.CreateSession(ctx, store.Session{OwnerID: u.ID, Platform: "cli"})
	if err != nil {
		t.Fatal(err)
	}
	return s, sess
}

// Writes queued together commit in one transaction; one that fails is
// undone alone and says why, the others are stored.
func TestBatchedWritesFailAlone(t *testing.T) {
	s, sess := openWriterTest(t)
	ctx := context.Background()
	release := holdWriter(t, s)
	before := s.writer.commits.Load()

	const n = 40
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			id := sess.ID
			if i%4 == 3 {
				id = "no-such-session"
			}
			_, errs[i] = s.AppendMessages(ctx, id, store.Message{Role: store.RoleUser, Content: fmt.Sprint("m", i)})
		})
	}
	waitQueued(t, s, n)
	release()
	wg.Wait()

	// The holding write's commit, then one for all of them.
	if got := s.writer.commits.Load() - before; got != 2 {
		t.Errorf("%d writes queued together took %d commits, want 1 after the holding write's", n, got-1)
	}
	stored := map[string]bool{}
	msgs, err := s.Transcript(ctx, sess.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range msgs {
		stored[m.Content] = true
	}
	for i, err := range errs {
		want := fmt.Sprint("m", i)
		if i%4 == 3 {
			if !errors.Is(err, store.ErrNotFound) {
				t.Errorf("append to a missing session: %v, want ErrNotFound", err)
			}
			continue
		}
		if err != nil {
			t.Errorf("append %s beside failing writes: %v", want, err)
		}
		if !stored[want] {
			t.Errorf("%s was acknowledged but is not stored", want)
		}
	}
	if len(msgs) != n-n/4 {
		t.Errorf("transcript holds %d messages, want %d", len(msgs), n-n/4)
	}
}

// When SQLite rolls a batch's transaction back whole, the writes done in
// it before are told they are not stored (a passing failure, to try
// again), and the writes after it run in a new transaction.
func TestBatchRolledBackWholeTellsEveryWrite(t *testing.T) {
	s, sess := openWriterTest(t)
	ctx := context.Background()
	release := holdWriter(t, s)

	appendOne := func(text string) <-chan error {
		ch := make(chan error, 1)
		go func() {
			_, err := s.AppendMessages(ctx, sess.ID, store.Message{Role: store.RoleUser, Content: text})
			ch <- err
		}()
		return ch
	}
	first := appendOne("before")
	waitQueued(t, s, 1)
	breaker := make(chan error, 1)
	go func() {
		breaker <- s.tx(ctx, func(tx *wtx) error {
			// What a full disk does: the transaction is gone.
			if _, err := tx.Exec("ROLLBACK"); err != nil {
				return err
			}
			return errors.New("disk full")
		})
	}()
	waitQueued(t, s, 2)
	last := appendOne("after")
	waitQueued(t, s, 3)
	release()

	if err := testutil.Receive(t, breaker, "the failing write"); err == nil || err.Error() != "disk full" {
		t.Errorf("failing write: %v, want its own error", err)
	}
	err := testutil.Receive(t, first, "the write before it")
	if !errors.Is(err, errBatchRolledBack) || !store.Transient(err) {
		t.Errorf("write rolled back with the batch: %v, want errBatchRolledBack, transient", err)
	}
	if err := testutil.Receive(t, last, "the write after it"); err != nil {
		t.Errorf("write queued after the failure: %v", err)
	}
	msgs, err := s.Transcript(ctx, sess.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 1 || msgs[0].Content != "after" {
		t.Errorf("transcript %v, want only the write after the failure", msgs)
	}
}

// A caller that gives up while its write waits withdraws it, whether the
// writer took it into a batch already or not: it is never done. Writes
// made after Close are refused.
func TestWithdrawnWriteIsNotDone(t *testing.T) {
	s, sess := openWriterTest(t)
	release := holdWriter(t, s)

	write := func(ctx context.Context, text string) <-chan error {
		ch := make(chan error, 1)
		go func() {
			_, err := s.AppendMessages(ctx, sess.ID, store.Message{Role: store.RoleUser, Content: text})
			ch <- err
		}()
		return ch
	}
	// Not yet taken by the writer.
	ctx1, cancel1 := context.WithCancel(context.Background())
	first := write(ctx1, "withdrawn while queued")
	waitQueued(t, s, 1)
	cancel1()
	if err := testutil.Receive(t, first, "the write withdrawn while queued"); !errors.Is(err, context.Canceled) {
		t.Errorf("write withdrawn while queued: %v, want context.Canceled", err)
	}
	waitQueued(t, s, 0)

	// Taken into a batch behind a write that has not finished.
	started, releaseSecond := blockingWrite(t, s)
	waitQueued(t, s, 1)
	ctx2, cancel2 := context.WithCancel(context.Background())
	second := write(ctx2, "withdrawn in its batch")
	waitQueued(t, s, 2)
	release()
	testutil.Receive(t, started, "the second blocking write to start")
	waitQueued(t, s, 0)
	cancel2()
	if err := testutil.Receive(t, second, "the write withdrawn in its batch"); !errors.Is(err, context.Canceled) {
		t.Errorf("write withdrawn in its batch: %v, want context.Canceled", err)
	}
	releaseSecond()

	if err := <-write(context.Background(), "kept"); err != nil {
		t.Fatal(err)
	}
	msgs, err := s.Transcript(context.Background(), sess.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 1 || msgs[0].Content != "kept" {
		t.Errorf("transcript %v, want only the write not withdrawn", msgs)
	}

	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AppendMessages(context.Background(), sess.ID, store.Message{Role: store.RoleUser, Content: "late"}); !errors.Is(err, errStoreClosed) {
		t.Errorf("write after Close: %v, want errStoreClosed", err)
	}
}

// A lone one-statement write is its own transaction: it commits once,
// and when it fails part way it is undone whole and leaves no
// transaction open for the next write.
func TestLoneStatementIsItsOwnTransaction(t *testing.T) {
	s, sess := openWriterTest(t)
	ctx := context.Background()
	before := s.writer.commits.Load()
	if _, err := s.exec(ctx, `INSERT INTO bindings (key, session_id, updated_at) VALUES ('web:dm:a', ?, 1)`, sess.ID); err != nil {
		t.Fatal(err)
	}
	if got := s.writer.commits.Load() - before; got != 1 {
		t.Errorf("a lone write took %d commits, want 1", got)
	}
	// The second row names no session: the foreign key fails the
	// statement after its first row was written.
	_, err := s.exec(ctx, `INSERT INTO bindings (key, session_id, updated_at) VALUES ('web:dm:b', ?, 1), ('web:dm:c', 'no-such-session', 1)`, sess.ID)
	if err == nil {
		t.Fatal("a statement breaking a foreign key was stored")
	}
	var n int
	if err := s.readRow(ctx, `SELECT count(*) FROM bindings`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Errorf("%d bindings after a failed statement, want the 1 stored before it", n)
	}
	// Nothing was left open: a write of several statements begins its
	// own transaction.
	if err := s.tx(ctx, func(tx *wtx) error {
		_, err := tx.Exec(`INSERT INTO bindings (key, session_id, updated_at) VALUES ('web:dm:d', ?, 2)`, sess.ID)
		return err
	}); err != nil {
		t.Fatalf("the write after a failed one: %v", err)
	}
}
