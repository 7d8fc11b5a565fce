package sqlite_test

import (
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/store"
	"github.com/baton-agent/baton/internal/store/sqlite"
	"github.com/baton-agent/baton/internal/testutil"
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

// mark is the full-text index's mark and the newest message id.
func mark(t *testing.T, db *sql.DB) (upto, last int64) {
	t.Helper()
	if err := db.QueryRow(`SELECT indexed_upto, (SELECT MAX(id) FROM messages) FROM fts_state`).Scan(&upto, &last); err != nil {
		t.Fatal(err)
	}
	return upto, last
}

// Stored messages are indexed for search in the background, with no
// search asking: no search has to index what was written before it (the
// first search after a million appends used to take 15 s doing so).
func TestMessagesAreIndexedWithoutASearch(t *testing.T) {
	path := filepath.Join(t.TempDir(), sqlite.FileName)
	s, err := sqlite.Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	sid := seedAny(t, s, 5000) // more than one step of the indexer
	if _, err := s.AppendMessages(t.Context(), sid, store.Message{Role: store.RoleUser, Content: "the zeppelin lands at noon"}); err != nil {
		t.Fatal(err)
	}
	db := rawDB(t, path)
	testutil.Eventually(t, 30*time.Second, func() bool { upto, last := mark(t, db); return upto == last },
		"the messages stored to be indexed")
	if n := indexed(t, db, "zeppelin"); n != 1 {
		t.Fatalf("the index finds %d of the 1 message", n)
	}
	var rows, idx int
	if err := db.QueryRow(`SELECT (SELECT COUNT(*) FROM messages), (SELECT COUNT(*) FROM messages_fts_docsize)`).Scan(&rows, &idx); err != nil {
		t.Fatal(err)
	}
	if rows != idx {
		t.Fatalf("%d messages, %d in the index: none may be missing or indexed twice", rows, idx)
	}
}

// A search never waits for a long backlog of messages to index (a store
// written by an earlier baton, or by a process killed before it
// indexed): it answers from the index as it is, and the background
// indexes the rest. A short backlog it indexes first.
func TestSearchDoesNotWaitForALongBacklog(t *testing.T) {
	path := filepath.Join(t.TempDir(), sqlite.FileName)
	s, err := sqlite.Open(t.Context(), path, sqlite.WithoutBackgroundIndex())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	sid := seedAny(t, s, 5000)
	db := rawDB(t, path)
	if upto, _ := mark(t, db); upto != 0 {
		t.Fatalf("nothing indexes here but searches, and the mark is at %d", upto)
	}
	if _, err := s.Search(t.Context(), store.SearchQuery{Text: "kubernetes"}); err != nil {
		t.Fatal(err)
	}
	if upto, last := mark(t, db); upto != 0 {
		t.Fatalf("the search indexed %d of %d messages before answering", upto, last)
	}

	// A store indexed up to its last messages: a search indexes those.
	s2, err := sqlite.Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	testutil.Eventually(t, 30*time.Second, func() bool { upto, last := mark(t, db); return upto == last },
		"the opening process to index what was left")
	if _, err := s.AppendMessages(t.Context(), sid, store.Message{Role: store.RoleUser, Content: "a quokka arrived"}); err != nil {
		t.Fatal(err)
	}
	if hits, err := s.Search(t.Context(), store.SearchQuery{Text: "quokka"}); err != nil || len(hits) != 1 {
		t.Fatalf("a message stored just before the search: %d hits, %v", len(hits), err)
	}
}

// What the index holds follows the messages: a deleted session's leave
// it, and ids used again after a deletion are indexed again.
func TestIndexFollowsDeletions(t *testing.T) {
	s := openTemp(t)
	defer s.Close()
	sess, _ := s.CreateSession(t.Context(), store.Session{OwnerID: "u"})
	if _, err := s.AppendMessages(t.Context(), sess.ID, store.Message{Role: store.RoleUser, Content: "zeppelin one"}); err != nil {
		t.Fatal(err)
	}
	if hits, err := s.Search(t.Context(), store.SearchQuery{Text: "zeppelin"}); err != nil || len(hits) != 1 {
		t.Fatalf("%d hits, %v", len(hits), err)
	}
	if err := s.DeleteSession(t.Context(), sess.ID); err != nil {
		t.Fatal(err)
	}
	other, _ := s.CreateSession(t.Context(), store.Session{OwnerID: "u"})
	if _, err := s.AppendMessages(t.Context(), other.ID, store.Message{Role: store.RoleUser, Content: "zeppelin two"}); err != nil {
		t.Fatal(err)
	}
	hits, err := s.Search(t.Context(), store.SearchQuery{Text: "zeppelin"})
	if err != nil || len(hits) != 1 || hits[0].Message.SessionID != other.ID {
		t.Fatalf("search after the ids were used again: %+v, %v", hits, err)
	}
}
