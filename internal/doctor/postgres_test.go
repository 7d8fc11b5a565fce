package doctor_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/baton-agent/baton/internal/config"
	"github.com/baton-agent/baton/internal/store/postgres"
	"github.com/baton-agent/baton/internal/store/postgres/pgtest"
)

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
	// The schema the store itself reports, as a fresh open makes it.
	st, err := postgres.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	v, err := st.SchemaVersion(context.Background())
	st.Close()
	if err != nil {
		t.Fatal(err)
	}
	write(url)
	out, n := report(t, dir)
	if n != 0 || !strings.Contains(out, fmt.Sprintf("answers (schema %d)", v)) {
		t.Fatalf("%d problems, report:\n%s", n, out)
	}
	write("postgres://baton:pw@127.0.0.1:1/baton?connect_timeout=5")
	out, n = report(t, dir)
	if n == 0 || !strings.Contains(out, "cannot reach the Postgres server at 127.0.0.1:1") || strings.Contains(out, "pw") {
		t.Fatalf("%d problems, report:\n%s", n, out)
	}
}
