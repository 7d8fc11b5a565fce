package sqlite

import (
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/store"
)

func TestNextInt(t *testing.T) {
	good := []struct {
		in   string
		last bool
		want int64
		rest string
	}{
		{"0", true, 0, ""},
		{"12,34", false, 12, "34"},
		{"-5,", false, -5, ""},
		{"9223372036854775807", true, 1<<63 - 1, ""},
		{"-9223372036854775808", true, -1 << 63, ""},
	}
	for _, c := range good {
		v, rest, ok := nextInt(c.in, c.last)
		if !ok || v != c.want || rest != c.rest {
			t.Errorf("nextInt(%q, %v) = %d, %q, %v; want %d, %q", c.in, c.last, v, rest, ok, c.want, c.rest)
		}
	}
	for _, c := range []struct {
		in   string
		last bool
	}{
		{"", true}, {"", false}, {"-", true}, {"12", false}, {"12,", true}, {"1x", true},
		{"9223372036854775808", true}, {"-9223372036854775809", true}, {"99999999999999999999", true}, {",1", false},
	} {
		if v, _, ok := nextInt(c.in, c.last); ok {
			t.Errorf("nextInt(%q, %v) = %d, ok; want a refusal", c.in, c.last, v)
		}
	}
}

func TestUnpackRefusesWhatDoesNotAddUp(t *testing.T) {
	// Two rows: a plain user message and a summary with a tool name.
	var meta [metaFields]string
	for j := range meta {
		meta[j] = unitSep
	}
	meta[metaRole] = "user" + unitSep + "user"
	meta[metaKind] = unitSep + "summary"
	meta[metaToolName] = "shell" + unitSep
	with := func(j int, list string) [metaFields]string {
		m := meta
		m[j] = list
		return m
	}
	got, err := unpack(nil, "s", 2, "1,2", "1,2", "5,6", "2,3", "hibye", meta)
	if err != nil || len(got) != 2 || got[0].Content != "hi" || got[1].Content != "bye" || got[1].Seq != 2 || got[1].Role != store.RoleUser ||
		got[0].Kind != "" || got[1].Kind != store.KindSummary || got[0].ToolName != "shell" || got[1].ToolName != "" {
		t.Fatalf("good chunk: %+v, %v", got, err)
	}
	type chunk struct {
		ids, seqs, created, lens, content string
		meta                              [metaFields]string
	}
	bad := map[string]chunk{
		"seq not increasing":          {"1,2", "2,2", "5,6", "2,3", "hibye", meta},
		"too few ids":                 {"1", "1,2", "5,6", "2,3", "hibye", meta},
		"content too short":           {"1,2", "1,2", "5,6", "2,4", "hibye", meta},
		"content left over":           {"1,2", "1,2", "5,6", "2,2", "hibye", meta},
		"negative length":             {"1,2", "1,2", "5,6", "-1,3", "hibye", meta},
		"created not a number":        {"1,2", "1,2", "5,x", "2,3", "hibye", meta},
		"a role short":                {"1,2", "1,2", "5,6", "2,3", "hibye", with(metaRole, "user")},
		"a kind too many":             {"1,2", "1,2", "5,6", "2,3", "hibye", with(metaKind, unitSep+unitSep)},
		"a platform id short":         {"1,2", "1,2", "5,6", "2,3", "hibye", with(metaPlatformMsgID, "")},
		"a separator in a tool name":  {"1,2", "1,2", "5,6", "2,3", "hibye", with(metaToolName, "a"+unitSep+"b"+unitSep)},
		"a separator in the last one": {"1,2", "1,2", "5,6", "2,3", "hibye", with(metaPlatform, unitSep+"x"+unitSep)},
	}
	for name, c := range bad {
		dst := make([]store.Message, 1, 8)
		got, err := unpack(dst, "s", 2, c.ids, c.seqs, c.created, c.lens, c.content, c.meta)
		if err != errUnpack || got != nil {
			t.Errorf("%s: got %d messages, %v; want errUnpack", name, len(got), err)
		}
	}
}

