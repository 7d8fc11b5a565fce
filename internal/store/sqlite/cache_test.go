package sqlite_test

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/store"
	"github.com/baton-agent/baton/internal/store/sqlite"
)

// Two Store values on one file stand for the terminal and the gateway: each
// caches transcripts, and each must see the other's writes at once.
func TestTranscriptCacheSeesOtherWriters(t *testing.T) {
	path := filepath.Join(t.TempDir(), sqlite.FileName)
	a, err := sqlite.Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := sqlite.Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx := t.Context()
	sess, _ := a.CreateSession(ctx, store.Session{ID: "fixed"})
	load := func(s *sqlite.Store) []string {
		t.Helper()
		tr, err := s.Transcript(ctx, "fixed")
		if err != nil {
			t.Fatal(err)
		}
		out := make([]string, len(tr))
		for i, m := range tr {
			out[i] = m.Content
		}
		return out
	}
	want := func(got []string, w ...string) {
		t.Helper()
		if len(got) != len(w) {
			t.Fatalf("got %q, want %q", got, w)
		}
		for i := range w {
			if got[i] != w[i] {
				t.Fatalf("got %q, want %q", got, w)
			}
		}
	}
	a.AppendMessages(ctx, sess.ID, store.Message{Role: store.RoleUser, Content: "one"})
	want(load(a), "one")
	want(load(b), "one")
	b.AppendMessages(ctx, sess.ID, store.Message{Role: store.RoleAssistant, Content: "two"})
	want(load(a), "one", "two") // a's cache is extended, not stale
	// A caller changing its copy cannot change what the next caller gets.
	tr, _ := a.Transcript(ctx, "fixed")
	tr[0].Content = "scribbled"
	want(load(a), "one", "two")
	// Replacement by the other process, including by an empty transcript.
	b.ReplaceTranscript(ctx, sess.ID, []store.Message{{Role: store.RoleUser, Content: "summary"}})
	want(load(a), "summary")
	b.ReplaceTranscript(ctx, sess.ID, nil)
	want(load(a))
	// Delete and recreate under the same id.
	a.AppendMessages(ctx, sess.ID, store.Message{Role: store.RoleUser, Content: "old life"})
	want(load(a), "old life")
	b.DeleteSession(ctx, "fixed")
	if _, err := a.Transcript(ctx, "fixed"); err == nil {
		t.Fatal("deleted session still loads")
	}
	b.CreateSession(ctx, store.Session{ID: "fixed"})
	b.AppendMessages(ctx, "fixed", store.Message{Role: store.RoleUser, Content: "new life"})
	want(load(a), "new life")
}

func TestTranscriptCacheIsBounded(t *testing.T) {
	// Many sessions through one store, ten times more messages than the
	// cache holds: every load stays correct while the cache evicts.
	s, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), sqlite.FileName), sqlite.WithCacheLimit(1200))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := t.Context()
	var ids []string
	for range 30 {
		sess, _ := s.CreateSession(ctx, store.Session{})
		msgs := make([]store.Message, 400)
		for j := range msgs {
			msgs[j] = store.Message{Role: store.RoleUser, Content: fmt.Sprint(sess.ID, " ", j)}
		}
		if _, err := s.AppendMessages(ctx, sess.ID, msgs...); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, sess.ID)
	}
	for round := range 2 {
		for _, id := range ids {
			tr, err := s.Transcript(ctx, id)
			if err != nil || len(tr) != 400 || tr[0].Content != id+" 0" || tr[399].Content != id+" 399" {
				t.Fatalf("round %d session %s: %d rows, %v", round, id, len(tr), err)
			}
		}
	}
}

// An append adds its messages to the cached transcript (the next load
// reads none back), in exactly the form a load from the file gives: every
// field, for every kind of message.
func TestAppendExtendsTheCacheAsALoadWould(t *testing.T) {
	path := filepath.Join(t.TempDir(), sqlite.FileName)
	s, err := sqlite.Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := t.Context()
	sess, _ := s.CreateSession(ctx, store.Session{})
	if _, err := s.AppendMessages(ctx, sess.ID, store.Message{Role: store.RoleUser, Content: "first"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Transcript(ctx, sess.ID); err != nil { // cached from here
		t.Fatal(err)
	}
	at := time.Date(2026, 3, 4, 5, 6, 7, 8, time.FixedZone("x", 3600))
	msgs := []store.Message{
		{Role: store.RoleUser, Content: "hi", Platform: "telegram", PlatformMsgID: "m1", CreatedAt: at},
		{Role: store.RoleAssistant, ToolCalls: json.RawMessage(`[{"id":"c1","name":"shell","arguments":{}}]`)},
		{Role: store.RoleTool, Content: "out", ToolCallID: "c1", ToolName: "shell"},
		{Role: store.RoleAssistant, Content: "done", ToolCalls: json.RawMessage{}, Kind: store.KindNotice},
	}
	if _, err := s.AppendMessagesWithUsage(ctx, sess.ID, store.Usage{InputTokens: 3}, msgs[:2]...); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AppendMessages(ctx, sess.ID, msgs[2:]...); err != nil {
		t.Fatal(err)
	}
	if n, ok := sqlite.CachedCount(s, sess.ID); !ok || n != 5 {
		t.Errorf("the cache holds %d messages (%v) after the appends, want all 5", n, ok)
	}
	got, err := s.Transcript(ctx, sess.ID)
	if err != nil {
		t.Fatal(err)
	}
	fresh, err := sqlite.Open(ctx, path, sqlite.WithoutTranscriptCache())
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	want, err := fresh.Transcript(ctx, sess.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 5 || !reflect.DeepEqual(got, want) {
		t.Fatalf("cached:\n%+v\nfrom the file:\n%+v", got, want)
	}
}

// A gateway loads the transcript of every conversation it answers: the
// cache keeps only the recently used ones, within a bound in bytes, so
// what it holds does not grow with conversations that have gone idle.
// Here 40 transcripts of 10 messages of 64 KiB (25 MiB in all, far fewer
// messages than the message bound) are each loaded and extended; the
// cache holds no more than its 8 MiB of them, and every load stays whole.
func TestTranscriptCacheIsBoundedInBytes(t *testing.T) {
	s, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), sqlite.FileName))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := t.Context()
	const sessions, perSession, size = 40, 10, 64 << 10
	body := strings.Repeat("x", size)
	var ids []string
	for range sessions {
		sess, err := s.CreateSession(ctx, store.Session{})
		if err != nil {
			t.Fatal(err)
		}
		msgs := make([]store.Message, perSession-1)
		for j := range msgs {
			msgs[j] = store.Message{Role: store.RoleUser, Content: body}
		}
		if _, err := s.AppendMessages(ctx, sess.ID, msgs...); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Transcript(ctx, sess.ID); err != nil { // cached from here
			t.Fatal(err)
		}
		if _, err := s.AppendMessages(ctx, sess.ID, store.Message{Role: store.RoleAssistant, Content: body}); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, sess.ID)
	}
	held := 0
	for _, id := range ids {
		if n, ok := sqlite.CachedCount(s, id); ok {
			held += n * size
		}
	}
	if held > 8<<20 {
		t.Errorf("the cache holds %d MiB of transcripts, over its 8 MiB", held>>20)
	}
	if held == 0 {
		t.Error("the cache holds nothing")
	}
	for _, id := range ids {
		tr, err := s.Transcript(ctx, id)
		if err != nil || len(tr) != perSession || tr[perSession-1].Content != body {
			t.Fatalf("session %s: %d messages, %v", id, len(tr), err)
		}
	}
}
