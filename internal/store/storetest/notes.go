package storetest

import (
	"testing"

	"github.com/baton-agent/baton/internal/store"
)

var noteTests = map[string]func(*testing.T, store.Store){
	"SaveAndLatest": func(t *testing.T, s store.Store) {
		sess := newSession(t, s, "u1", "")
		other := newSession(t, s, "u1", "")
		_, err := s.LatestNote(ctx(t), sess.ID)
		wantErr(t, err, store.ErrNotFound)
		first, isNew := must2(s.AddNote(ctx(t), store.Note{SessionID: sess.ID, Body: `{"task":"one"}`}))
		eq(t, "first is new", isNew, true)
		eq(t, "no handoff", first.HandoffID, 0)
		eq(t, "created at set", first.CreatedAt.IsZero(), false)
		second, isNew := must2(s.AddNote(ctx(t), store.Note{SessionID: sess.ID, Body: `{"task":"two"}`, Fallback: "the model was away"}))
		eq(t, "a second save is stored too", isNew, true)
		must2(s.AddNote(ctx(t), store.Note{SessionID: other.ID, Body: `{"task":"elsewhere"}`}))
		latest := must(s.LatestNote(ctx(t), sess.ID))
		eq(t, "latest", latest.ID, second.ID)
		eq(t, "latest body", latest.Body, `{"task":"two"}`)
		eq(t, "fallback kept", latest.Fallback, "the model was away")
		all := must(s.SessionNotes(ctx(t), sess.ID))
		eq(t, "notes of the session", len(all), 2)
		eq(t, "oldest first", all[0].ID, first.ID)
	},
	"OnePerHandoff": func(t *testing.T, s store.Store) {
		sess := newSession(t, s, "u1", "")
		h := request(t, s, sess.ID, "telegram")
		_, err := s.HandoffNote(ctx(t), h.ID)
		wantErr(t, err, store.ErrNotFound)
		first, isNew := must2(s.AddNote(ctx(t), store.Note{SessionID: sess.ID, HandoffID: h.ID, Body: `{"task":"first"}`}))
		eq(t, "new", isNew, true)
		eq(t, "handoff recorded", first.HandoffID, h.ID)
		again, isNew := must2(s.AddNote(ctx(t), store.Note{SessionID: sess.ID, HandoffID: h.ID, Body: `{"task":"retried"}`}))
		eq(t, "a retry is not new", isNew, false)
		eq(t, "a retry gets the first note", again.ID, first.ID)
		eq(t, "first body kept", must(s.HandoffNote(ctx(t), h.ID)).Body, `{"task":"first"}`)
		eq(t, "one note", len(must(s.SessionNotes(ctx(t), sess.ID))), 1)
	},
	"Refusals": func(t *testing.T, s store.Store) {
		sess := newSession(t, s, "u1", "")
		other := newSession(t, s, "u1", "")
		h := request(t, s, other.ID, "telegram")
		_, _, err := s.AddNote(ctx(t), store.Note{SessionID: sess.ID, Body: "  "})
		wantErr(t, err, store.ErrInvalid)
		_, _, err = s.AddNote(ctx(t), store.Note{Body: `{}`})
		wantErr(t, err, store.ErrInvalid)
		_, _, err = s.AddNote(ctx(t), store.Note{SessionID: "nope", Body: `{}`})
		wantErr(t, err, store.ErrNotFound)
		_, _, err = s.AddNote(ctx(t), store.Note{SessionID: sess.ID, HandoffID: h.ID, Body: `{}`})
		wantErr(t, err, store.ErrNotFound) // another session's handoff
		_, _, err = s.AddNote(ctx(t), store.Note{SessionID: sess.ID, HandoffID: h.ID + 100, Body: `{}`})
		wantErr(t, err, store.ErrNotFound)
		eq(t, "nothing stored", len(must(s.SessionNotes(ctx(t), sess.ID))), 0)
	},
	"GoWithTheirSession": func(t *testing.T, s store.Store) {
		sess := newSession(t, s, "u1", "")
		h := request(t, s, sess.ID, "web")
		must2(s.AddNote(ctx(t), store.Note{SessionID: sess.ID, HandoffID: h.ID, Body: `{}`}))
		noErr(t, s.DeleteSession(ctx(t), sess.ID))
		_, err := s.HandoffNote(ctx(t), h.ID)
		wantErr(t, err, store.ErrNotFound)
	},
}
