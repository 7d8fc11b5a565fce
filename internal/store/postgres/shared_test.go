package postgres_test

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/store"
	"github.com/baton-agent/baton/internal/store/postgres"
	"github.com/baton-agent/baton/internal/store/postgres/pgtest"
)

// Two stores on one database stand for two processes on two machines.
func TestTwoProcessesAppendAndClaimOnce(t *testing.T) {
	u := pgtest.NewDatabase(t)
	a, err := postgres.Open(t.Context(), u)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := postgres.Open(t.Context(), u)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	sess, err := a.CreateSession(t.Context(), store.Session{OwnerID: "u", Platform: "cli"})
	if err != nil {
		t.Fatal(err)
	}
	const each = 50
	var wg sync.WaitGroup
	errs := make(chan error, 2*each)
	for i, st := range []*postgres.Store{a, b} {
		for j := range each {
			wg.Go(func() {
				_, err := st.AppendMessages(t.Context(), sess.ID, store.Message{Role: store.RoleUser, Content: fmt.Sprintf("%d-%d", i, j)})
				errs <- err
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	tr, err := b.Transcript(t.Context(), sess.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(tr) != 2*each {
		t.Fatalf("%d messages, want %d", len(tr), 2*each)
	}
	for i := 1; i < len(tr); i++ {
		if tr[i].Seq != tr[i-1].Seq+1 {
			t.Fatalf("seqs not consecutive at %d: %d after %d", i, tr[i].Seq, tr[i-1].Seq)
		}
	}

	h, err := a.RequestHandoff(t.Context(), sess.ID, "cli", "telegram")
	if err != nil {
		t.Fatal(err)
	}
	var claims sync.WaitGroup
	won := make(chan string, 20)
	for i := range 20 {
		st := []*postgres.Store{a, b}[i%2]
		claims.Go(func() {
			_, ok, err := st.ClaimHandoff(t.Context(), h.ID, fmt.Sprintf("gateway-%d", i), time.Minute)
			if err != nil {
				t.Error(err)
			}
			if ok {
				won <- fmt.Sprint(i)
			}
		})
	}
	claims.Wait()
	close(won)
	var winners []string
	for w := range won {
		winners = append(winners, w)
	}
	if len(winners) != 1 {
		t.Fatalf("claimed by %v, want exactly one claimer", winners)
	}
}

func TestUnreachableServerSaysWhereAndWhatToCheck(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	_, err = postgres.Open(t.Context(), "postgres://baton:s3cret-pw@"+addr+"/baton?connect_timeout=5")
	if err == nil {
		t.Fatal("opened a store where no server listens")
	}
	msg := err.Error()
	for _, want := range []string{addr, "check that it runs"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not say %q", msg, want)
		}
	}
	if strings.Contains(msg, "s3cret-pw") || strings.Contains(msg, "\n") {
		t.Errorf("error %q shows the password or spans lines", msg)
	}
}

func TestMissingDatabaseSaysHowToMakeIt(t *testing.T) {
	u, err := url.Parse(pgtest.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/no_such_db"
	u.User = url.UserPassword(u.User.Username(), "pw-in-url")
	_, err = postgres.Open(t.Context(), u.String())
	if err == nil || !strings.Contains(err.Error(), `no database "no_such_db"`) || strings.Contains(err.Error(), "pw-in-url") {
		t.Fatalf("error = %v, want one naming the missing database without the password", err)
	}
}

func TestRedactHidesThePassword(t *testing.T) {
	for in, want := range map[string]string{
		"postgres://ann:pw@db.example:5432/baton":           "postgres://ann@db.example:5432/baton",
		"postgres://db.example/baton?password=pw&sslmode=x": "postgres://db.example/baton?password=xxxxx&sslmode=x",
	} {
		if got := postgres.Redact(in); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
}

// A message naming bytes while the last other session naming them is
// deleted, from another process: either the message is refused or the
// bytes stay. No row ever names bytes the store does not hold.
func TestBytesNamedWhileRemovedStayOrTheMessageIsRefused(t *testing.T) {
	u := pgtest.NewDatabase(t)
	a, err := postgres.Open(t.Context(), u)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := postgres.Open(t.Context(), u)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx := t.Context()
	for i := range 30 {
		f, err := a.PutFile(ctx, strings.NewReader(fmt.Sprintf("bytes %d", i)), "f.txt")
		if err != nil {
			t.Fatal(err)
		}
		old, _ := a.CreateSession(ctx, store.Session{OwnerID: "u"})
		next, _ := b.CreateSession(ctx, store.Session{OwnerID: "u"})
		if _, err := a.AppendMessages(ctx, old.ID, store.Message{Role: store.RoleUser, Attachments: []store.Attachment{f}}); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		var appendErr error
		wg.Go(func() { appendErr = a.DeleteSession(ctx, old.ID) })
		wg.Go(func() {
			_, appendErr2 := b.AppendMessages(ctx, next.ID, store.Message{Role: store.RoleUser, Attachments: []store.Attachment{f}})
			if appendErr2 != nil && !errors.Is(appendErr2, store.ErrNotFound) {
				t.Error(appendErr2)
			}
		})
		wg.Wait()
		if appendErr != nil {
			t.Fatal(appendErr)
		}
		tr, err := b.Transcript(ctx, next.ID)
		if err != nil {
			t.Fatal(err)
		}
		if len(tr) == 1 {
			r, err := b.OpenFile(ctx, f.SHA256)
			if err != nil {
				t.Fatalf("round %d: a stored message names bytes the store lost: %v", i, err)
			}
			r.Close()
		}
	}
}