// The packed query's answer for ordinary rows parses: were it refused, every
// load would silently take the slow path. Leading empty values matter most:
// the kind list is mostly empty strings, each still followed by its
// separator.
func TestPackedChunkParses(t *testing.T) {
	s, err := Open(t.Context(), filepath.Join(t.TempDir(), FileName), WithoutTranscriptCache())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	sess, _ := s.CreateSession(t.Context(), store.Session{})
	msgs := []store.Message{
		{Role: store.RoleUser, Content: ""},
		{Role: store.RoleUser, Content: "hi", Platform: "telegram", PlatformMsgID: "7"},
		{Role: store.RoleAssistant, ToolCalls: []byte(`[{"id":"c1","name":"shell","arguments":{}}]`)},
		{Role: store.RoleTool, ToolCallID: "c1", ToolName: "shell", Content: "out\x1e\x1f"},
		{Role: store.RoleUser, Kind: store.KindHandoff, Content: "handed off"},
		{Role: store.RoleUser, Content: "last", Kind: "custom"},
	}
	if _, err := s.AppendMessages(t.Context(), sess.ID, msgs...); err != nil {
		t.Fatal(err)
	}
	var n int
	var ids, seqs, created, lens, content string
	var meta [metaFields]string
	dest := []any{&n, &ids, &seqs, &created, &lens, &content}
	for j := range meta {
		dest = append(dest, &meta[j])
	}
	if err := s.r.QueryRowContext(t.Context(), packedLiveSQL, sess.ID, 1, 100).Scan(dest...); err != nil {
		t.Fatal(err)
	}
	got, err := unpack(nil, sess.ID, n, ids, seqs, created, lens, content, meta)
	if err != nil {
		t.Fatalf("packed chunk refused: %v\nmeta %q", err, meta)
	}
	want, err := s.History(t.Context(), sess.ID)
	if err != nil || len(got) != len(want) {
		t.Fatalf("%d messages, want %d (%v)", len(got), len(want), err)
	}
	for i := range got {
		g, w := got[i], want[i]
		if !g.CreatedAt.Equal(w.CreatedAt) {
			t.Fatalf("message %d created %v, want %v", i, g.CreatedAt, w.CreatedAt)
		}
		g.CreatedAt = w.CreatedAt
		if !reflect.DeepEqual(g, w) {
			t.Fatalf("message %d\n got %+v\nwant %+v", i, g, w)
		}
	}
}

// A file written at schema version 2, with a replaced transcript, gets
// live_from set by migration 3 so that loads start at the live rows.
func TestMigrationSetsLiveFrom(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	db, exec := atVersion(t, path, 2)
	exec(`INSERT INTO sessions (id, created_at, updated_at) VALUES ('replaced', 1, 1), ('plain', 1, 1), ('empty', 1, 1)`)
	for i := range 5 {
		exec(`INSERT INTO messages (session_id, seq, role, content, created_at, superseded) VALUES ('replaced', ?, 'user', ?, 1, ?)`,
			i+1, fmt.Sprint("m", i), i < 3)
		exec(`INSERT INTO messages (session_id, seq, role, content, created_at) VALUES ('plain', ?, 'user', 'x', 1)`, i+1)
	}
	exec(`UPDATE sessions SET message_count = 2 WHERE id = 'replaced'`)
	db.Close()

	s, err := Open(t.Context(), path, WithoutTranscriptCache())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	want := map[string]int64{"replaced": 4, "plain": 1, "empty": 1} // empty: next_seq is still 1
	for id, from := range want {
		var got int64
		if err := s.r.QueryRow(`SELECT live_from FROM sessions WHERE id = ?`, id).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != from {
			t.Errorf("%s: live_from = %d, want %d", id, got, from)
		}
	}
	tr, err := s.Transcript(t.Context(), "replaced")
	if err != nil || len(tr) != 2 || tr[0].Content != "m3" || tr[1].Content != "m4" {
		t.Fatalf("transcript after migration: %+v, %v", tr, err)
	}
}

