package sqlite_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/baton-agent/baton/internal/store"
	"github.com/baton-agent/baton/internal/store/sqlite"
)

// A state.db that exists but cannot be used stops baton with what to do;
// it is never replaced by a new, empty store, and it is left as it was.
func TestDamagedFileIsRefusedAndLeftAlone(t *testing.T) {
	for name, content := range map[string][]byte{
		"empty":      {},
		"not sqlite": bytes.Repeat([]byte("these are not the pages of a database\n"), 200),
		"cut header": []byte("SQLite format 3\x00\x10\x00"),
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "state.db")
			if err := os.WriteFile(path, content, 0o600); err != nil {
				t.Fatal(err)
			}
			st, err := sqlite.Open(context.Background(), path)
			if err == nil {
				st.Close()
				t.Fatal("a damaged store file was opened")
			}
			if !errors.Is(err, store.ErrDamaged) {
				t.Fatalf("error %v does not say the store is damaged", err)
			}
			for _, want := range []string{path, "backup", "mv " + path} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not mention %q", err, want)
				}
			}
			after, rerr := os.ReadFile(path)
			if rerr != nil || !bytes.Equal(after, content) {
				t.Errorf("the damaged file was changed (%d bytes now, %d before)", len(after), len(content))
			}
		})
	}
}

// A missing file is a new store, as on the first run.
func TestMissingFileIsANewStore(t *testing.T) {
	path := filepath.Join(t.TempDir(), "new", "state.db")
	st, err := sqlite.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if fi, err := os.Stat(path); err != nil || fi.Size() == 0 {
		t.Fatalf("new store file: %v %v", fi, err)
	}
}
