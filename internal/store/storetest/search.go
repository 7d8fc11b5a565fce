package storetest

import (
	"strings"
	"testing"

	"github.com/baton-agent/baton/internal/store"
)

var searchTests = map[string]func(*testing.T, store.Store){
	"FindsWithSnippetAndFilters": func(t *testing.T, s store.Store) {
		a := newSession(t, s, "u", "deploy notes")
		b := newSession(t, s, "u", "")
		appendText(t, s, a.ID, store.RoleUser, "how do I deploy the kubernetes cluster today")
		appendText(t, s, a.ID, store.RoleAssistant, "run the kubernetes deploy script")
		appendText(t, s, b.ID, store.RoleUser, "kubernetes is great")
		appendText(t, s, b.ID, store.RoleUser, "nothing to see")

		hits := must(s.Search(ctx(t), store.SearchQuery{Text: "kubernetes"}))
		eq(t, "all hits", len(hits), 3)
		for _, h := range hits {
			if !strings.Contains(h.Snippet, "[kubernetes]") {
				t.Fatalf("snippet %q does not mark the match", h.Snippet)
			}
		}
		hits = must(s.Search(ctx(t), store.SearchQuery{Text: "kubernetes", SessionID: b.ID}))
		eq(t, "session filter", len(hits), 1)
		eq(t, "session filter id", hits[0].Message.SessionID, b.ID)
		hits = must(s.Search(ctx(t), store.SearchQuery{Text: "kubernetes", Role: store.RoleAssistant}))
		eq(t, "role filter", len(hits), 1)
		eq(t, "title", hits[0].Title, "deploy notes")
		eq(t, "two words are both required", len(must(s.Search(ctx(t), store.SearchQuery{Text: "deploy today"}))), 1)
		eq(t, "prefix", len(must(s.Search(ctx(t), store.SearchQuery{Text: "kube*"}))), 3)
		eq(t, "limit", len(must(s.Search(ctx(t), store.SearchQuery{Text: "kubernetes", Limit: 2}))), 2)
		eq(t, "no match", len(must(s.Search(ctx(t), store.SearchQuery{Text: "zebra"}))), 0)
	},
	"RawQueriesNeverCrash": func(t *testing.T, s store.Store) {
		a := newSession(t, s, "u", "")
		appendText(t, s, a.ID, store.RoleUser, `she said "foo" AND OR NOT near(x) col:val`)
		literal := map[string]int{
			`"foo`:        1,
			`foo"`:        1,
			`AND OR`:      1,
			`NOT`:         1,
			`near(x)`:     1,
			`col:val`:     1,
			`(foo`:        1,
			`foo )`:       1,
			`{foo}`:       1,
			`foo^`:        1,
			`-foo`:        1,
			`+foo`:        1,
			`"" foo ""`:   1,
			`said' OR '`:  1,
			`missing AND`: 0,
		}
		for q, want := range literal {
			hits, err := s.Search(ctx(t), store.SearchQuery{Text: q})
			if err != nil {
				t.Fatalf("query %q: %v", q, err)
			}
			if len(hits) != want {
				t.Fatalf("query %q: %d hits, want %d", q, len(hits), want)
			}
		}
		for _, q := range []string{`*`, `"`, `""`, ``, `   `, `()`, `**`, `^`} {
			_, err := s.Search(ctx(t), store.SearchQuery{Text: q})
			wantErr(t, err, store.ErrInvalid)
		}
	},
	"CaseAndAccentsDoNotMatter": func(t *testing.T, s store.Store) {
		a := newSession(t, s, "u", "")
		appendText(t, s, a.ID, store.RoleUser, "Le CAFÉ près de l'École")
		for _, q := range []string{"café", "cafe", "CAFE", "école", "ecole", "PRES", "caf*"} {
			eq(t, "hits for "+q, len(must(s.Search(ctx(t), store.SearchQuery{Text: q}))), 1)
		}
	},
	"WordsAreLettersAndDigits": func(t *testing.T, s store.Store) {
		a := newSession(t, s, "u", "")
		appendText(t, s, a.ID, store.RoleUser, "run snake_case v1.2 on über-cool mail@example.com, a+b ≥ 3 日本語")
		for q, want := range map[string]int{
			"snake": 1, "case": 1, "snake_case": 1, "v1": 1, "v1.2": 1, "2": 1, "uber": 1, "cool": 1,
			"example": 1, "mail@example": 1, "a+b": 1, "b+a": 0, "3": 1, "日本語": 1, "snakecase": 0, "exam": 0, "exam*": 1,
		} {
			eq(t, "hits for "+q, len(must(s.Search(ctx(t), store.SearchQuery{Text: q}))), want)
		}
	},
	"SupersededRowsAreNotFound": func(t *testing.T, s store.Store) {
		a := newSession(t, s, "u", "")
		appendText(t, s, a.ID, store.RoleUser, "secret plan")
		must(s.ReplaceTranscript(ctx(t), a.ID, []store.Message{{Role: store.RoleUser, Content: "summary"}}))
		eq(t, "old row hidden", len(must(s.Search(ctx(t), store.SearchQuery{Text: "plan"}))), 0)
		eq(t, "new row found", len(must(s.Search(ctx(t), store.SearchQuery{Text: "summary"}))), 1)
	},
	"IndexKeepsUpWithDeletesAndNewRows": func(t *testing.T, s store.Store) {
		a := newSession(t, s, "u", "")
		for i := range 5 {
			appendText(t, s, a.ID, store.RoleUser, "alpha "+nth(i))
		}
		eq(t, "alpha before delete", len(must(s.Search(ctx(t), store.SearchQuery{Text: "alpha"}))), 5)
		noErr(t, s.DeleteSession(ctx(t), a.ID))
		b := newSession(t, s, "u", "")
		appendText(t, s, b.ID, store.RoleUser, "bravo one")
		appendText(t, s, b.ID, store.RoleUser, "alpha again")
		eq(t, "alpha after delete", len(must(s.Search(ctx(t), store.SearchQuery{Text: "alpha"}))), 1)
		eq(t, "bravo", len(must(s.Search(ctx(t), store.SearchQuery{Text: "bravo"}))), 1)
		c := newSession(t, s, "u", "")
		appendText(t, s, c.ID, store.RoleUser, "charlie")
		noErr(t, s.DeleteSession(ctx(t), c.ID)) // deleted before any search saw it
		appendText(t, s, b.ID, store.RoleUser, "delta")
		eq(t, "charlie gone", len(must(s.Search(ctx(t), store.SearchQuery{Text: "charlie"}))), 0)
		eq(t, "delta", len(must(s.Search(ctx(t), store.SearchQuery{Text: "delta"}))), 1)
	},
}
