package sqlite_test

import (
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/store"
	"github.com/baton-agent/baton/internal/store/sqlite"
)

// rawDB opens the store's file with plain SQLite, as another program would.
func rawDB(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", path+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// indexed counts the messages the full-text index finds for word, read
// straight from the file: nothing in baton gets a chance to index first.
func indexed(t *testing.T, db *sql.DB, word string) int {
	t.Helper()
	var n int
	if err := db.QueryRow(`SELECT COUNT(*) FROM messages_fts WHERE messages_fts MATCH ?`, word).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// A stored message is in the full-text index when its append returns: no
// search has to index what was written before it (the first search after
// a million appends used to take 15 s doing so).
func TestMessagesAreIndexedAsTheyAreStored(t *testing.T) {
	path := filepath.Join(t.TempDir(), sqlite.FileName)
	s, err := sqlite.Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	sess, _ := s.CreateSession(t.Context(), store.Session{OwnerID: "u"})
	if _, err := s.AppendMessages(t.Context(), sess.ID,
		store.Message{Role: store.RoleUser, Content: "the zeppelin lands at noon"},
		store.Message{Role: store.RoleAssistant, Content: "a zeppelin, noted"}); err != nil {
		t.Fatal(err)
	}
	db := rawDB(t, path)
	if n := indexed(t, db, "zeppelin"); n != 2 {
		t.Fatalf("the index holds %d of the 2 messages just stored", n)
	}
	// Replaced and deleted messages leave the index with their rows.
	if err := s.DeleteSession(t.Context(), sess.ID); err != nil {
		t.Fatal(err)
	}
	if n := indexed(t, db, "zeppelin"); n != 0 {
		t.Fatalf("the index still holds %d messages of a deleted session", n)
	}
	// The ids of the deleted messages are used again: indexed again.
	other, _ := s.CreateSession(t.Context(), store.Session{OwnerID: "u"})
	if _, err := s.AppendMessages(t.Context(), other.ID, store.Message{Role: store.RoleUser, Content: "zeppelin again"}); err != nil {
		t.Fatal(err)
	}
	hits, err := s.Search(t.Context(), store.SearchQuery{Text: "zeppelin"})
	if err != nil || len(hits) != 1 || hits[0].Message.SessionID != other.ID {
		t.Fatalf("search after the ids were used again: %+v, %v", hits, err)
	}
}

// Messages a store written by an earlier baton left unindexed are indexed
// in the background after it opens; what is stored meanwhile is found at
// once.
func TestEarlierMessagesAreIndexedInTheBackground(t *testing.T) {
	path := filepath.Join(t.TempDir(), sqlite.FileName)
	s, err := sqlite.Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	sid := seedAny(t, s, 5000) // more than one chunk of the catch-up
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// What an earlier baton left: every message written since the last
	// search (here, all) outside the index.
	db := rawDB(t, path)
	for _, q := range []string{
		`INSERT INTO messages_fts(messages_fts) VALUES ('delete-all')`,
		`UPDATE fts_state SET indexed_upto = 0, gap_top = (SELECT MAX(id) FROM messages)`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()

	s, err = sqlite.Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.AppendMessages(t.Context(), sid, store.Message{Role: store.RoleUser, Content: "a quokka arrived"}); err != nil {
		t.Fatal(err)
	}
	if hits, err := s.Search(t.Context(), store.SearchQuery{Text: "quokka"}); err != nil || len(hits) != 1 {
		t.Fatalf("a message stored during the catch-up: %d hits, %v", len(hits), err)
	}
	db = rawDB(t, path)
	for {
		var upto, top int64
		if err := db.QueryRow(`SELECT indexed_upto, gap_top FROM fts_state`).Scan(&upto, &top); err != nil {
			t.Fatal(err)
		}
		if top <= upto {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	// sentence(i) names words[i%16] first: 5000/16 rounded up.
	if n := indexed(t, db, `"about kubernetes"`); n != 313 {
		t.Fatalf("after the catch-up the index finds %d of the 313 earlier messages", n)
	}
	var rows, idx int
	if err := db.QueryRow(`SELECT (SELECT COUNT(*) FROM messages), (SELECT COUNT(*) FROM messages_fts_docsize)`).Scan(&rows, &idx); err != nil {
		t.Fatal(err)
	}
	if rows != idx {
		t.Fatalf("%d messages, %d in the index: none may be missing or indexed twice", rows, idx)
	}
}
