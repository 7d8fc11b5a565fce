package storetest

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/store"
)

// honestTests hold every store to what Postgres can keep: see the
// contract in internal/store/text.go.
var honestTests = map[string]func(*testing.T, store.Store){
	"TimesKeptToTheMicrosecond": func(t *testing.T, s store.Store) {
		a := newSession(t, s, "u", "")
		at := time.Date(2026, 1, 2, 3, 4, 5, 123456789, time.UTC)
		want := time.Date(2026, 1, 2, 3, 4, 5, 123456000, time.UTC)
		got := must(s.AppendMessages(ctx(t), a.ID, store.Message{Role: store.RoleUser, Content: "x", CreatedAt: at}))
		sameTime(t, "returned created at", got[0].CreatedAt, want)
		sameTime(t, "loaded created at", must(s.Transcript(ctx(t), a.ID))[0].CreatedAt, want)
		in, _ := must2(s.AddInbound(ctx(t), store.Inbound{Platform: "web", AddressKey: "web:1", Text: "x", ReceivedAt: at}))
		sameTime(t, "returned received at", in.ReceivedAt, want)
		sameTime(t, "loaded received at", must(s.PendingInbound(ctx(t), 0, 0))[0].ReceivedAt, want)
		// Times the store takes itself are as precise as it keeps them.
		for _, tm := range []time.Time{got[0].CreatedAt, must(s.GetSession(ctx(t), a.ID)).CreatedAt} {
			if tm.Nanosecond()%1000 != 0 {
				t.Fatalf("time %v is finer than a microsecond", tm)
			}
		}
	},
	"ToolCallsKeptByteForByte": func(t *testing.T, s store.Store) {
		a := newSession(t, s, "u", "")
		// Keys out of order, spaces, a duplicate key, an escape: what a
		// JSON column would rewrite.
		calls := json.RawMessage("[ {\"name\":\"x\", \"id\" : \"c1\",\n \"arguments\":{\"b\":1,\"a\":2,\"a\":3, \"s\":\"\\u00e9\"}} ]")
		must(s.AppendMessages(ctx(t), a.ID, store.Message{Role: store.RoleAssistant, ToolCalls: calls}))
		eq(t, "tool calls", string(must(s.Transcript(ctx(t), a.ID))[0].ToolCalls), string(calls))
		eq(t, "tool calls in history", string(must(s.History(ctx(t), a.ID))[0].ToolCalls), string(calls))
	},
	"WordsKeptWhateverTheBytes": func(t *testing.T, s store.Store) {
		odd := "nul\x00 and \xff\xfe invalid"
		a := newSession(t, s, "u", "")
		noErr(t, s.SetDraft(ctx(t), a.ID, odd))
		eq(t, "draft", must(s.Draft(ctx(t), a.ID)), odd)
		must(s.AppendMessages(ctx(t), a.ID, store.Message{Role: store.RoleUser, Content: odd}))
		eq(t, "content", must(s.Transcript(ctx(t), a.ID))[0].Content, odd)
		must2(s.AddInbound(ctx(t), store.Inbound{Platform: "web", AddressKey: "web:1", Text: odd}))
		eq(t, "inbound text", must(s.PendingInbound(ctx(t), 0, 0))[0].Text, odd)
		d := must(s.EnqueueDeliveries(ctx(t), store.Delivery{Key: "k", AddressKey: "web:1", Text: odd}))[0]
		eq(t, "delivery text", must(s.DeliveryByKey(ctx(t), "k")).Text, odd)
		noErr(t, s.RecordDeliveryFailure(ctx(t), d.ID, odd))
		eq(t, "delivery error", must(s.DeliveryByKey(ctx(t), "k")).LastError, odd)
		noErr(t, s.SetPlatformState(ctx(t), "web", "k", odd))
		eq(t, "platform state", must(s.PlatformState(ctx(t), "web", "k")), odd)
		hits := must(s.Search(ctx(t), store.SearchQuery{Text: "invalid"}))
		eq(t, "found despite the bytes around it", len(hits), 1)
	},
	"NamesMustBeText": func(t *testing.T, s store.Store) {
		a := newSession(t, s, "u", "")
		for _, bad := range []string{"a\x00b", "a\xffb"} {
			_, err := s.CreateSession(ctx(t), store.Session{OwnerID: bad})
			wantErr(t, err, store.ErrInvalid)
			_, err = s.Bind(ctx(t), bad, a.ID)
			wantErr(t, err, store.ErrInvalid)
			_, _, err = s.AddInbound(ctx(t), store.Inbound{Platform: "web", AddressKey: bad, Text: "x"})
			wantErr(t, err, store.ErrInvalid)
			_, err = s.EnqueueDeliveries(ctx(t), store.Delivery{Key: bad, AddressKey: "web:1", Text: "x"})
			wantErr(t, err, store.ErrInvalid)
			_, err = s.AppendMessages(ctx(t), a.ID, store.Message{Role: store.RoleUser, Content: "x", Platform: "web", PlatformMsgID: bad})
			wantErr(t, err, store.ErrInvalid)
			wantErr(t, s.LinkIdentity(ctx(t), store.Identity{Platform: "web", PlatformUserID: bad, UserID: "u"}), store.ErrInvalid)
			wantErr(t, s.SetHomeChannel(ctx(t), "web", bad), store.ErrInvalid)
			wantErr(t, s.SetModel(ctx(t), a.ID, bad), store.ErrInvalid)
			wantErr(t, s.EndSession(ctx(t), a.ID, bad), store.ErrInvalid)
			h := must(s.RequestHandoff(ctx(t), a.ID, "cli", "web"))
			_, _, err = s.ClaimHandoff(ctx(t), h.ID, bad, time.Minute)
			wantErr(t, err, store.ErrInvalid)
			must2(s.ClaimHandoff(ctx(t), h.ID, "gw", time.Minute))
			_, err = s.SetHandoffDestination(ctx(t), h.ID, "gw", bad)
			wantErr(t, err, store.ErrInvalid)
			must(s.FailHandoff(ctx(t), h.ID, "gw", "given up"))
			d := must(s.EnqueueDeliveries(ctx(t), store.Delivery{AddressKey: "web:1", Text: "x"}))[0]
			wantErr(t, s.MarkDelivered(ctx(t), d.ID, bad), store.ErrInvalid)
			noErr(t, s.MarkDelivered(ctx(t), d.ID, "m1"))
			_, err = s.ApprovePairing(ctx(t), "AAAA2222", bad, time.Now())
			wantErr(t, err, store.ErrInvalid)
		}
		eq(t, "model kept", must(s.GetSession(ctx(t), a.ID)).Model, "m")
		eq(t, "still open", must(s.GetSession(ctx(t), a.ID)).Open(), true)
		for _, m := range []store.Message{
			{Role: store.RoleTool, ToolCallID: "c\x1e1", Content: "x"},
			{Role: store.RoleAssistant, ToolCalls: json.RawMessage("[\"\x1f\"]")},
		} {
			_, err := s.AppendMessages(ctx(t), a.ID, m)
			wantErr(t, err, store.ErrInvalid)
		}
		eq(t, "nothing stored", len(must(s.Transcript(ctx(t), a.ID))), 0)
		eq(t, "no inbound", len(must(s.PendingInbound(ctx(t), 0, 0))), 0)
		eq(t, "no delivery", len(must(s.PendingDeliveries(ctx(t), "", 0))), 0)
	},
	"LookupsByNamesNotTextFindNothing": func(t *testing.T, s store.Store) {
		a := newSession(t, s, "u", "")
		for _, bad := range []string{"a\x00b", "a\xffb"} {
			_, err := s.GetSession(ctx(t), bad)
			wantErr(t, err, store.ErrNotFound)
			_, err = s.ResolveSession(ctx(t), "u", bad)
			wantErr(t, err, store.ErrNotFound)
			eq(t, "sessions of owner", len(must(s.ListSessions(ctx(t), store.SessionFilter{OwnerID: bad}))), 0)
			_, err = s.Transcript(ctx(t), bad)
			wantErr(t, err, store.ErrNotFound)
			_, err = s.AppendMessages(ctx(t), bad, store.Message{Role: store.RoleUser, Content: "x"})
			wantErr(t, err, store.ErrNotFound)
			wantErr(t, s.SetDraft(ctx(t), bad, "x"), store.ErrNotFound)
			wantErr(t, s.SetModel(ctx(t), bad, "m"), store.ErrNotFound)
			wantErr(t, s.DeleteSession(ctx(t), bad), store.ErrNotFound)
			_, err = s.LookupBinding(ctx(t), bad)
			wantErr(t, err, store.ErrNotFound)
			_, err = s.BoundSession(ctx(t), bad)
			wantErr(t, err, store.ErrNotFound)
			_, err = s.LookupIdentity(ctx(t), "web", bad)
			wantErr(t, err, store.ErrNotFound)
			_, err = s.FindPlatformMessage(ctx(t), "web", bad)
			wantErr(t, err, store.ErrNotFound)
			_, err = s.DeliveryByKey(ctx(t), bad)
			wantErr(t, err, store.ErrNotFound)
			eq(t, "parked", len(must(s.Parked(ctx(t), bad))), 0)
			eq(t, "pending deliveries", len(must(s.PendingDeliveries(ctx(t), bad, 0))), 0)
			eq(t, "handoff state", must(s.HandoffState(ctx(t), bad)).State, store.HandoffNone)
			eq(t, "platform state", must(s.PlatformState(ctx(t), "web", bad)), "")
			eq(t, "hits in that session", len(must(s.Search(ctx(t), store.SearchQuery{Text: "x", SessionID: bad}))), 0)
			ok := must(s.CompleteHandoff(ctx(t), 1, bad))
			eq(t, "completed by a claimer not text", ok, false)
			_, err = s.DenyPairing(ctx(t), bad, time.Now())
			wantErr(t, err, store.ErrNotFound)
		}
		eq(t, "session untouched", must(s.GetSession(ctx(t), a.ID)).MessageCount, 0)
	},
	"HandoffErrorKeptWhateverTheBytes": func(t *testing.T, s store.Store) {
		a := newSession(t, s, "u", "")
		h := must(s.RequestHandoff(ctx(t), a.ID, "cli", "web"))
		must2(s.ClaimHandoff(ctx(t), h.ID, "gw", time.Minute))
		eq(t, "failed", must(s.FailHandoff(ctx(t), h.ID, "gw", "service said \x00\xff")), true)
		eq(t, "error", must(s.GetHandoff(ctx(t), h.ID)).Error, "service said \x00\xff")
	},
	"SessionsListedInTheOrderTheyWereMade": func(t *testing.T, s store.Store) {
		// However close together they were made: no clock decides a tie.
		var made []string
		for i := range 20 {
			made = append([]string{newSession(t, s, "u", nth(i)).ID}, made...)
		}
		eqSlice(t, "newest first", ids(must(s.ListSessions(ctx(t), store.SessionFilter{}))), made)
	},
}

func sameTime(t *testing.T, what string, got, want time.Time) {
	t.Helper()
	if !got.Equal(want) {
		t.Fatalf("%s = %v, want %v", what, got.UTC(), want)
	}
}
