package sqlite_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"github.com/baton-agent/baton/internal/store"
	"github.com/baton-agent/baton/internal/store/sqlite"
)

// The helper process: when BATON_STORE_HELPER is set, this test binary
// acts as a second writer instead of running tests.
func TestMain(m *testing.M) {
	switch os.Getenv("BATON_STORE_HELPER") {
	case "append":
		os.Exit(helperAppend())
	case "open":
		os.Exit(helperOpen())
	case "durable":
		os.Exit(helperDurable(os.Getenv("DB_DIR")))
	case "hold":
		os.Exit(helperHold())
	case "put":
		os.Exit(helperPut())
	}
	os.Exit(m.Run())
}

// helperAppend appends N messages, alternating between the writer's own
// session and a shared one, and reports every error it meets.
func helperAppend() int {
	ctx := context.Background()
	path, own, shared, name := os.Getenv("DB"), os.Getenv("OWN"), os.Getenv("SHARED"), os.Getenv("WRITER")
	n, _ := strconv.Atoi(os.Getenv("N"))
	s, err := sqlite.Open(ctx, path)
	if err != nil {
		fmt.Fprintln(os.Stderr, "open:", err)
		return 1
	}
	defer s.Close()
	failed := 0
	for i := range n {
		sid := own
		if i%2 == 1 {
			sid = shared
		}
		_, err := s.AppendMessages(ctx, sid, store.Message{Role: store.RoleUser, Content: fmt.Sprintf("%s %d", name, i)})
		if err != nil {
			failed++
			fmt.Fprintln(os.Stderr, "append:", err)
		}
	}
	fmt.Printf("errors=%d\n", failed)
	if failed > 0 {
		return 1
	}
	return 0
}

func helperOpen() int {
	s, err := sqlite.Open(context.Background(), os.Getenv("DB"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "open:", err)
		return 1
	}
	s.Close()
	return 0
}

func helper(t *testing.T, mode string, env ...string) *exec.Cmd {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), append([]string{"BATON_STORE_HELPER=" + mode}, env...)...)
	return cmd
}

func TestTwoProcessesAppendConcurrently(t *testing.T) {
	// 4,000 appends each interleave thousands of commits of the two
	// processes. Longer runs measure SQLite's busy handler instead, which
	// is not fair between processes: on a loaded machine (CI, with every
	// package's tests at once) one writer of 10,000 was seen waiting past
	// busyTimeout behind the other's commits. A turn's writes retry such
	// a wait (agent.StoreRetry); this test holds raw appends to none.
	n := 4000
	if testing.Short() {
		n = 1000
	}
	path := filepath.Join(t.TempDir(), sqlite.FileName)
	s, err := sqlite.Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	shared, _ := s.CreateSession(t.Context(), store.Session{OwnerID: "u"})
	own := map[string]string{}
	for _, w := range []string{"A", "B"} {
		sess, err := s.CreateSession(t.Context(), store.Session{OwnerID: "u"})
		if err != nil {
			t.Fatal(err)
		}
		own[w] = sess.ID
	}

	start := time.Now()
	var wg sync.WaitGroup
	outs := map[string][]byte{}
	var mu sync.Mutex
	for _, w := range []string{"A", "B"} {
		cmd := helper(t, "append", "DB="+path, "OWN="+own[w], "SHARED="+shared.ID, "WRITER="+w, "N="+strconv.Itoa(n))
		wg.Go(func() {
			out, err := cmd.CombinedOutput()
			mu.Lock()
			defer mu.Unlock()
			outs[w] = out
			if err != nil {
				t.Errorf("writer %s: %v\n%s", w, err, out)
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	locked := 0
	for w, out := range outs {
		locked += strings.Count(string(out), "database is locked")
		if strings.Contains(string(out), "database is locked") || !strings.Contains(string(out), "errors=0") {
			t.Fatalf("writer %s reported errors:\n%s", w, out)
		}
	}

	total := 0
	for _, sid := range []string{own["A"], own["B"], shared.ID} {
		tr, err := s.Transcript(t.Context(), sid)
		if err != nil {
			t.Fatal(err)
		}
		total += len(tr)
		// Per writer, the messages must appear in the order they were written.
		next := map[string]int{"A": 0, "B": 0}
		if sid == shared.ID {
			next = map[string]int{"A": 1, "B": 1}
		}
		for i, m := range tr {
			if i > 0 && m.Seq <= tr[i-1].Seq {
				t.Fatalf("seq not increasing at %d in %s", i, sid)
			}
			var w string
			var k int
			if _, err := fmt.Sscanf(m.Content, "%s %d", &w, &k); err != nil {
				t.Fatalf("bad content %q", m.Content)
			}
			if k != next[w] {
				t.Fatalf("session %s: writer %s message %d came where %d was expected", sid, w, k, next[w])
			}
			next[w] += 2
		}
	}
	if total != 2*n {
		t.Fatalf("rows = %d, want %d", total, 2*n)
	}
	got, _ := s.GetSession(t.Context(), shared.ID)
	if got.MessageCount != n {
		t.Fatalf("shared session count = %d, want %d", got.MessageCount, n)
	}
	t.Logf("2 processes appended %d messages each in %v: %d rows, %d \"database is locked\", order kept per writer in all 3 sessions",
		n, elapsed.Round(time.Millisecond), total, locked)
}

func TestProcessesMigrateNewFileTogether(t *testing.T) {
	for round := range 5 {
		path := filepath.Join(t.TempDir(), fmt.Sprintf("race%d.db", round))
		var wg sync.WaitGroup
		for i := range 4 {
			cmd := helper(t, "open", "DB="+path)
			wg.Go(func() {
				if out, err := cmd.CombinedOutput(); err != nil {
					t.Errorf("opener %d: %v\n%s", i, err, out)
				}
			})
		}
		wg.Wait()
		db, err := sql.Open("sqlite", path+"?_pragma=busy_timeout(10000)")
		if err != nil {
			t.Fatal(err)
		}
		var rows, version int
		err = db.QueryRow(`SELECT COUNT(*), MAX(version) FROM schema_migrations`).Scan(&rows, &version)
		db.Close()
		if err != nil {
			t.Fatal(err)
		}
		if rows != version || version < 1 {
			t.Fatalf("migrations recorded %d rows for version %d: applied more than once", rows, version)
		}
	}
}

func TestFileIsPrivateAndPersistent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "home", sqlite.FileName)
	s, err := sqlite.Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	sess, _ := s.CreateSession(t.Context(), store.Session{Title: "kept"})
	if _, err := s.AppendMessages(t.Context(), sess.ID, store.Message{Role: store.RoleUser, Content: "hello"}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	for _, p := range []string{path, filepath.Dir(path)} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		want := os.FileMode(0o600)
		if fi.IsDir() {
			want = 0o700
		}
		if fi.Mode().Perm() != want {
			t.Fatalf("%s mode = %v, want %v", p, fi.Mode().Perm(), want)
		}
	}
	s, err = sqlite.Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tr, err := s.Transcript(t.Context(), sess.ID)
	if err != nil || len(tr) != 1 || tr[0].Content != "hello" {
		t.Fatalf("after reopen: %v %+v", err, tr)
	}
	v, err := s.SchemaVersion(t.Context())
	if err != nil || v < 1 {
		t.Fatalf("schema version %d, %v", v, err)
	}
}

func TestNewerSchemaIsRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), sqlite.FileName)
	s, err := sqlite.Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	db, _ := sql.Open("sqlite", path+"?_pragma=busy_timeout(10000)")
	if _, err := db.Exec(`INSERT INTO schema_migrations(version, applied_at) VALUES (999, 0)`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	_, err = sqlite.Open(t.Context(), path)
	if err == nil || !strings.Contains(err.Error(), "upgrade baton") {
		t.Fatalf("err = %v, want a clear refusal", err)
	}
}

