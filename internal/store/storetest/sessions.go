package storetest

import (
	"strings"
	"testing"

	"github.com/baton-agent/baton/internal/store"
)

var sessionTests = map[string]func(*testing.T, store.Store){
	"CreateAndGet": func(t *testing.T, s store.Store) {
		in := store.Session{OwnerID: "u1", Title: "first", Model: "gpt", Platform: "cli", ParentID: "p0"}
		got := must(s.CreateSession(ctx(t), in))
		if got.ID == "" {
			t.Fatal("no id assigned")
		}
		again := must(s.GetSession(ctx(t), got.ID))
		eq(t, "owner", again.OwnerID, "u1")
		eq(t, "title", again.Title, "first")
		eq(t, "model", again.Model, "gpt")
		eq(t, "platform", again.Platform, "cli")
		eq(t, "parent", again.ParentID, "p0")
		eq(t, "open", again.Open(), true)
		if again.CreatedAt.IsZero() || again.UpdatedAt.Before(again.CreatedAt) {
			t.Fatalf("times: created %v updated %v", again.CreatedAt, again.UpdatedAt)
		}
		_, err := s.GetSession(ctx(t), "nope")
		wantErr(t, err, store.ErrNotFound)
		_, err = s.CreateSession(ctx(t), store.Session{ID: got.ID})
		wantErr(t, err, store.ErrConflict)
	},
	"ListNewestFirstWithFilters": func(t *testing.T, s store.Store) {
		a := newSession(t, s, "u1", "alpha project")
		b := must(s.CreateSession(ctx(t), store.Session{OwnerID: "u1", Title: "beta", Platform: "telegram"}))
		c := newSession(t, s, "u2", "gamma project")
		appendText(t, s, a.ID, store.RoleUser, "bump a") // a is now the most recently active
		eqSlice(t, "all", ids(must(s.ListSessions(ctx(t), store.SessionFilter{}))), []string{a.ID, c.ID, b.ID})
		eqSlice(t, "owner u1", ids(must(s.ListSessions(ctx(t), store.SessionFilter{OwnerID: "u1"}))), []string{a.ID, b.ID})
		eqSlice(t, "platform", ids(must(s.ListSessions(ctx(t), store.SessionFilter{Platform: "telegram"}))), []string{b.ID})
		eqSlice(t, "text", ids(must(s.ListSessions(ctx(t), store.SessionFilter{Text: "PROJECT"}))), []string{a.ID, c.ID})
		eqSlice(t, "limit", ids(must(s.ListSessions(ctx(t), store.SessionFilter{Limit: 1, Offset: 1}))), []string{c.ID})
		// LIKE wildcards in the text are literal.
		eq(t, "percent matches nothing", len(must(s.ListSessions(ctx(t), store.SessionFilter{Text: "%"}))), 0)
		eq(t, "message count", must(s.GetSession(ctx(t), a.ID)).MessageCount, 1)
	},
	"TitleSanitizedAndUniquePerOwner": func(t *testing.T, s store.Store) {
		a := newSession(t, s, "u1", "")
		got := must(s.SetTitle(ctx(t), a.ID, "  my\u202e  title\x07\n "))
		eq(t, "sanitized title", got.Title, "my title")
		b := newSession(t, s, "u1", "")
		_, err := s.SetTitle(ctx(t), b.ID, "my title")
		wantErr(t, err, store.ErrTitleTaken)
		wantErr(t, err, store.ErrConflict)
		// Another owner may use the same title.
		c := newSession(t, s, "u2", "")
		must(s.SetTitle(ctx(t), c.ID, "my title"))
		_, err = s.SetTitle(ctx(t), b.ID, strings.Repeat("x", store.MaxTitleLen+1))
		wantErr(t, err, store.ErrInvalid)
		_, err = s.SetTitle(ctx(t), b.ID, "\u200b\u2066\x00")
		wantErr(t, err, store.ErrInvalid)
		got = must(s.SetTitle(ctx(t), b.ID, strings.Repeat("é", store.MaxTitleLen)))
		eq(t, "100 characters kept", len([]rune(got.Title)), store.MaxTitleLen)
		_, err = s.SetTitle(ctx(t), "missing", "x")
		wantErr(t, err, store.ErrNotFound)
		_, err = s.CreateSession(ctx(t), store.Session{OwnerID: "u1", Title: "my title"})
		wantErr(t, err, store.ErrTitleTaken)
	},
	"Resolve": func(t *testing.T, s store.Store) {
		a := newSession(t, s, "u1", "work")
		a2 := newSession(t, s, "u1", "work #2")
		a3 := newSession(t, s, "u1", "work #3")
		other := newSession(t, s, "u2", "work #9")
		eq(t, "by id", must(s.ResolveSession(ctx(t), "u1", a.ID)).ID, a.ID)
		eq(t, "bare title gives newest of lineage", must(s.ResolveSession(ctx(t), "u1", "work")).ID, a3.ID)
		eq(t, "numbered title is exact", must(s.ResolveSession(ctx(t), "u1", "work #2")).ID, a2.ID)
		eq(t, "unique prefix", must(s.ResolveSession(ctx(t), "u1", a2.ID[:10])).ID, a2.ID)
		_, err := s.ResolveSession(ctx(t), "u1", other.ID)
		wantErr(t, err, store.ErrNotFound) // another owner's session is not found
		_, err = s.ResolveSession(ctx(t), "u1", "nothing like it")
		wantErr(t, err, store.ErrNotFound)
		_, err = s.ResolveSession(ctx(t), "u1", "  ")
		wantErr(t, err, store.ErrInvalid)
		// "wor" is neither a title nor a lineage name; as an id prefix it
		// matches nothing (ids are hex).
		_, err = s.ResolveSession(ctx(t), "u1", "wor")
		wantErr(t, err, store.ErrNotFound)
		// A LIKE wildcard is not a prefix of everything.
		_, err = s.ResolveSession(ctx(t), "u1", "%")
		wantErr(t, err, store.ErrNotFound)
	},
	"ResolveAmbiguousPrefix": func(t *testing.T, s store.Store) {
		must(s.CreateSession(ctx(t), store.Session{ID: "abc123", OwnerID: "u"}))
		must(s.CreateSession(ctx(t), store.Session{ID: "abc456", OwnerID: "u"}))
		_, err := s.ResolveSession(ctx(t), "u", "abc")
		wantErr(t, err, store.ErrAmbiguous)
		eq(t, "longer prefix", must(s.ResolveSession(ctx(t), "u", "abc4")).ID, "abc456")
	},
	"EndReopenDelete": func(t *testing.T, s store.Store) {
		a := newSession(t, s, "u1", "t")
		appendText(t, s, a.ID, store.RoleUser, "hello")
		noErr(t, s.EndSession(ctx(t), a.ID, "user quit"))
		got := must(s.GetSession(ctx(t), a.ID))
		eq(t, "open after end", got.Open(), false)
		eq(t, "reason", got.EndReason, "user quit")
		eq(t, "transcript kept", len(must(s.Transcript(ctx(t), a.ID))), 1)
		noErr(t, s.ReopenSession(ctx(t), a.ID))
		got = must(s.GetSession(ctx(t), a.ID))
		eq(t, "open after reopen", got.Open(), true)
		eq(t, "reason cleared", got.EndReason, "")
		wantErr(t, s.EndSession(ctx(t), "missing", "x"), store.ErrNotFound)

		_, err := s.Bind(ctx(t), "web:thread:1", a.ID)
		noErr(t, err)
		must(s.RequestHandoff(ctx(t), a.ID, "cli", "web"))
		noErr(t, s.DeleteSession(ctx(t), a.ID))
		_, err = s.GetSession(ctx(t), a.ID)
		wantErr(t, err, store.ErrNotFound)
		_, err = s.Transcript(ctx(t), a.ID)
		wantErr(t, err, store.ErrNotFound)
		_, err = s.LookupBinding(ctx(t), "web:thread:1")
		wantErr(t, err, store.ErrNotFound)
		eq(t, "pending after delete", len(must(s.PendingHandoffs(ctx(t)))), 0)
		eq(t, "search after delete", len(must(s.Search(ctx(t), store.SearchQuery{Text: "hello"}))), 0)
		wantErr(t, s.DeleteSession(ctx(t), a.ID), store.ErrNotFound)
	},
	"UsageAndModel": func(t *testing.T, s store.Store) {
		a := newSession(t, s, "u1", "")
		noErr(t, s.AddUsage(ctx(t), a.ID, store.Usage{InputTokens: 10, OutputTokens: 3}))
		noErr(t, s.AddUsage(ctx(t), a.ID, store.Usage{InputTokens: 5, OutputTokens: 2}))
		noErr(t, s.SetModel(ctx(t), a.ID, "claude"))
		got := must(s.GetSession(ctx(t), a.ID))
		eq(t, "input", got.InputTokens, int64(15))
		eq(t, "output", got.OutputTokens, int64(5))
		eq(t, "model", got.Model, "claude")
		wantErr(t, s.AddUsage(ctx(t), "missing", store.Usage{}), store.ErrNotFound)
	},
	"Voice": func(t *testing.T, s store.Store) {
		a := newSession(t, s, "u1", "")
		eq(t, "voice at first", must(s.GetSession(ctx(t), a.ID)).Voice, false)
		noErr(t, s.SetVoice(ctx(t), a.ID, true))
		eq(t, "voice on", must(s.GetSession(ctx(t), a.ID)).Voice, true)
		_, err := s.Bind(ctx(t), "telegram:dm:9", a.ID)
		noErr(t, err)
		eq(t, "bound session's voice", must(s.BoundSession(ctx(t), "telegram:dm:9")).Voice, true)
		noErr(t, s.SetVoice(ctx(t), a.ID, false))
		eq(t, "voice off", must(s.GetSession(ctx(t), a.ID)).Voice, false)
		wantErr(t, s.SetVoice(ctx(t), "missing", true), store.ErrNotFound)
		spoken := must(s.CreateSession(ctx(t), store.Session{OwnerID: "u1", Voice: true}))
		eq(t, "made spoken", must(s.GetSession(ctx(t), spoken.ID)).Voice, true)
	},
	"Export": func(t *testing.T, s store.Store) {
		a := newSession(t, s, "u1", "exported")
		appendText(t, s, a.ID, store.RoleUser, "one")
		must(s.ReplaceTranscript(ctx(t), a.ID, []store.Message{{Role: store.RoleUser, Content: "summary"}}))
		_, err := s.Bind(ctx(t), "telegram:dm:1", a.ID)
		noErr(t, err)
		e := must(store.ExportSession(ctx(t), s, a.ID))
		eq(t, "title", e.Session.Title, "exported")
		eqSlice(t, "history", contents(e.Messages), []string{"user:one", "user:summary"})
		eq(t, "first superseded", e.Messages[0].Superseded, true)
		eq(t, "bindings", len(e.Bindings), 1)
		eq(t, "handoff", e.Handoff.State, store.HandoffNone)
		js := string(must(store.MarshalExport(e)))
		if !strings.Contains(js, `"summary"`) || !strings.Contains(js, `"exported"`) {
			t.Fatalf("export JSON lacks content: %s", js)
		}
		_, err = store.ExportSession(ctx(t), s, "missing")
		wantErr(t, err, store.ErrNotFound)
	},
}