// A file written at schema version 4 told a handoff's synthetic message
// and a compression summary apart only by how their content began:
// migration 5 gives those rows their kind, and nothing else.
func TestMigrationSetsKindOfOldPrefixedRows(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	db, exec := atVersion(t, path, 4)
	exec(`INSERT INTO sessions (id, created_at, updated_at) VALUES ('s', 1, 1)`)
	rows := []struct {
		role, content string
		superseded    bool
		want          store.MessageKind
	}{
		{"user", "[Summary of the earlier conversation, compressed to save context]\n\nold notes", true, store.KindSummary},
		{"user", "[Summary of the earlier conversation, compressed to save context]\n\nnotes", false, store.KindSummary},
		{"user", "[baton handoff] This conversation was just handed off from the terminal to the web chat. Greet them.", false, store.KindHandoff},
		{"assistant", "[baton handoff] quoted by the model", false, ""},
		{"user", "what does [baton handoff] mean?", false, ""},
		{"user", "[baton handof", false, ""},
		{"user", "[summary of the earlier conversation", false, ""}, // another case: not ours
		{"tool", "[Summary of the earlier conversation", false, ""},
		{"user", "plain", false, ""},
	}
	for i, r := range rows {
		exec(`INSERT INTO messages (session_id, seq, role, content, created_at, superseded) VALUES ('s', ?, ?, ?, 1, ?)`,
			i+1, r.role, r.content, r.superseded)
	}
	exec(`UPDATE sessions SET message_count = ?, live_from = 2`, len(rows)-1)
	db.Close()

	s, err := Open(t.Context(), path, WithoutTranscriptCache())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if v, err := s.SchemaVersion(t.Context()); err != nil || v != len(migrations) {
		t.Fatalf("schema version %d, %v", v, err)
	}
	hist, err := s.History(t.Context(), "s")
	if err != nil || len(hist) != len(rows) {
		t.Fatalf("history: %d rows, %v", len(hist), err)
	}
	for i, m := range hist {
		if m.Kind != rows[i].want || m.Content != rows[i].content {
			t.Errorf("row %d (%s %q): kind %q, want %q", i, m.Role, m.Content, m.Kind, rows[i].want)
		}
	}
	tr, err := s.Transcript(t.Context(), "s")
	if err != nil || len(tr) != len(rows)-1 {
		t.Fatalf("transcript: %d rows, %v", len(tr), err)
	}
	for i, m := range tr {
		if m.Kind != rows[i+1].want {
			t.Errorf("loaded row %d: kind %q, want %q", i, m.Kind, rows[i+1].want)
		}
	}
}

// A helper whose snapshot is newer than the caller's must not contribute
// rows: the caller reads that part itself, from its own snapshot.
func TestStaleHelperPartIsReadAgain(t *testing.T) {
	msgs := func(tag string, n int) []store.Message {
		out := make([]store.Message, n)
		for i := range out {
			out[i] = store.Message{Role: store.RoleUser, Content: fmt.Sprint(tag, i)}
		}
		return out
	}
	for name, change := range map[string]func(s *Store, id string) error{
		"replaced": func(s *Store, id string) error {
			_, err := s.ReplaceTranscript(t.Context(), id, msgs("new", 3000))
			return err
		},
		// Same id, same seqs, other rows: only the session's creation time
		// tells the versions apart.
		"recreated": func(s *Store, id string) error {
			if err := s.DeleteSession(t.Context(), id); err != nil {
				return err
			}
			if _, err := s.CreateSession(t.Context(), store.Session{ID: id}); err != nil {
				return err
			}
			_, err := s.AppendMessages(t.Context(), id, msgs("new", 3000)...)
			return err
		},
	} {
		t.Run(name, func(t *testing.T) {
			s, err := Open(t.Context(), filepath.Join(t.TempDir(), FileName), WithoutTranscriptCache())
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			sess, _ := s.CreateSession(t.Context(), store.Session{})
			if _, err := s.AppendMessages(t.Context(), sess.ID, msgs("old", 3000)...); err != nil {
				t.Fatal(err)
			}
			var once sync.Once
			var changed error = errors.New("the hook did not run: the load was not split between readers")
			testHookBeforeHelper = func() { once.Do(func() { changed = change(s, sess.ID) }) }
			defer func() { testHookBeforeHelper = nil }()
			tr, err := s.Transcript(t.Context(), sess.ID)
			if err != nil {
				t.Fatal(err)
			}
			if changed != nil {
				t.Fatal(changed)
			}
			if len(tr) != 3000 {
				t.Fatalf("%d messages, want 3000", len(tr))
			}
			for i, m := range tr {
				if m.Content != fmt.Sprint("old", i) {
					t.Fatalf("message %d = %q: the load mixed in the newer transcript", i, m.Content)
				}
			}
			// The next load sees the new transcript whole, whatever packs
			// the first one tried to keep.
			s.bg.Wait()
			tr, err = s.Transcript(t.Context(), sess.ID)
			if err != nil || len(tr) != 3000 || tr[0].Content != "new0" || tr[2999].Content != "new2999" {
				t.Fatalf("next load: %d messages, %v", len(tr), err)
			}
		})
	}
}