func TestBadPath(t *testing.T) {
	if _, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "a?b.db")); err == nil {
		t.Fatal("a path with '?' was accepted")
	}
	blocker := filepath.Join(t.TempDir(), "file")
	os.WriteFile(blocker, nil, 0o600)
	if _, err := sqlite.Open(t.Context(), filepath.Join(blocker, "state.db")); err == nil {
		t.Fatal("a path under a regular file was accepted")
	}
}

func TestFTSQuery(t *testing.T) {
	cases := map[string]string{
		`foo`:        `"foo"`,
		`foo bar`:    `"foo" "bar"`,
		`"foo`:       `"""foo"`,
		`kube*`:      `"kube"*`,
		`AND OR`:     `"AND" "OR"`,
		`a"b`:        `"a""b"`,
		` * foo `:    `"foo"`,
		`don't stop`: `"don't" "stop"`,
		"0\x00":      `"0"`,
		"a\x00b\x1f": `"a" "b"`,
	}
	for in, want := range cases {
		got, err := sqlite.FTSQuery(in)
		if err != nil || got != want {
			t.Errorf("FTSQuery(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

func FuzzSearchNeverFailsOnSyntax(f *testing.F) {
	for _, s := range []string{`"foo`, `AND OR`, `*`, `near(a b, 3)`, `col:x`, `^x`, `a -b`, `"" ''`, "0\x00", "a\x00b", "\x00"} {
		f.Add(s)
	}
	s, err := sqlite.Open(context.Background(), filepath.Join(f.TempDir(), sqlite.FileName))
	if err != nil {
		f.Fatal(err)
	}
	defer s.Close()
	sess, _ := s.CreateSession(context.Background(), store.Session{})
	s.AppendMessages(context.Background(), sess.ID, store.Message{Role: store.RoleUser, Content: "the quick brown fox"})
	f.Fuzz(func(t *testing.T, q string) {
		_, err := s.Search(context.Background(), store.SearchQuery{Text: q})
		if err != nil && !errors.Is(err, store.ErrInvalid) {
			t.Fatalf("query %q: %v", q, err)
		}
	})
}
