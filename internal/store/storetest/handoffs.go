package storetest

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/store"
)

const lease = time.Minute

// request asks for a handoff and fails the test if it is refused.
func request(t *testing.T, s store.Store, sid, to string) store.Handoff {
	t.Helper()
	return must(s.RequestHandoff(ctx(t), sid, "cli", to))
}

func claim(t *testing.T, s store.Store, h store.Handoff, who string) bool {
	t.Helper()
	_, ok, err := s.ClaimHandoff(ctx(t), h.ID, who, lease)
	noErr(t, err)
	return ok
}

func state(t *testing.T, s store.Store, sid string) store.Handoff {
	t.Helper()
	return must(s.HandoffState(ctx(t), sid))
}

// sameHandoff fails unless got and want agree in every field (times by
// instant).
func sameHandoff(t *testing.T, what string, got, want store.Handoff) {
	t.Helper()
	for _, p := range [][2]*time.Time{{&got.LeaseUntil, &want.LeaseUntil}, {&got.RequestedAt, &want.RequestedAt},
		{&got.ClaimedAt, &want.ClaimedAt}, {&got.FinishedAt, &want.FinishedAt}} {
		if !p[0].Equal(*p[1]) {
			t.Fatalf("%s: %+v\nstored %+v", what, got, want)
		}
		*p[0] = *p[1]
	}
	if got != want {
		t.Fatalf("%s: %+v\nstored %+v", what, got, want)
	}
}

