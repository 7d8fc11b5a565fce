package postgres_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/baton-agent/baton/internal/store"
	"github.com/baton-agent/baton/internal/store/postgres"
	"github.com/baton-agent/baton/internal/store/postgres/pgtest"
)

// hangGuard bounds each wait for a signal so a broken listener fails the
// test instead of hanging it; signals normally arrive in milliseconds.
const hangGuard = 30 * time.Second

func next(t *testing.T, ch <-chan store.Signal) store.Signal {
	t.Helper()
	select {
	case s, ok := <-ch:
		if !ok {
			t.Fatal("the signal channel closed")
		}
		return s
	case <-time.After(hangGuard):
		t.Fatal("no signal")
	}
	return store.Signal{}
}

// Two stores on one database stand for two machines: what one sends on
// a topic, the other hears, in order, and nothing of a topic it did not
// listen to.
func TestSignalsReachAnotherProcess(t *testing.T) {
	u := pgtest.NewDatabase(t)
	desk, err := postgres.Open(t.Context(), u)
	if err != nil {
		t.Fatal(err)
	}
	defer desk.Close()
	server, err := postgres.Open(t.Context(), u)
	if err != nil {
		t.Fatal(err)
	}
	defer server.Close()

	ctx, cancel := context.WithCancel(t.Context())
	ch, err := server.Listen(ctx, "baton_a", "baton_b")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []struct{ topic, payload string }{{"baton_other", "x"}, {"baton_a", "1"}, {"baton_b", "2"}, {"baton_a", ""}} {
		if err := desk.Notify(t.Context(), s.topic, s.payload); err != nil {
			t.Fatal(err)
		}
	}
	for _, want := range []store.Signal{{Topic: "baton_a", Payload: "1"}, {Topic: "baton_b", Payload: "2"}, {Topic: "baton_a"}} {
		if got := next(t, ch); got != want {
			t.Fatalf("heard %+v, want %+v", got, want)
		}
	}
	cancel()
	for range ch { // closed once the listener stops
	}
}

// A listening connection the server drops is made again; the listener
// is told it may have missed signals, and hears the next ones.
func TestSignalsListenAgainAfterTheConnectionIsLost(t *testing.T) {
	u := pgtest.NewDatabase(t)
	st, err := postgres.Open(t.Context(), u)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ch, err := st.Listen(t.Context(), "baton_a")
	if err != nil {
		t.Fatal(err)
	}
	admin, err := pgx.Connect(t.Context(), u)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(context.Background())
	tag, err := admin.Exec(t.Context(), "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'LISTEN%'")
	if err != nil || tag.RowsAffected() != 1 {
		t.Fatalf("terminate the listener: %v (%d rows)", err, tag.RowsAffected())
	}
	if got := next(t, ch); got != (store.Signal{Topic: "baton_a", Missed: true}) {
		t.Fatalf("after the connection was lost: %+v", got)
	}
	if err := st.Notify(t.Context(), "baton_a", "again"); err != nil {
		t.Fatal(err)
	}
	if got := next(t, ch); got != (store.Signal{Topic: "baton_a", Payload: "again"}) {
		t.Fatalf("after listening again: %+v", got)
	}
}

func TestSignalsRefuseWhatIsNoTopic(t *testing.T) {
	st, err := postgres.Open(t.Context(), pgtest.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.Notify(t.Context(), `Baton"; DROP`, ""); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("Notify on a name that is no topic: %v", err)
	}
	if _, err := st.Listen(t.Context(), "Baton"); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("Listen on a name that is no topic: %v", err)
	}
	if err := st.Notify(t.Context(), "baton_a", string(make([]byte, store.MaxSignalPayload+1))); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("Notify with a payload over the bound: %v", err)
	}
}
