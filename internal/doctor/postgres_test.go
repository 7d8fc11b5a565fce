package doctor_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/baton-agent/baton/internal/config"
	"github.com/baton-agent/baton/internal/store/postgres/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

func TestStoreOnAPostgresServer(t *testing.T) {
	url := pgtest.NewDatabase(t)
	dir := filepath.Join(t.TempDir(), "baton")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv("BATON_STORE", "")
	write := func(store string) {
		if err := os.WriteFile(filepath.Join(dir, config.FileName), []byte("store: "+store+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(url)
	out, n := report(t, dir)
	if n != 0 || !strings.Contains(out, "answers (schema 1)") {
		t.Fatalf("%d problems, report:\n%s", n, out)
	}
	write("postgres://baton:pw@127.0.0.1:1/baton?connect_timeout=5")
	out, n = report(t, dir)
	if n == 0 || !strings.Contains(out, "cannot reach the Postgres server at 127.0.0.1:1") || strings.Contains(out, "pw") {
		t.Fatalf("%d problems, report:\n%s", n, out)
	}
}