var handoffTests = map[string]func(*testing.T, store.Store){
	// What a request and a claim return is what is stored.
	"RequestAndClaimReturnWhatIsStored": func(t *testing.T, s store.Store) {
		a := newSession(t, s, "u", "")
		h := must(s.RequestHandoffTo(ctx(t), a.ID, "cli", "web", "web:dm:home"))
		sameHandoff(t, "request", h, must(s.GetHandoff(ctx(t), h.ID)))
		c, ok, err := s.ClaimHandoff(ctx(t), h.ID, "gw-1", lease)
		noErr(t, err)
		eq(t, "claimed", ok, true)
		sameHandoff(t, "claim", c, must(s.GetHandoff(ctx(t), h.ID)))
		// Taken back after its lease, and claimed again: a second attempt.
		requeued, _ := must2(s.ReapHandoffs(ctx(t), time.Now().Add(2*lease)))
		eq(t, "requeued", requeued, 1)
		c, ok, err = s.ClaimHandoff(ctx(t), h.ID, "gw-2", lease)
		noErr(t, err)
		eq(t, "claimed again", ok, true)
		eq(t, "attempts", c.Attempts, 2)
		sameHandoff(t, "second claim", c, must(s.GetHandoff(ctx(t), h.ID)))
	},
	// The reference cases, one by one.
	"RequestMarksPending": func(t *testing.T, s store.Store) {
		a := newSession(t, s, "u", "")
		h := request(t, s, a.ID, "telegram")
		got := state(t, s, a.ID)
		eq(t, "state", got.State, store.HandoffPending)
		eq(t, "platform", got.Platform, "telegram")
		eq(t, "from", got.FromPlatform, "cli")
		eq(t, "error", got.Error, "")
		eq(t, "id", got.ID, h.ID)
		eq(t, "attempts", got.Attempts, 0)
		if got.RequestedAt.IsZero() || !got.ClaimedAt.IsZero() || !got.FinishedAt.IsZero() {
			t.Fatalf("times: %+v", got)
		}
	},
	"RequestRejectsInFlight": func(t *testing.T, s store.Store) {
		a := newSession(t, s, "u", "")
		h := request(t, s, a.ID, "telegram")
		_, err := s.RequestHandoff(ctx(t), a.ID, "cli", "discord")
		wantErr(t, err, store.ErrHandoffInFlight)
		wantErr(t, err, store.ErrConflict)
		eq(t, "claimed", claim(t, s, h, "gw"), true)
		_, err = s.RequestHandoff(ctx(t), a.ID, "cli", "discord")
		wantErr(t, err, store.ErrHandoffInFlight)
		eq(t, "still telegram", state(t, s, a.ID).Platform, "telegram")
	},
	"RetryAfterTerminalClearsError": func(t *testing.T, s store.Store) {
		a := newSession(t, s, "u", "")
		h := request(t, s, a.ID, "telegram")
		claim(t, s, h, "gw")
		must(s.FailHandoff(ctx(t), h.ID, "gw", "earlier failure"))
		eq(t, "failed error", state(t, s, a.ID).Error, "earlier failure")
		request(t, s, a.ID, "discord")
		got := state(t, s, a.ID)
		eq(t, "state", got.State, store.HandoffPending)
		eq(t, "platform", got.Platform, "discord")
		eq(t, "error", got.Error, "")
		// Completed is terminal too: another request is allowed.
		h = got
		claim(t, s, h, "gw")
		must(s.CompleteHandoff(ctx(t), h.ID, "gw"))
		request(t, s, a.ID, "web")
		eq(t, "after completed", state(t, s, a.ID).State, store.HandoffPending)
	},
	"PendingExcludesRunningAndTerminal": func(t *testing.T, s store.Store) {
		var ss []store.Session
		for range 4 {
			ss = append(ss, newSession(t, s, "u", ""))
		}
		request(t, s, ss[0].ID, "telegram")
		request(t, s, ss[1].ID, "discord")
		c := request(t, s, ss[2].ID, "telegram")
		claim(t, s, c, "gw")
		d := request(t, s, ss[3].ID, "slack")
		claim(t, s, d, "gw")
		must(s.CompleteHandoff(ctx(t), d.ID, "gw"))
		eqSlice(t, "pending", handoffSessions(must(s.PendingHandoffs(ctx(t)))), []string{ss[0].ID, ss[1].ID})
		eqSlice(t, "pending telegram", handoffSessions(must(s.PendingHandoffs(ctx(t), "telegram"))), []string{ss[0].ID})
		eqSlice(t, "pending two platforms", handoffSessions(must(s.PendingHandoffs(ctx(t), "discord", "telegram"))), []string{ss[0].ID, ss[1].ID})
	},
	"PendingOrderedByRequestTime": func(t *testing.T, s store.Store) {
		var want []string
		for range 5 {
			a := newSession(t, s, "u", "")
			want = append(want, a.ID)
		}
		// Request in reverse creation order; the list follows request time.
		for i := len(want) - 1; i >= 0; i-- {
			request(t, s, want[i], "web")
		}
		var rev []string
		for i := len(want) - 1; i >= 0; i-- {
			rev = append(rev, want[i])
		}
		eqSlice(t, "order", handoffSessions(must(s.PendingHandoffs(ctx(t)))), rev)
	},
	"ClaimIsAtomic": func(t *testing.T, s store.Store) {
		a := newSession(t, s, "u", "")
		h := request(t, s, a.ID, "telegram")
		eq(t, "first claim", claim(t, s, h, "gw1"), true)
		eq(t, "second claim", claim(t, s, h, "gw2"), false)
		got := state(t, s, a.ID)
		eq(t, "state", got.State, store.HandoffRunning)
		eq(t, "claimer", got.ClaimedBy, "gw1")
		eq(t, "attempts", got.Attempts, 1)
		if got.ClaimedAt.IsZero() || !got.LeaseUntil.After(got.ClaimedAt) {
			t.Fatalf("lease not recorded: %+v", got)
		}
	},
	"ClaimRaceHasOneWinner": func(t *testing.T, s store.Store) {
		a := newSession(t, s, "u", "")
		h := request(t, s, a.ID, "telegram")
		const n = 16
		var wg sync.WaitGroup
		wins := make(chan string, n)
		for i := range n {
			wg.Go(func() {
				_, ok, err := s.ClaimHandoff(ctx(t), h.ID, nth(i), lease)
				if err != nil {
					t.Error(err)
				}
				if ok {
					wins <- nth(i)
				}
			})
		}
		wg.Wait()
		close(wins)
		var winners []string
		for w := range wins {
			winners = append(winners, w)
		}
		eq(t, "winners", len(winners), 1)
		eq(t, "recorded claimer", state(t, s, a.ID).ClaimedBy, winners[0])
	},
	"CompleteClearsError": func(t *testing.T, s store.Store) {
		a := newSession(t, s, "u", "")
		h := request(t, s, a.ID, "telegram")
		claim(t, s, h, "gw")
		must(s.FailHandoff(ctx(t), h.ID, "gw", "transient"))
		h = request(t, s, a.ID, "telegram")
		claim(t, s, h, "gw")
		ok := must(s.SetHandoffDestination(ctx(t), h.ID, "gw", "telegram:topic:-100:9"))
		eq(t, "destination set", ok, true)
		eq(t, "completed", must(s.CompleteHandoff(ctx(t), h.ID, "gw")), true)
		got := state(t, s, a.ID)
		eq(t, "state", got.State, store.HandoffCompleted)
		eq(t, "error", got.Error, "")
		eq(t, "destination", got.Destination, "telegram:topic:-100:9")
		if got.FinishedAt.IsZero() {
			t.Fatal("finished time not recorded")
		}
	},
	"FailRecordsReason": func(t *testing.T, s store.Store) {
		a := newSession(t, s, "u", "")
		h := request(t, s, a.ID, "telegram")
		claim(t, s, h, "gw")
		eq(t, "failed", must(s.FailHandoff(ctx(t), h.ID, "gw", "no home channel for telegram")), true)
		got := state(t, s, a.ID)
		eq(t, "state", got.State, store.HandoffFailed)
		eq(t, "error", got.Error, "no home channel for telegram")
	},
	"FailTruncatesLongReasons": func(t *testing.T, s store.Store) {
		a := newSession(t, s, "u", "")
		h := request(t, s, a.ID, "telegram")
		claim(t, s, h, "gw")
		must(s.FailHandoff(ctx(t), h.ID, "gw", strings.Repeat("x", 1000)))
		got := state(t, s, a.ID).Error
		eq(t, "length", len(got), store.MaxHandoffError)
		// Multi-byte text is cut on a character boundary.
		b := newSession(t, s, "u", "")
		h = request(t, s, b.ID, "telegram")
		claim(t, s, h, "gw")
		must(s.FailHandoff(ctx(t), h.ID, "gw", strings.Repeat("é", 400)))
		got = state(t, s, b.ID).Error
		if len(got) > store.MaxHandoffError || !strings.HasPrefix(strings.Repeat("é", 400), got) || len(got) < store.MaxHandoffError-1 {
			t.Fatalf("cut reason is %d bytes: %q", len(got), got[len(got)-4:])
		}
	},
	"StateOfUnknownSessionIsNone": func(t *testing.T, s store.Store) {
		got := state(t, s, "does-not-exist")
		eq(t, "state", got.State, store.HandoffNone)
		_, err := s.RequestHandoff(ctx(t), "does-not-exist", "cli", "telegram")
		wantErr(t, err, store.ErrNotFound)
		a := newSession(t, s, "u", "")
		eq(t, "fresh session", state(t, s, a.ID).State, store.HandoffNone)
		_, err = s.RequestHandoff(ctx(t), a.ID, "cli", "")
		wantErr(t, err, store.ErrInvalid)
		_, err = s.GetHandoff(ctx(t), 987654)
		wantErr(t, err, store.ErrNotFound)
	},
	"FullPendingToCompletedFlow": func(t *testing.T, s store.Store) {
		a := newSession(t, s, "u", "my session")
		appendText(t, s, a.ID, store.RoleUser, "Hello")
		appendText(t, s, a.ID, store.RoleAssistant, "Hi there!")
		// Terminal: request.
		request(t, s, a.ID, "telegram")
		eq(t, "pending", state(t, s, a.ID).State, store.HandoffPending)
		// Gateway: discover and claim.
		pending := must(s.PendingHandoffs(ctx(t)))
		eq(t, "one pending", len(pending), 1)
		eq(t, "its session", pending[0].SessionID, a.ID)
		eq(t, "claim", claim(t, s, pending[0], "gw"), true)
		eq(t, "running", state(t, s, a.ID).State, store.HandoffRunning)
		// The transcript is readable while running.
		tr := must(s.Transcript(ctx(t), a.ID))
		eqSlice(t, "transcript", contents(tr), []string{"user:Hello", "assistant:Hi there!"})
		eq(t, "complete", must(s.CompleteHandoff(ctx(t), pending[0].ID, "gw")), true)
		eq(t, "completed", state(t, s, a.ID).State, store.HandoffCompleted)
		eq(t, "none pending", len(must(s.PendingHandoffs(ctx(t)))), 0)
	},

	// Past the reference: claimers, leases and split-brain.
	"OnlyTheClaimerFinishes": func(t *testing.T, s store.Store) {
		a := newSession(t, s, "u", "")
		h := request(t, s, a.ID, "web")
		eq(t, "complete while pending", must(s.CompleteHandoff(ctx(t), h.ID, "gw")), false)
		eq(t, "fail while pending", must(s.FailHandoff(ctx(t), h.ID, "gw", "x")), false)
		claim(t, s, h, "gw1")
		eq(t, "other completes", must(s.CompleteHandoff(ctx(t), h.ID, "gw2")), false)
		eq(t, "other fails", must(s.FailHandoff(ctx(t), h.ID, "gw2", "x")), false)
		eq(t, "other renews", must(s.RenewHandoff(ctx(t), h.ID, "gw2", lease)), false)
		eq(t, "other sets destination", must(s.SetHandoffDestination(ctx(t), h.ID, "gw2", "k")), false)
		eq(t, "still running", state(t, s, a.ID).State, store.HandoffRunning)
		eq(t, "claimer completes", must(s.CompleteHandoff(ctx(t), h.ID, "gw1")), true)
		// A late failure from the same claimer cannot overwrite the result.
		eq(t, "late fail", must(s.FailHandoff(ctx(t), h.ID, "gw1", "timeout")), false)
		eq(t, "late complete", must(s.CompleteHandoff(ctx(t), h.ID, "gw1")), false)
		got := state(t, s, a.ID)
		eq(t, "final", got.State, store.HandoffCompleted)
		eq(t, "no error", got.Error, "")
	},
	"RenewExtendsLease": func(t *testing.T, s store.Store) {
		a := newSession(t, s, "u", "")
		h := request(t, s, a.ID, "web")
		_, _, err := s.ClaimHandoff(ctx(t), h.ID, "gw", time.Second)
		noErr(t, err)
		before := state(t, s, a.ID).LeaseUntil
		eq(t, "renewed", must(s.RenewHandoff(ctx(t), h.ID, "gw", time.Hour)), true)
		after := state(t, s, a.ID).LeaseUntil
		if !after.After(before.Add(50 * time.Minute)) {
			t.Fatalf("lease %v not extended past %v", after, before)
		}
		// A reaper looking at a time inside the renewed lease leaves it alone.
		rq, fl := must2(s.ReapHandoffs(ctx(t), time.Now().Add(30*time.Minute)))
		eq(t, "requeued", rq, 0)
		eq(t, "failed", len(fl), 0)
		eq(t, "still running", state(t, s, a.ID).State, store.HandoffRunning)
	},
	"ExpiredLeaseIsRequeuedThenFailed": func(t *testing.T, s store.Store) {
		a := newSession(t, s, "u", "")
		h := request(t, s, a.ID, "web")
		later := func() time.Time { return time.Now().Add(2 * lease) }
		for attempt := 1; attempt <= store.MaxHandoffAttempts; attempt++ {
			who := nth(attempt)
			eq(t, "claim", claim(t, s, h, who), true)
			eq(t, "attempts", state(t, s, a.ID).Attempts, attempt)
			rq, fl := must2(s.ReapHandoffs(ctx(t), later()))
			if attempt < store.MaxHandoffAttempts {
				eq(t, "requeued", rq, 1)
				eq(t, "failed", len(fl), 0)
				got := state(t, s, a.ID)
				eq(t, "back to pending", got.State, store.HandoffPending)
				eq(t, "claimer cleared", got.ClaimedBy, "")
				// The crashed claimer's late result is refused.
				eq(t, "late complete", must(s.CompleteHandoff(ctx(t), h.ID, who)), false)
			} else {
				eq(t, "requeued", rq, 0)
				eq(t, "failed", len(fl), 1)
				eq(t, "failed id", fl[0], h.ID)
				got := state(t, s, a.ID)
				eq(t, "failed state", got.State, store.HandoffFailed)
				if !strings.Contains(got.Error, "lease expired") || !strings.Contains(got.Error, who) {
					t.Fatalf("reason %q does not explain the expiry", got.Error)
				}
			}
		}
		// A failed session can be handed off again.
		request(t, s, a.ID, "web")
	},
	"ReapLeavesLiveLeasesAndOtherStatesAlone": func(t *testing.T, s store.Store) {
		a := newSession(t, s, "u", "")
		b := newSession(t, s, "u", "")
		c := newSession(t, s, "u", "")
		request(t, s, a.ID, "web") // pending
		hb := request(t, s, b.ID, "web")
		claim(t, s, hb, "gw") // running, lease in the future
		hc := request(t, s, c.ID, "web")
		claim(t, s, hc, "gw")
		must(s.CompleteHandoff(ctx(t), hc.ID, "gw"))
		rq, fl := must2(s.ReapHandoffs(ctx(t), time.Now()))
		eq(t, "requeued", rq, 0)
		eq(t, "failed", len(fl), 0)
		eq(t, "a", state(t, s, a.ID).State, store.HandoffPending)
		eq(t, "b", state(t, s, b.ID).State, store.HandoffRunning)
		eq(t, "c", state(t, s, c.ID).State, store.HandoffCompleted)
	},
	"HistoryOfHandoffsKept": func(t *testing.T, s store.Store) {
		a := newSession(t, s, "u", "")
		h1 := request(t, s, a.ID, "telegram")
		claim(t, s, h1, "gw")
		must(s.FailHandoff(ctx(t), h1.ID, "gw", "boom"))
		h2 := request(t, s, a.ID, "web")
		if h2.ID == h1.ID {
			t.Fatal("a new request reused the old handoff id")
		}
		old := must(s.GetHandoff(ctx(t), h1.ID))
		eq(t, "old state", old.State, store.HandoffFailed)
		eq(t, "old error", old.Error, "boom")
		eq(t, "current", state(t, s, a.ID).ID, h2.ID)
	},
}
