package storetest

import (
	"testing"

	"github.com/baton-agent/baton/internal/store"
)

var holderTests = map[string]func(*testing.T, store.Store){
	"CreatedWithItsHolder": func(t *testing.T, s store.Store) {
		a := must(s.CreateSession(ctx(t), store.Session{OwnerID: "u", Platform: "web", Holder: "web:thread:main:c1"}))
		eq(t, "holder", a.Holder, "web:thread:main:c1")
		if a.HeldSince.IsZero() {
			t.Error("held since is zero")
		}
		b := must(s.CreateSession(ctx(t), store.Session{OwnerID: "u", Platform: "cli"}))
		eq(t, "no holder given", b.Holder, "")
	},
	"CompletedHandoffMovesTheHolder": func(t *testing.T, s store.Store) {
		a := must(s.CreateSession(ctx(t), store.Session{OwnerID: "u", Platform: "cli", Holder: "cli:dm:u"}))
		// A failed handoff leaves the holder where it was.
		h := request(t, s, a.ID, "telegram")
		claim(t, s, h, "gw")
		must(s.SetHandoffDestination(ctx(t), h.ID, "gw", "telegram:topic:-100:7"))
		must(s.FailHandoff(ctx(t), h.ID, "gw", "no"))
		eq(t, "after a failure", must(s.GetSession(ctx(t), a.ID)).Holder, "cli:dm:u")

		h = request(t, s, a.ID, "telegram")
		claim(t, s, h, "gw")
		must(s.SetHandoffDestination(ctx(t), h.ID, "gw", "telegram:topic:-100:8"))
		eq(t, "while running", must(s.GetSession(ctx(t), a.ID)).Holder, "cli:dm:u")
		must(s.CompleteHandoff(ctx(t), h.ID, "gw"))
		got := must(s.GetSession(ctx(t), a.ID))
		eq(t, "after completion", got.Holder, "telegram:topic:-100:8")
		done := must(s.GetHandoff(ctx(t), h.ID))
		eq(t, "held since the completion", got.HeldSince.Equal(done.FinishedAt), true)
		listed := must(s.ListSessions(ctx(t), store.SessionFilter{OwnerID: "u"}))
		eq(t, "listed holder", listed[0].Holder, "telegram:topic:-100:8")
	},
	"ParkedUntilUnparked": func(t *testing.T, s store.Store) {
		a := must(s.CreateSession(ctx(t), store.Session{OwnerID: "u", Platform: "web", Holder: "cli:dm:u"}))
		in := func(id, key string) store.Inbound {
			got, _, err := s.AddInbound(ctx(t), store.Inbound{Platform: "web", PlatformMsgID: id, AddressKey: key, Text: "text " + id})
			noErr(t, err)
			return got
		}
		one, two, other := in("1", "web:thread:main:c1"), in("2", "web:thread:main:c1"), in("3", "web:thread:main:c2")
		noErr(t, s.ParkInbound(ctx(t), two.ID, a.ID, two.AddressKey))
		noErr(t, s.ParkInbound(ctx(t), one.ID, a.ID, one.AddressKey))
		noErr(t, s.ParkInbound(ctx(t), one.ID, a.ID, one.AddressKey)) // again: no second row
		// Parked is done: recovery does not run it as a turn.
		pending := must(s.PendingInbound(ctx(t), 0, 0))
		eq(t, "pending", len(pending), 1)
		eq(t, "pending one", pending[0].ID, other.ID)
		parked := must(s.Parked(ctx(t), "web:thread:main:c1"))
		eq(t, "parked", len(parked), 2)
		eq(t, "first stored first", parked[0].Text, "text 1")
		eq(t, "then", parked[1].Text, "text 2")
		eq(t, "parked elsewhere", len(must(s.Parked(ctx(t), "web:thread:main:c2"))), 0)
		noErr(t, s.Unpark(ctx(t), one.ID))
		parked = must(s.Parked(ctx(t), "web:thread:main:c1"))
		eq(t, "after unpark", len(parked), 1)
		eq(t, "left", parked[0].ID, two.ID)
	},
}
