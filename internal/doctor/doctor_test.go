package doctor_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/baton-agent/baton/internal/doctor"
	"github.com/baton-agent/baton/internal/mcp/mcptest"
	"github.com/baton-agent/baton/internal/store"
	"github.com/baton-agent/baton/internal/store/postgres/pgtest"
	"github.com/baton-agent/baton/internal/store/sqlite"
)

// home makes a baton home with a store holding a few hundred messages.
func home(t *testing.T) (dir, db string) {
	t.Helper()
	dir = filepath.Join(t.TempDir(), "baton")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	db = filepath.Join(dir, sqlite.FileName)
	st, err := sqlite.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	u, err := st.CreateUser(context.Background(), "owner")
	if err != nil {
		t.Fatal(err)
	}
	s, err := st.CreateSession(context.Background(), store.Session{OwnerID: u.ID, Platform: "cli"})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 300; i++ {
		if _, err := st.AppendMessages(context.Background(), s.ID, store.Message{Role: store.RoleUser, Content: strings.Repeat("words to fill pages ", 20)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	return dir, db
}

func report(t *testing.T, dir string) (string, int) {
	t.Helper()
	var b bytes.Buffer
	n := doctor.Print(&b, doctor.Check(context.Background(), dir))
	return b.String(), n
}

func TestHealthyHome(t *testing.T) {
	dir, _ := home(t)
	out, n := report(t, dir)
	if n != 0 {
		t.Fatalf("%d problems in a healthy home:\n%s", n, out)
	}
	for _, want := range []string{"is private", "integrity ok", "gateway not running"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
}

func TestFilesOthersCanRead(t *testing.T) {
	dir, db := home(t)
	if err := os.Chmod(db, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	out, n := report(t, dir)
	if n != 2 || !strings.Contains(out, "chmod 600 "+db) || !strings.Contains(out, "chmod 700 "+dir) {
		t.Fatalf("want the file and the home reported with their fixes, got %d:\n%s", n, out)
	}
	if fi, _ := os.Stat(db); fi.Mode().Perm() != 0o644 {
		t.Errorf("doctor changed the mode to %#o; it only reports", fi.Mode().Perm())
	}
}

func TestEmptiedStore(t *testing.T) {
	dir, db := home(t)
	for _, f := range []string{db, db + "-wal", db + "-shm"} {
		_ = os.Remove(f)
	}
	if err := os.WriteFile(db, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	out, n := report(t, dir)
	if n != 1 || !strings.Contains(out, "empty (0 bytes)") || !strings.Contains(out, "backup") {
		t.Fatalf("want the emptied store reported, got %d:\n%s", n, out)
	}
	if fi, _ := os.Stat(db); fi.Size() != 0 {
		t.Errorf("doctor wrote to the store (%d bytes)", fi.Size())
	}
}

func TestCorruptPageFoundByIntegrityCheck(t *testing.T) {
	dir, db := home(t)
	f, err := os.OpenFile(db, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	fi, _ := f.Stat()
	if fi.Size() < 64<<10 {
		t.Fatalf("store too small to damage a middle page: %d bytes", fi.Size())
	}
	// Scribble over a page in the middle, past the schema.
	if _, err := f.WriteAt(bytes.Repeat([]byte{0xA5}, 4096), fi.Size()/2/4096*4096); err != nil {
		t.Fatal(err)
	}
	f.Close()
	out, n := report(t, dir)
	if n != 1 || !strings.Contains(out, "damaged") {
		t.Fatalf("want the damage found, got %d:\n%s", n, out)
	}
}

// Issue 24, 1 and 2: a store copied without its write-ahead log while
// baton runs (or whose log was deleted before baton was killed) lacks its
// latest sessions. doctor says so, and what to do, instead of "integrity
// ok".
func TestStoreWithoutItsLog(t *testing.T) {
	_, db := home(t)
	copied := filepath.Join(t.TempDir(), "baton")
	if err := os.Mkdir(copied, 0o700); err != nil {
		t.Fatal(err)
	}
	to := filepath.Join(copied, sqlite.FileName)
	copyTo := func(suffix string) {
		t.Helper()
		b, err := os.ReadFile(db + suffix)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(to+suffix, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// The store's file as it was before its latest sessions, which are
	// in its log: what copying state.db alone gets while baton writes.
	copyTo("")
	st, err := sqlite.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for range 3 {
		if _, err := st.CreateSession(context.Background(), store.Session{OwnerID: "u"}); err != nil {
			t.Fatal(err)
		}
	}
	copyTo("-shm")
	copyTo(sqlite.RecordSuffix)
	out, n := report(t, copied)
	if n != 2 {
		t.Fatalf("want the missing log and the lost sessions reported, got %d:\n%s", n, out)
	}
	for _, want := range []string{"missing its write-ahead log " + to + "-wal", "stop it cleanly", "baton backup",
		"4 sessions", "rm " + to + sqlite.RecordSuffix} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	if _, err := os.Stat(to + "-wal"); err == nil {
		t.Error("doctor left a log behind; it changes nothing")
	}
}

// A store removed while its record stays is reported, not taken for a
// first run.
func TestRemovedStore(t *testing.T) {
	dir, db := home(t)
	for _, f := range []string{db, db + "-wal", db + "-shm"} {
		_ = os.Remove(f)
	}
	out, n := report(t, dir)
	if n != 1 || !strings.Contains(out, "is gone") || !strings.Contains(out, "1 session,") || !strings.Contains(out, "rm "+db+sqlite.RecordSuffix) {
		t.Fatalf("want the removed store reported, got %d:\n%s", n, out)
	}
}

func TestMain(m *testing.M) {
	if mcptest.Serving() { // started by a test's doctor as its MCP server
		os.Exit(mcptest.ServeStdio())
	}
	pgtest.Main(m) // stops the Postgres server the tests started, if any
}

// Each MCP server is started, its tools named, and one that cannot start
// is a problem to fix, saying what it said.
func TestMCPServersInTheReport(t *testing.T) {
	dir, _ := home(t)
	prog, env := mcptest.Command()
	cfg := fmt.Sprintf("mcp:\n  servers:\n    demo:\n      command: %q\n      env: {%s: %q}\n    broken:\n      command: %q\n",
		prog, mcptest.EnvServe, env[mcptest.EnvServe], filepath.Join(t.TempDir(), "no-such-server"))
	if err := os.WriteFile(filepath.Join(dir, "config.yaml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	out, n := report(t, dir)
	if n != 1 {
		t.Errorf("%d problems, want 1 (the broken server):\n%s", n, out)
	}
	for _, want := range []string{"ok    mcp server demo — running (command: ", "demo.add, demo.crash, demo.cwd, demo.echo", "FIX   mcp server broken — failed", "no-such-server\" not found: is it installed, and on PATH?", "check mcp.servers.broken in config.yaml"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
}
