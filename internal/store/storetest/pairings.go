package storetest

import (
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/store"
)

func ask(user, code string, now time.Time) store.PairingAsk {
	return store.PairingAsk{Platform: "telegram", PlatformUserID: user, Sender: "P" + user, AddressKey: "telegram:dm:" + user,
		Code: code, Now: now, TTL: time.Hour, MaxPending: 2, MaxAttempts: 3, Lock: 24 * time.Hour, Renew: 24 * time.Hour}
}

var pairingTests = map[string]func(*testing.T, store.Store){
	"IssueAttemptsLockOut": func(t *testing.T, s store.Store) {
		now := store.Micro(time.Now()) // as the store keeps it
		p, issued := must2(s.AskPairing(ctx(t), ask("1", "AAAA2222", now)))
		eq(t, "first message issues a code", issued, true)
		eq(t, "code", p.Code, "AAAA2222")
		p, issued = must2(s.AskPairing(ctx(t), ask("1", "BBBB3333", now)))
		eq(t, "second message keeps the code", issued || p.Code != "AAAA2222", false)
		eq(t, "attempts", p.Attempts, 2)
		must2(s.AskPairing(ctx(t), ask("1", "CCCC4444", now)))
		p, _ = must2(s.AskPairing(ctx(t), ask("1", "CCCC4444", now)))
		eq(t, "locked after too many attempts", p.LockedUntil.After(now), true)
		_, err := s.ApprovePairing(ctx(t), "AAAA2222", "owner", now)
		wantErr(t, err, store.ErrNotFound) // a locked request cannot be approved
		list := must(s.PendingPairings(ctx(t), now))
		eq(t, "the locked person is listed", len(list), 1)
		// After the lock, a new code.
		p, issued = must2(s.AskPairing(ctx(t), ask("1", "DDDD5555", now.Add(25*time.Hour))))
		eq(t, "a new code after the lock", issued && p.Code == "DDDD5555", true)
	},
	"AtMostPendingPerPlatform": func(t *testing.T, s store.Store) {
		now := store.Micro(time.Now()) // as the store keeps it
		must2(s.AskPairing(ctx(t), ask("1", "AAAA2222", now)))
		must2(s.AskPairing(ctx(t), ask("2", "BBBB3333", now.Add(time.Second))))
		// A third stranger is not kept out by the first two: the oldest
		// waiting code makes room.
		p, issued := must2(s.AskPairing(ctx(t), ask("3", "CCCC4444", now.Add(2*time.Second))))
		eq(t, "a code past the bound is issued", issued && p.Code == "CCCC4444", true)
		list := must(s.PendingPairings(ctx(t), now.Add(3*time.Second)))
		eq(t, "waiting codes stay bounded", len(list), 2)
		eq(t, "the oldest made room", list[0].Code+" "+list[1].Code, "BBBB3333 CCCC4444")
		_, err := s.ApprovePairing(ctx(t), "AAAA2222", "owner", now.Add(3*time.Second))
		wantErr(t, err, store.ErrNotFound)
		// The person whose code made room does not get another one at
		// once, so a few accounts cannot take the places again and again.
		p, issued = must2(s.AskPairing(ctx(t), ask("1", "DDDD5555", now.Add(4*time.Second))))
		eq(t, "no new code within Renew", issued, false)
		eq(t, "held off until Renew has passed", p.LockedUntil.Equal(now.Add(24*time.Hour)), true)
		eq(t, "the first message held off has one attempt", p.Attempts, 1)
		p, _ = must2(s.AskPairing(ctx(t), ask("1", "DDDD5555", now.Add(5*time.Second))))
		eq(t, "later ones count on", p.Attempts, 2)
		// Expired codes of others leave room without replacing anyone.
		_, issued = must2(s.AskPairing(ctx(t), ask("4", "EEEE6666", now.Add(2*time.Hour))))
		eq(t, "room after expiry", issued, true)
		// After Renew, a new code.
		p, issued = must2(s.AskPairing(ctx(t), ask("1", "FFFF7777", now.Add(25*time.Hour))))
		eq(t, "a new code after Renew", issued && p.Code == "FFFF7777", true)
	},
	"ApproveLinksDenyLocks": func(t *testing.T, s store.Store) {
		now := store.Micro(time.Now()) // as the store keeps it
		u := must(s.CreateUser(ctx(t), "owner"))
		must2(s.AskPairing(ctx(t), ask("1", "AAAA2222", now)))
		must2(s.AskPairing(ctx(t), ask("2", "BBBB3333", now)))
		_, err := s.ApprovePairing(ctx(t), "AAAA2222", u.ID, now.Add(2*time.Hour))
		wantErr(t, err, store.ErrNotFound) // expired
		p := must(s.ApprovePairing(ctx(t), "aaaa2222", u.ID, now))
		eq(t, "approved identity", p.PlatformUserID, "1")
		eq(t, "linked", must(s.LookupIdentity(ctx(t), "telegram", "1")).UserID, u.ID)
		_, err = s.ApprovePairing(ctx(t), "AAAA2222", u.ID, now)
		wantErr(t, err, store.ErrNotFound) // used up
		d := must(s.DenyPairing(ctx(t), "BBBB3333", now.Add(time.Hour)))
		eq(t, "denied", d.PlatformUserID, "2")
		p, issued := must2(s.AskPairing(ctx(t), ask("2", "CCCC4444", now)))
		eq(t, "a denied person gets nothing new", issued, false)
		eq(t, "and stays locked", p.LockedUntil.After(now), true)
		_, err = s.DenyPairing(ctx(t), "ZZZZ9999", now)
		wantErr(t, err, store.ErrNotFound)
	},
}
