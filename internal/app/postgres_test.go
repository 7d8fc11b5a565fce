package app

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/baton-agent/baton/internal/config"
	"github.com/baton-agent/baton/internal/store/postgres"
	"github.com/baton-agent/baton/internal/store/postgres/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// Two homes with no files in common, one database: the desk and the
// server see one owner and one set of sessions.
func TestPostgresStoreChosenByEnvironment(t *testing.T) {
	url := pgtest.NewDatabase(t)
	open := func() *App {
		home := t.TempDir()
		if err := os.WriteFile(filepath.Join(home, config.FileName), []byte("model:\n  provider: offline\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		t.Setenv(StoreEnv, url)
		a, err := Open(t.Context(), home)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { a.Close() })
		if _, ok := a.Store.(*postgres.Store); !ok || a.StoreFile != "" {
			t.Fatalf("store %T, file %q: want the Postgres store and no file", a.Store, a.StoreFile)
		}
		if _, err := os.Stat(filepath.Join(home, "state.db")); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("a SQLite file was made beside the Postgres store: %v", err)
		}
		return a
	}
	desk, server := open(), open()
	if desk.Owner.ID != server.Owner.ID {
		t.Fatalf("owners %s and %s: one store should have one owner", desk.Owner.ID, server.Owner.ID)
	}
	s, err := desk.NewSession(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	got, err := server.Resolve(t.Context(), s.ID)
	if err != nil || got.Holder != desk.TerminalKey() {
		t.Fatalf("the server sees %+v, %v", got, err)
	}
}
