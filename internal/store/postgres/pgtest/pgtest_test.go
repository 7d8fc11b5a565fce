package pgtest_test

import (
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/baton-agent/baton/internal/store/postgres/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

func TestDatabasesAreFreshAndSeparate(t *testing.T) {
	a, b := pgtest.NewDatabase(t), pgtest.NewDatabase(t)
	if a == b {
		t.Fatalf("two databases share the URL %s", a)
	}
	conn, err := pgx.Connect(t.Context(), a)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(t.Context())
	if _, err := conn.Exec(t.Context(), "CREATE TABLE t (x int)"); err != nil {
		t.Fatal(err)
	}
	other, err := pgx.Connect(t.Context(), b)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close(t.Context())
	var n int
	if err := other.QueryRow(t.Context(), "SELECT count(*) FROM pg_tables WHERE tablename = 't'").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatalf("the second database sees the first's table")
	}
}
