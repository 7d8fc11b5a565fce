package postgres_test

import (
	"testing"

	"github.com/baton-agent/baton/internal/store"
	"github.com/baton-agent/baton/internal/store/postgres"
	"github.com/baton-agent/baton/internal/store/postgres/pgtest"
	"github.com/baton-agent/baton/internal/store/storetest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

func openTemp(t testing.TB) *postgres.Store {
	t.Helper()
	s, err := postgres.Open(t.Context(), pgtest.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return openTemp(t) })
}

// BenchmarkStore runs the store operations every store is timed on. Run
// with BATON_TEST_POSTGRES_DURABLE=1 for a server that syncs every commit,
// as the SQLite store does.
func BenchmarkStore(b *testing.B) {
	storetest.Bench(b, func(b *testing.B) store.Store { return openTemp(b) })
}
