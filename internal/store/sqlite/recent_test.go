package sqlite_test

import (
	"database/sql"
	"path/filepath"
	"strings"
	"testing"

	"github.com/baton-agent/baton/internal/store/sqlite"
)

// An owner's latest sessions, which the gateway reads for every new
// conversation, are read from an index: never a sort of every session,
// which made the gateway slower the more conversations it had.
func TestLatestSessionsUseAnIndex(t *testing.T) {
	path := filepath.Join(t.TempDir(), sqlite.FileName)
	s, err := sqlite.Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	db, err := sql.Open("sqlite", path+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`EXPLAIN QUERY PLAN SELECT id FROM sessions WHERE owner_id = 'u' ORDER BY updated_at DESC, id LIMIT 10 OFFSET 0`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var steps []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		steps = append(steps, detail)
	}
	if plan := strings.Join(steps, "; "); !strings.Contains(plan, "sessions_recent") || strings.Contains(plan, "TEMP B-TREE") {
		t.Errorf("an owner's latest sessions are not read from sessions_recent without sorting: %s", plan)
	}
}
