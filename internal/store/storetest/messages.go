package storetest

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/store"
)

var messageTests = map[string]func(*testing.T, store.Store){
	"TurnStartReadsSessionDraftAndTranscript": func(t *testing.T, s store.Store) {
		a := newSession(t, s, "u", "")
		appendText(t, s, a.ID, store.RoleUser, "hi")
		noErr(t, s.SetModel(ctx(t), a.ID, "m-1"))
		noErr(t, s.SetDraft(ctx(t), a.ID, "half an ans"))
		ts := must(s.TurnStart(ctx(t), a.ID))
		eq(t, "session", ts.Session.ID, a.ID)
		eq(t, "model", ts.Session.Model, "m-1")
		eq(t, "count", ts.Session.MessageCount, 1)
		eq(t, "draft", ts.Draft, "half an ans")
		eqSlice(t, "transcript", contents(ts.Transcript), []string{"user:hi"})
		appendText(t, s, a.ID, store.RoleAssistant, "whole")
		ts = must(s.TurnStart(ctx(t), a.ID))
		eq(t, "draft cleared by the append", ts.Draft, "")
		eqSlice(t, "transcript after", contents(ts.Transcript), []string{"user:hi", "assistant:whole"})
		eq(t, "count after", ts.Session.MessageCount, 2)
		_, err := s.TurnStart(ctx(t), "missing")
		wantErr(t, err, store.ErrNotFound)
	},
	"AppendWithUsageIsOneWrite": func(t *testing.T, s store.Store) {
		a := newSession(t, s, "u", "")
		got := must(s.AppendMessagesWithUsage(ctx(t), a.ID, store.Usage{InputTokens: 7, OutputTokens: 2},
			store.Message{Role: store.RoleAssistant, Content: "answer"}))
		eq(t, "returned", len(got), 1)
		after := must(s.GetSession(ctx(t), a.ID))
		eq(t, "input tokens", after.InputTokens, int64(7))
		eq(t, "output tokens", after.OutputTokens, int64(2))
		eq(t, "count", after.MessageCount, 1)
		// A failing message leaves the count untouched too.
		_, err := s.AppendMessagesWithUsage(ctx(t), a.ID, store.Usage{InputTokens: 100},
			store.Message{Role: store.RoleAssistant, Content: "ok"}, store.Message{Content: "no role"})
		wantErr(t, err, store.ErrInvalid)
		_, err = s.AppendMessagesWithUsage(ctx(t), "missing", store.Usage{InputTokens: 1}, store.Message{Role: store.RoleUser, Content: "x"})
		wantErr(t, err, store.ErrNotFound)
		after = must(s.GetSession(ctx(t), a.ID))
		eq(t, "input tokens after failures", after.InputTokens, int64(7))
		eqSlice(t, "transcript", contents(must(s.Transcript(ctx(t), a.ID))), []string{"assistant:answer"})
		// Usage alone still counts.
		must(s.AppendMessagesWithUsage(ctx(t), a.ID, store.Usage{OutputTokens: 3}))
		eq(t, "output tokens, usage alone", must(s.GetSession(ctx(t), a.ID)).OutputTokens, int64(5))
	},
	"AppendAndLoadInOrder": func(t *testing.T, s store.Store) {
		a := newSession(t, s, "u", "")
		calls := json.RawMessage(`[{"id":"c1","name":"read_file","arguments":{"path":"x"}}]`)
		at := time.Date(2026, 1, 2, 3, 4, 5, 6000, time.UTC)
		got := must(s.AppendMessages(ctx(t), a.ID,
			store.Message{Role: store.RoleUser, Content: "hi", Platform: "telegram", PlatformMsgID: "m1", CreatedAt: at},
			store.Message{Role: store.RoleAssistant, Content: "", ToolCalls: calls},
			store.Message{Role: store.RoleTool, Content: "file body", ToolCallID: "c1", ToolName: "read_file"},
		))
		eq(t, "returned", len(got), 3)
		if got[0].Seq >= got[1].Seq || got[1].Seq >= got[2].Seq || got[0].ID == 0 {
			t.Fatalf("seqs/ids not assigned in order: %+v", got)
		}
		appendText(t, s, a.ID, store.RoleAssistant, "done")
		tr := must(s.Transcript(ctx(t), a.ID))
		eqSlice(t, "transcript", contents(tr), []string{"user:hi", "assistant:", "tool:file body", "assistant:done"})
		eq(t, "tool calls", string(tr[1].ToolCalls), string(calls))
		eq(t, "no tool calls", tr[0].ToolCalls == nil, true)
		eq(t, "tool call id", tr[2].ToolCallID, "c1")
		eq(t, "tool name", tr[2].ToolName, "read_file")
		eq(t, "platform", tr[0].Platform, "telegram")
		eq(t, "platform msg id", tr[0].PlatformMsgID, "m1")
		if !tr[0].CreatedAt.Equal(at) {
			t.Fatalf("created at = %v, want %v", tr[0].CreatedAt, at)
		}
		eq(t, "session id", tr[3].SessionID, a.ID)
		eq(t, "count", must(s.GetSession(ctx(t), a.ID)).MessageCount, 4)
	},
	"DraftKeptUntilAnAppendOrReplacement": func(t *testing.T, s store.Store) {
		a := newSession(t, s, "u", "")
		b := newSession(t, s, "u", "")
		eq(t, "no draft at first", must(s.Draft(ctx(t), a.ID)), "")
		appendText(t, s, a.ID, store.RoleUser, "tell me a story")
		noErr(t, s.SetDraft(ctx(t), a.ID, "Once upon"))
		noErr(t, s.SetDraft(ctx(t), a.ID, "Once upon a time"))
		noErr(t, s.SetDraft(ctx(t), b.ID, "other"))
		eq(t, "latest draft", must(s.Draft(ctx(t), a.ID)), "Once upon a time")
		eq(t, "a draft does not count as a message", must(s.GetSession(ctx(t), a.ID)).MessageCount, 1)
		appendText(t, s, a.ID, store.RoleAssistant, "Once upon a time, the end.")
		eq(t, "an append clears the draft", must(s.Draft(ctx(t), a.ID)), "")
		eq(t, "another session's draft stays", must(s.Draft(ctx(t), b.ID)), "other")
		noErr(t, s.SetDraft(ctx(t), a.ID, "half"))
		must(s.ReplaceTranscript(ctx(t), a.ID, nil))
		eq(t, "a replacement clears the draft", must(s.Draft(ctx(t), a.ID)), "")
		noErr(t, s.SetDraft(ctx(t), b.ID, ""))
		eq(t, "cleared", must(s.Draft(ctx(t), b.ID)), "")
		wantErr(t, s.SetDraft(ctx(t), "missing", "x"), store.ErrNotFound)
		_, err := s.Draft(ctx(t), "missing")
		wantErr(t, err, store.ErrNotFound)
	},
	"AppendToUnknownSession": func(t *testing.T, s store.Store) {
		_, err := s.AppendMessages(ctx(t), "missing", store.Message{Role: store.RoleUser, Content: "x"})
		wantErr(t, err, store.ErrNotFound)
		_, err = s.Transcript(ctx(t), "missing")
		wantErr(t, err, store.ErrNotFound)
	},
	"AppendIsAllOrNothing": func(t *testing.T, s store.Store) {
		a := newSession(t, s, "u", "")
		_, err := s.AppendMessages(ctx(t), a.ID,
			store.Message{Role: store.RoleUser, Content: "kept?"},
			store.Message{Content: "no role"})
		wantErr(t, err, store.ErrInvalid)
		eq(t, "nothing stored", len(must(s.Transcript(ctx(t), a.ID))), 0)
		eq(t, "count", must(s.GetSession(ctx(t), a.ID)).MessageCount, 0)
	},
	"ContentSurvivesExactly": func(t *testing.T, s store.Store) {
		a := newSession(t, s, "u", "")
		big := strings.Repeat("0123456789abcdef", 1<<16) // 1 MiB
		odd := []string{
			"nul\x00inside\x00",
			big,
			"emoji 🎉 and combining e\u0301 and RTL \u202eabc",
			"\u0000",
			"",
			"line\r\nbreaks\ttabs",
			"\xff\xfe not valid UTF-8",
		}
		for _, c := range odd {
			appendText(t, s, a.ID, store.RoleUser, c)
		}
		tr := must(s.Transcript(ctx(t), a.ID))
		eq(t, "rows", len(tr), len(odd))
		for i, c := range odd {
			if tr[i].Content != c {
				t.Fatalf("message %d: got %d bytes %q…, want %d bytes %q…", i, len(tr[i].Content),
					clip(tr[i].Content), len(c), clip(c))
			}
		}
	},
	"KindRoundTrips": func(t *testing.T, s store.Store) {
		a := newSession(t, s, "u", "")
		kinds := func(ms []store.Message) []string {
			out := make([]string, len(ms))
			for i, m := range ms {
				out[i] = string(m.Role) + ":" + string(m.Kind)
			}
			return out
		}
		got := must(s.AppendMessages(ctx(t), a.ID,
			store.Message{Role: store.RoleUser, Content: "hello"},
			store.Message{Role: store.RoleUser, Kind: store.KindHandoff, Content: "handed off", Platform: "web", PlatformMsgID: "handoff:1"},
			store.Message{Role: store.RoleAssistant, Kind: store.KindNotice, Content: "this chat now continues elsewhere"},
			store.Message{Role: store.RoleAssistant, Content: "hi again"},
		))
		appended := []string{"user:", "user:handoff", "assistant:notice", "assistant:"}
		eqSlice(t, "returned", kinds(got), appended)
		eqSlice(t, "loaded", kinds(must(s.Transcript(ctx(t), a.ID))), appended)
		eq(t, "found by platform id", must(s.FindPlatformMessage(ctx(t), "web", "handoff:1")).Kind, store.KindHandoff)
		tr := must(s.Transcript(ctx(t), a.ID))
		// A compression: a summary stands in for the first three.
		replaced := append([]store.Message{{Role: store.RoleUser, Kind: store.KindSummary, Content: "summary"}}, tr[3:]...)
		eqSlice(t, "replace returned", kinds(must(s.ReplaceTranscript(ctx(t), a.ID, replaced))), []string{"user:summary", "assistant:"})
		eqSlice(t, "loaded after replace", kinds(must(s.Transcript(ctx(t), a.ID))), []string{"user:summary", "assistant:"})
		eqSlice(t, "history", kinds(must(s.History(ctx(t), a.ID))),
			[]string{"user:", "user:handoff", "assistant:notice", "assistant:", "user:summary", "assistant:"})
		hits := must(s.Search(ctx(t), store.SearchQuery{Text: "summary", SessionID: a.ID}))
		eq(t, "hits", len(hits), 1)
		eq(t, "kind of a hit", hits[0].Message.Kind, store.KindSummary)
	},
	"ReplaceTranscriptKeepsHistory": func(t *testing.T, s store.Store) {
		a := newSession(t, s, "u", "")
		for _, c := range []string{"one", "two", "three"} {
			appendText(t, s, a.ID, store.RoleUser, c)
		}
		old := must(s.Transcript(ctx(t), a.ID))
		// /undo: drop the last message.
		must(s.ReplaceTranscript(ctx(t), a.ID, old[:2]))
		eqSlice(t, "after undo", contents(must(s.Transcript(ctx(t), a.ID))), []string{"user:one", "user:two"})
		appendText(t, s, a.ID, store.RoleUser, "four")
		eqSlice(t, "after append", contents(must(s.Transcript(ctx(t), a.ID))), []string{"user:one", "user:two", "user:four"})
		hist := must(s.History(ctx(t), a.ID))
		eqSlice(t, "history", contents(hist), []string{"user:one", "user:two", "user:three", "user:one", "user:two", "user:four"})
		for i, m := range hist {
			eq(t, "superseded flag", m.Superseded, i < 3)
			if i > 0 && m.Seq <= hist[i-1].Seq {
				t.Fatalf("history seq not increasing at %d", i)
			}
		}
		eq(t, "count", must(s.GetSession(ctx(t), a.ID)).MessageCount, 3)
		// Replacing with nothing empties the live transcript.
		must(s.ReplaceTranscript(ctx(t), a.ID, nil))
		eq(t, "empty", len(must(s.Transcript(ctx(t), a.ID))), 0)
		_, err := s.ReplaceTranscript(ctx(t), "missing", nil)
		wantErr(t, err, store.ErrNotFound)
	},
	"ReplaceIsAtomic": func(t *testing.T, s store.Store) {
		a := newSession(t, s, "u", "")
		appendText(t, s, a.ID, store.RoleUser, "keep me")
		_, err := s.ReplaceTranscript(ctx(t), a.ID, []store.Message{{Role: store.RoleUser, Content: "x"}, {Content: "bad"}})
		wantErr(t, err, store.ErrInvalid)
		eqSlice(t, "unchanged", contents(must(s.Transcript(ctx(t), a.ID))), []string{"user:keep me"})
	},
	"FindPlatformMessage": func(t *testing.T, s store.Store) {
		a := newSession(t, s, "u", "")
		must(s.AppendMessages(ctx(t), a.ID, store.Message{Role: store.RoleUser, Content: "x", Platform: "telegram", PlatformMsgID: "42"}))
		eq(t, "found", must(s.FindPlatformMessage(ctx(t), "telegram", "42")).Content, "x")
		_, err := s.FindPlatformMessage(ctx(t), "discord", "42")
		wantErr(t, err, store.ErrNotFound)
		_, err = s.FindPlatformMessage(ctx(t), "telegram", "")
		wantErr(t, err, store.ErrNotFound)
	},
	"SessionsDoNotMix": func(t *testing.T, s store.Store) {
		a := newSession(t, s, "u", "")
		b := newSession(t, s, "u", "")
		for i := range 10 {
			appendText(t, s, a.ID, store.RoleUser, "a"+nth(i))
			appendText(t, s, b.ID, store.RoleUser, "b"+nth(i))
		}
		for _, m := range must(s.Transcript(ctx(t), a.ID)) {
			if !strings.HasPrefix(m.Content, "a") {
				t.Fatalf("session a holds %q", m.Content)
			}
		}
		eq(t, "b rows", len(must(s.Transcript(ctx(t), b.ID))), 10)
	},
}

func clip(s string) string {
	if len(s) > 40 {
		return s[:40]
	}
	return s
}