// A pack is kept only while its chunk is live in the session version it
// was read from.
func TestPackOfAnotherVersionIsNotKept(t *testing.T) {
	s, err := Open(t.Context(), filepath.Join(t.TempDir(), FileName), WithoutTranscriptCache())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	sess, _ := s.CreateSession(t.Context(), store.Session{})
	msgs := make([]store.Message, 1100)
	for i := range msgs {
		msgs[i] = store.Message{Role: store.RoleUser, Content: fmt.Sprint("m", i)}
	}
	if _, err := s.AppendMessages(t.Context(), sess.ID, msgs...); err != nil {
		t.Fatal(err)
	}
	var v transcriptVersion
	var n int
	var liveFrom int64
	if err := s.readRow(t.Context(), transcriptVersionSQL, sess.ID).Scan(&v.Born, &v.Generation, &v.NextSeq, &n, &liveFrom); err != nil {
		t.Fatal(err)
	}
	count := func() int {
		s.bg.Wait()
		var n int
		if err := s.readRow(t.Context(), `SELECT count(*) FROM transcript_packs`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	save := func(v transcriptVersion) {
		ps := &packs{list: []pack{{first: 513, n: liveChunk, ids: "1", seqs: "1", created: "1", lens: "1", body: "x"}}}
		s.savePacks(sess.ID, v, ps)
	}
	other := v
	other.Born++
	save(other)
	if got := count(); got != 0 {
		t.Fatalf("%d packs kept for a session created at another time", got)
	}
	save(v)
	if got := count(); got != 1 {
		t.Fatalf("%d packs kept for the session's live chunk, want 1", got)
	}
	if _, err := s.ReplaceTranscript(t.Context(), sess.ID, msgs[:3]); err != nil {
		t.Fatal(err)
	}
	if got := count(); got != 0 {
		t.Fatalf("%d packs left after the transcript was replaced", got)
	}
	save(v)
	if got := count(); got != 0 {
		t.Fatalf("%d packs kept for a chunk no longer live", got)
	}
}

// Migration 13 makes a handoff live until it has finished: handoffs
// finished before it without a finish time get one, and afterwards a
// session with a live handoff refuses another while a session whose
// handoffs all ended takes a new one.
func TestMigrationKeepsOneLiveHandoffPerSession(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	db, exec := atVersion(t, path, 12)
	exec(`INSERT INTO sessions (id, created_at, updated_at) VALUES ('ended', 1, 1), ('pending', 1, 1), ('running', 1, 1)`)
	exec(`INSERT INTO handoffs (session_id, state, platform, requested_at, finished_at) VALUES
		('ended', 'completed', 'web', 5, 0), ('ended', 'failed', 'web', 6, 9),
		('pending', 'failed', 'web', 7, 0), ('pending', 'pending', 'web', 8, 0),
		('running', 'running', 'web', 9, 0)`)
	db.Close()

	s, err := Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var unfinished int
	if err := s.r.QueryRow(`SELECT count(*) FROM handoffs WHERE finished_at = 0 AND state NOT IN ('pending', 'running')`).Scan(&unfinished); err != nil {
		t.Fatal(err)
	}
	if unfinished != 0 {
		t.Errorf("%d ended handoffs without a finish time after the migration", unfinished)
	}
	for _, id := range []string{"pending", "running"} {
		if _, err := s.RequestHandoff(t.Context(), id, "cli", "telegram"); !errors.Is(err, store.ErrHandoffInFlight) {
			t.Errorf("%s: a second live handoff: %v, want ErrHandoffInFlight", id, err)
		}
	}
	h, err := s.RequestHandoff(t.Context(), "ended", "cli", "telegram")
	if err != nil {
		t.Fatalf("a session whose handoffs ended refused a new one: %v", err)
	}
	if _, ok, err := s.ClaimHandoff(t.Context(), h.ID, "gw", time.Minute); !ok || err != nil {
		t.Fatalf("claim: %v, %v", ok, err)
	}
	if ok, err := s.CompleteHandoff(t.Context(), h.ID, "gw"); !ok || err != nil {
		t.Fatalf("complete: %v, %v", ok, err)
	}
	if _, err := s.RequestHandoff(t.Context(), "ended", "cli", "web"); err != nil {
		t.Fatalf("a request after the completed one: %v", err)
	}
}

// atVersion makes a store file at path as a release at schema version n
// left it, and returns it open with a way to run statements that fails
// the test on error.
func atVersion(t *testing.T, path string, n int) (*sql.DB, func(q string, args ...any)) {
	t.Helper()
	db, err := sql.Open("sqlite", path+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := db.Exec(q, args...); err != nil {
			t.Fatal(err)
		}
	}
	exec(`CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_at INTEGER NOT NULL)`)
	for v := 1; v <= n; v++ {
		exec(migrations[v-1])
		exec(`INSERT INTO schema_migrations VALUES (?, 0)`, v)
	}
	return db, exec
}
