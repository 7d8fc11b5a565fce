package sqlite_test

import (
	"database/sql"
	"path/filepath"
	"strings"
	"testing"

	"github.com/baton-agent/baton/internal/store/sqlite"
)

// The gateway polls these queues; each poll must walk only the pending
// rows of a partial index, never the whole table, and never sort.
func TestQueuesUseIndexes(t *testing.T) {
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
	plan := func(q string) string {
		t.Helper()
		rows, err := db.Query(`EXPLAIN QUERY PLAN ` + q)
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
		return strings.Join(steps, "; ")
	}
	for q, index := range map[string]string{
		`SELECT id FROM inbound WHERE done_at = 0 ORDER BY id LIMIT 10`:                                   "inbound_pending",
		`SELECT id FROM deliveries WHERE sent_at = 0 ORDER BY id LIMIT 10`:                                "deliveries_pending",
		`SELECT id FROM deliveries WHERE sent_at = 0 AND address_key = 'x' ORDER BY id LIMIT 10`:          "deliveries_pending_address",
		`SELECT id FROM inbound WHERE platform = 'x' AND platform_msg_id = 'y' AND platform_msg_id <> ''`: "inbound_platform_msg",
		`SELECT id FROM deliveries WHERE key = 'x' AND key <> ''`:                                         "deliveries_key",
	} {
		joined := plan(q)
		if !strings.Contains(joined, index) || strings.Contains(joined, "TEMP B-TREE") {
			t.Errorf("plan for %q does not use %s without sorting: %s", q, index, joined)
		}
	}
	// The live handoffs are one per session at most: their poll and the
	// reaper walk handoffs_live (sorting those few rows), never the
	// table of every finished handoff.
	for _, q := range []string{
		`SELECT id FROM handoffs WHERE finished_at = 0 AND state = 'pending' AND platform IN ('a', 'b') ORDER BY requested_at, id`,
		`UPDATE handoffs SET state = 'failed' WHERE finished_at = 0 AND state = 'running' AND lease_until < 1 AND attempts >= 3 RETURNING id`,
		`UPDATE handoffs SET state = 'pending' WHERE finished_at = 0 AND state = 'running' AND lease_until < 1`,
	} {
		if joined := plan(q); !strings.Contains(joined, "handoffs_live") {
			t.Errorf("plan for %q does not use handoffs_live: %s", q, joined)
		}
	}
}
