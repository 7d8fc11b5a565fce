package sqlite_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/baton-agent/baton/internal/store"
	"github.com/baton-agent/baton/internal/store/sqlite"
)

// wantSays checks that err says each of words.
func wantSays(t *testing.T, err error, words ...string) {
	t.Helper()
	if err == nil {
		t.Fatal("no error")
	}
	for _, w := range words {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not say %q", err, w)
		}
	}
}

// Issue 24, 4: the log deleted under a running baton gave another process
// "disk I/O error (522)" alone. It says what happened and what to do.
func TestLogDeletedUnderARunningStoreIsExplained(t *testing.T) {
	path := filepath.Join(t.TempDir(), sqlite.FileName)
	h := startHolder(t, path)
	h.sessions(2)
	if err := os.Remove(path + "-wal"); err != nil {
		t.Fatal(err)
	}
	_, err := openSessions(t, path)
	wantSays(t, err, "(522)", path+"-wal", "deleted", "Stop that process cleanly", "kill -9")
}

// readOnly makes dir unwritable, even to root (who passes over modes):
// with chattr +i there.
func readOnly(t *testing.T, dir string) {
	t.Helper()
	if os.Geteuid() != 0 {
		if err := os.Chmod(dir, 0o500); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Chmod(dir, 0o700) })
		return
	}
	if out, err := exec.Command("chattr", "+i", dir).CombinedOutput(); err != nil {
		t.Skipf("running as root, and chattr +i cannot make %s read-only (%v: %s)", dir, err, out)
	}
	t.Cleanup(func() { exec.Command("chattr", "-i", dir).Run() })
}

// Issue 24, 4: a read-only BATON_HOME gave "unable to open database file
// (14)". It says which folder and what to do.
func TestReadOnlyHomeIsExplained(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, sqlite.FileName)
	s, err := sqlite.Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateSession(t.Context(), store.Session{OwnerID: "u"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	readOnly(t, dir)
	_, err = sqlite.Open(t.Context(), path)
	wantSays(t, err, "cannot write in "+dir, "chmod u+w "+dir, "BATON_HOME")
}
