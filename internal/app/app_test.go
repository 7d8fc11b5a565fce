package app

import (
	"bytes"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/baton-agent/baton/internal/config"
	"github.com/baton-agent/baton/internal/store"
	"github.com/baton-agent/baton/internal/store/sqlite"
)

func TestStorePath(t *testing.T) {
	home := "/home/ann/.baton"
	def := filepath.Join(home, sqlite.FileName)
	for _, c := range []struct{ url, want string }{
		{"", def},
		{"  ", def},
		{"sqlite:", def},
		{"sqlite://", def},
		{"sqlite:///", def},
		{"sqlite:///var/lib/baton/state.db", "/var/lib/baton/state.db"},
		{"sqlite://localhost/var/lib/baton/state.db", "/var/lib/baton/state.db"},
		{"sqlite:other.db", filepath.Join(home, "other.db")},
		{"SQLite:/tmp/x.db", "/tmp/x.db"},
		{"/srv/baton.db", "/srv/baton.db"},
		{"data/state.db", filepath.Join(home, "data/state.db")},
		{"./a:b.db", filepath.Join(home, "a:b.db")},
	} {
		got, err := StorePath(home, c.url)
		if err != nil || got != c.want {
			t.Errorf("StorePath(%q) = %q, %v; want %q", c.url, got, err, c.want)
		}
	}
	for _, c := range []struct{ url, want string }{
		{"postgres://baton:secret@db/baton", "not a file"},
		{"postgresql://db/baton", "not a file"},
		{"mysql://db/baton", `unknown kind "mysql"`},
		{"redis:6379", `unknown kind "redis"`},
		{"sqlite://db.example.com/x.db", "three slashes"},
	} {
		_, err := StorePath(home, c.url)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("StorePath(%q): %v; want an error with %q", c.url, err, c.want)
		}
		if err != nil && strings.Contains(err.Error(), "secret") {
			t.Errorf("StorePath(%q) shows the password: %v", c.url, err)
		}
		if err != nil && strings.Contains(c.want, "unknown") && !strings.Contains(err.Error(), "sqlite:///") {
			t.Errorf("StorePath(%q) does not name the accepted forms: %v", c.url, err)
		}
	}
}

func TestStoreURLConfigWinsOverEnvironment(t *testing.T) {
	env := func(k string) string { return map[string]string{StoreEnv: "sqlite:///from/env.db"}[k] }
	if got := StoreURL(config.Config{}, env); got != "sqlite:///from/env.db" {
		t.Errorf("from the environment: %q", got)
	}
	if got := StoreURL(config.Config{Store: "/from/config.db"}, env); got != "/from/config.db" {
		t.Errorf("config wins: %q", got)
	}
	if got := StoreURL(config.Config{}, func(string) string { return "" }); got != "" {
		t.Errorf("neither: %q", got)
	}
}

func openHome(t *testing.T, yaml string) (string, *App, error) {
	t.Helper()
	home := t.TempDir()
	t.Setenv(StoreEnv, "")
	if err := os.WriteFile(filepath.Join(home, config.FileName), []byte("model:\n  provider: offline\n"+yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	a, err := Open(t.Context(), home)
	if a != nil {
		t.Cleanup(func() { a.Close() })
	}
	return home, a, err
}

func TestOpen(t *testing.T) {
	home, a, err := openHome(t, "")
	if err != nil || !a.Offline() || a.Owner.ID == "" {
		t.Fatalf("open: %+v, %v", a, err)
	}
	if _, err := os.Stat(filepath.Join(home, sqlite.FileName)); err != nil {
		t.Errorf("default store file: %v", err)
	}

	home, _, err = openHome(t, "store: elsewhere.db\n")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(home, "elsewhere.db")); err != nil {
		t.Errorf("configured store file: %v", err)
	}

	// A server that does not answer is told, naming where it was looked for.
	if _, _, err := openHome(t, "store: postgres://baton:pw@127.0.0.1:1/baton?connect_timeout=5\n"); err == nil ||
		!strings.Contains(err.Error(), "cannot reach the Postgres server at 127.0.0.1:1") || strings.Contains(err.Error(), "pw") {
		t.Errorf("postgres store: %v", err)
	}
	if _, _, err := openHome(t, "telegarm:\n  token: x\n"); err == nil || !strings.Contains(err.Error(), `"telegarm"`) || !strings.Contains(err.Error(), "web") {
		t.Errorf("unknown top-level key: %v", err)
	}
	if _, _, err := openHome(t, "web:\n  listen: 127.0.0.1:1\ntelegram:\n  token: x\n"); err != nil {
		t.Errorf("platform sections refused: %v", err)
	}
}

// A prefix rule for a program off the reviewed list is refused where
// the agent is built, saying why, instead of silently allowing anything.
func TestNewAgentRefusesUnsafeAllowRules(t *testing.T) {
	_, a, err := openHome(t, "tools:\n  allow: [\"shell:git status *\"]\n")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.NewAgent(nil); err == nil || !strings.Contains(err.Error(), "allow git as exact commands") || !strings.Contains(err.Error(), "tools.allow") {
		t.Errorf("err = %v", err)
	}
	_, a, err = openHome(t, "tools:\n  allow: [\"shell:git status\", \"shell:ls *\", write_file]\n  paths: [/tmp]\n")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.NewAgent(nil); err != nil {
		t.Errorf("safe rules refused: %v", err)
	}
}

// Issue 24, 4: a damaged page under the owner's identity gave "find owner
// root: lookup identity cli:root: … malformed (11)" and nothing to do. It
// says the store is damaged and what to do.
func TestDamagedStoreAtTheOwnerIsExplained(t *testing.T) {
	home, a, err := openHome(t, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(home, sqlite.FileName)
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	var root, pageSize int64
	err = db.QueryRow(`SELECT rootpage, (SELECT page_size FROM pragma_page_size) FROM sqlite_master WHERE name = 'identities'`).Scan(&root, &pageSize)
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(bytes.Repeat([]byte{0xA5}, int(pageSize)), (root-1)*pageSize); err != nil {
		t.Fatal(err)
	}
	f.Close()

	a, err = Open(t.Context(), home)
	if err == nil {
		a.Close()
		t.Fatal("a store damaged under the owner's identity opened")
	}
	if !errors.Is(err, store.ErrDamaged) {
		t.Errorf("error %v is not store.ErrDamaged", err)
	}
	for _, want := range []string{"malformed", "damaged", "baton doctor", "Restore it from a backup"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}
