package postgres_test

import (
	"bytes"
	"errors"
	"reflect"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/baton-agent/baton/internal/store"
	"github.com/baton-agent/baton/internal/store/postgres"
	"github.com/baton-agent/baton/internal/store/postgres/pgtest"
	"github.com/baton-agent/baton/internal/store/storetest"
)

func open(t *testing.T, url string, opts ...postgres.Option) *postgres.Store {
	t.Helper()
	s, err := postgres.Open(t.Context(), url, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func check(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// sameTranscript fails unless a's transcript of id, read through its
// cache, is the one a process reading it afresh gets.
func sameTranscript(t *testing.T, what string, a, fresh *postgres.Store, id string) {
	t.Helper()
	got, err := a.TurnStart(t.Context(), id)
	check(t, err)
	want, err := fresh.TurnStart(t.Context(), id)
	check(t, err)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s: the cached turn start differs from a fresh read:\ncached: %+v\nfresh:  %+v", what, got, want)
	}
}

// TestTranscriptCacheSeesOtherProcesses: a process holding a session's
// transcript in its cache reads what another wrote since: appends, a
// replaced transcript, a voice note's transcript heard, the session
// deleted and made again under its id.
func TestTranscriptCacheSeesOtherProcesses(t *testing.T) {
	u := pgtest.NewDatabase(t)
	a, b := open(t, u), open(t, u)
	fresh := open(t, u, postgres.WithoutTranscriptCache())
	ctx := t.Context()
	sess, err := a.CreateSession(ctx, store.Session{OwnerID: "u", Platform: "cli"})
	check(t, err)
	msg := func(text string) store.Message { return store.Message{Role: store.RoleUser, Content: text} }
	_, err = a.AppendMessages(ctx, sess.ID, msg("one"), msg("two"))
	check(t, err)
	sameTranscript(t, "loaded", a, fresh, sess.ID)

	_, err = a.AppendMessages(ctx, sess.ID, msg("three, appended here"))
	check(t, err)
	sameTranscript(t, "appended by the same process", a, fresh, sess.ID)
	_, err = b.AppendMessages(ctx, sess.ID, msg("four, appended elsewhere"))
	check(t, err)
	sameTranscript(t, "appended by another process", a, fresh, sess.ID)

	voice, err := b.PutFile(ctx, bytes.NewReader(storetest.PNG(t, 2, 2)), "voice.png")
	check(t, err)
	stored, err := b.AppendMessages(ctx, sess.ID, store.Message{Role: store.RoleUser, Content: "listen", Attachments: []store.Attachment{voice}})
	check(t, err)
	sameTranscript(t, "an attachment appended", a, fresh, sess.ID)
	check(t, b.SetTranscript(ctx, stored[0].Attachments[0].ID, "what it says"))
	sameTranscript(t, "a voice note's transcript heard elsewhere", a, fresh, sess.ID)

	_, err = b.ReplaceTranscript(ctx, sess.ID, []store.Message{msg("a summary")})
	check(t, err)
	sameTranscript(t, "replaced elsewhere", a, fresh, sess.ID)
	check(t, b.SetDraft(ctx, sess.ID, "half"))
	sameTranscript(t, "a draft kept elsewhere", a, fresh, sess.ID)

	check(t, b.DeleteSession(ctx, sess.ID))
	if _, err := a.Transcript(ctx, sess.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("transcript of a session deleted elsewhere: %v, want ErrNotFound", err)
	}

	// Made again under its id, it is another transcript, even where its
	// generation and seqs would let the cached one pass for its start.
	other, err := a.CreateSession(ctx, store.Session{OwnerID: "u"})
	check(t, err)
	_, err = a.AppendMessages(ctx, other.ID, msg("first making"), msg("of the session"))
	check(t, err)
	sameTranscript(t, "first making", a, fresh, other.ID)
	check(t, b.DeleteSession(ctx, other.ID))
	_, err = b.CreateSession(ctx, store.Session{ID: other.ID, OwnerID: "u"})
	check(t, err)
	_, err = b.AppendMessages(ctx, other.ID, msg("made again"), msg("with other words"), msg("and more"))
	check(t, err)
	sameTranscript(t, "deleted and made again under its id", a, fresh, other.ID)
}

// TestTranscriptCacheReadsOnlyTheSessionRow shows a loaded transcript is
// answered from the process's cache while the session row says it is
// current: a row changed behind the store's back (no store writes so)
// is not read again, where a store without the cache reads it.
func TestTranscriptCacheReadsOnlyTheSessionRow(t *testing.T) {
	u := pgtest.NewDatabase(t)
	a := open(t, u)
	ctx := t.Context()
	sess, err := a.CreateSession(ctx, store.Session{OwnerID: "u"})
	check(t, err)
	_, err = a.AppendMessages(ctx, sess.ID, store.Message{Role: store.RoleUser, Content: "as stored"})
	check(t, err)
	_, err = a.Transcript(ctx, sess.ID)
	check(t, err)

	conn, err := pgx.Connect(ctx, u)
	check(t, err)
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, `UPDATE messages SET content = 'changed behind the store' WHERE session_id = $1`, sess.ID)
	check(t, err)

	tr, err := a.Transcript(ctx, sess.ID)
	check(t, err)
	if tr[0].Content != "as stored" {
		t.Errorf("the cached transcript was read again: %q", tr[0].Content)
	}
	tr, err = open(t, u, postgres.WithoutTranscriptCache()).Transcript(ctx, sess.ID)
	check(t, err)
	if tr[0].Content != "changed behind the store" {
		t.Errorf("a store without the cache read %q", tr[0].Content)
	}
	// The returned transcript is the caller's: changing it leaves the cache.
	mine, err := a.Transcript(ctx, sess.ID)
	check(t, err)
	mine[0].Content = "mine"
	tr, err = a.Transcript(ctx, sess.ID)
	check(t, err)
	if tr[0].Content != "as stored" {
		t.Errorf("a caller's change reached the cache: %q", tr[0].Content)
	}
}
