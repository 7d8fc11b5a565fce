package storetest

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/store"
)

// lapsed is a ttl whose claim or lease has ended as it is made: the tests
// need no sleep to see a holder's claim lapse.
const lapsed = -time.Second

// live is a ttl no test outlasts.
const live = time.Hour

var replicaTests = map[string]func(*testing.T, store.Store){
	"AddInboundKeepsItsClaim": func(t *testing.T, s store.Store) {
		until := time.Now().Add(live)
		in := inbound("telegram", "1", "hi")
		in.ClaimedBy, in.ClaimedUntil = "r1", until
		got, _ := must2(s.AddInbound(ctx(t), in))
		eq(t, "claimed by", got.ClaimedBy, "r1")
		if got.ClaimedUntil.Before(until.Add(-time.Millisecond)) {
			t.Fatalf("claimed until %v, want %v", got.ClaimedUntil, until)
		}
		eq(t, "claimable by another", len(must(s.ClaimInbound(ctx(t), "r2", live, 0))), 0)
	},
	"ClaimInboundTakesUnclaimedAndLapsedOnly": func(t *testing.T, s store.Store) {
		held := inbound("telegram", "1", "held")
		held.ClaimedBy, held.ClaimedUntil = "r1", time.Now().Add(live)
		must2(s.AddInbound(ctx(t), held))
		free, _ := must2(s.AddInbound(ctx(t), inbound("telegram", "2", "free")))
		gone := inbound("telegram", "3", "lapsed")
		gone.ClaimedBy, gone.ClaimedUntil = "r1", time.Now().Add(lapsed)
		lapsedIn, _ := must2(s.AddInbound(ctx(t), gone))
		done, _ := must2(s.AddInbound(ctx(t), inbound("telegram", "4", "done")))
		noErr(t, s.MarkInboundDone(ctx(t), done.ID))

		got := must(s.ClaimInbound(ctx(t), "r2", live, 0))
		eqIDs(t, "claimed", inboundIDs(got), []int64{free.ID, lapsedIn.ID})
		for _, in := range got {
			eq(t, "claimed by", in.ClaimedBy, "r2")
		}
		eq(t, "claimed again", len(must(s.ClaimInbound(ctx(t), "r3", live, 0))), 0)
		_, err := s.ClaimInbound(ctx(t), "", live, 0)
		wantErr(t, err, store.ErrInvalid)
	},
	"ClaimInboundOfSomePlatforms": func(t *testing.T, s store.Store) {
		tg, _ := must2(s.AddInbound(ctx(t), inbound("telegram", "1", "tg")))
		web, _ := must2(s.AddInbound(ctx(t), inbound("web", "1", "web")))
		dc, _ := must2(s.AddInbound(ctx(t), inbound("discord", "1", "dc")))
		eqIDs(t, "telegram's and discord's", inboundIDs(must(s.ClaimInbound(ctx(t), "r1", live, 0, "telegram", "discord"))), []int64{tg.ID, dc.ID})
		eqIDs(t, "the rest", inboundIDs(must(s.ClaimInbound(ctx(t), "r2", live, 0))), []int64{web.ID})
	},
	"ClaimInboundHandsEachEventToOneClaimer": func(t *testing.T, s store.Store) {
		const events, claimers = 60, 6
		for i := range events {
			must2(s.AddInbound(ctx(t), inbound("web", fmt.Sprint(i), "x")))
		}
		var mu sync.Mutex
		seen := map[int64]string{}
		var wg sync.WaitGroup
		for c := range claimers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				by := fmt.Sprintf("r%d", c)
				for {
					got, err := s.ClaimInbound(ctx(t), by, live, 7)
					if err != nil {
						t.Error(err)
						return
					}
					if len(got) == 0 {
						return
					}
					mu.Lock()
					for _, in := range got {
						if prev, ok := seen[in.ID]; ok {
							t.Errorf("event %d claimed by %s and %s", in.ID, prev, by)
						}
						seen[in.ID] = by
					}
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		eq(t, "events claimed", len(seen), events)
	},
	"HoldInboundKeepsAnEventItsHoldersUntilDoneOrLapsed": func(t *testing.T, s store.Store) {
		in := inbound("web", "1", "hi")
		in.ClaimedBy, in.ClaimedUntil = "r1", time.Now().Add(live)
		stored, _ := must2(s.AddInbound(ctx(t), in))
		noErr(t, s.HoldInbound(ctx(t), stored.ID, "r1", live)) // renewed
		wantErr(t, s.HoldInbound(ctx(t), stored.ID, "r2", live), store.ErrClaimed)
		noErr(t, s.HoldInbound(ctx(t), stored.ID, "r1", lapsed)) // r1 paused past its lease
		noErr(t, s.HoldInbound(ctx(t), stored.ID, "r2", live))   // taken over
		wantErr(t, s.HoldInbound(ctx(t), stored.ID, "r1", live), store.ErrClaimed)
		eq(t, "pending claim", must(s.PendingInbound(ctx(t), 0, 0))[0].ClaimedBy, "r2")
		noErr(t, s.MarkInboundDone(ctx(t), stored.ID))
		wantErr(t, s.HoldInbound(ctx(t), stored.ID, "r2", live), store.ErrClaimed)
		wantErr(t, s.HoldInbound(ctx(t), stored.ID+100, "r2", live), store.ErrNotFound)
		wantErr(t, s.HoldInbound(ctx(t), stored.ID, "", live), store.ErrInvalid)
	},
	"ClaimDeliveryIsOneHoldersUntilSentOrLapsed": func(t *testing.T, s store.Store) {
		d := delivery("k1", "telegram:dm:1", "hi")
		d.ClaimedBy, d.ClaimedUntil = "r1", time.Now().Add(live)
		stored := must(s.EnqueueDeliveries(ctx(t), d))[0]
		eq(t, "stored claim", stored.ClaimedBy, "r1")
		wantErr(t, s.ClaimDelivery(ctx(t), stored.ID, "r2", live), store.ErrClaimed)
		noErr(t, s.ClaimDelivery(ctx(t), stored.ID, "r1", live)) // renewed
		noErr(t, s.ReleaseDelivery(ctx(t), stored.ID, "r2"))     // not r2's: kept
		wantErr(t, s.ClaimDelivery(ctx(t), stored.ID, "r2", live), store.ErrClaimed)
		noErr(t, s.ReleaseDelivery(ctx(t), stored.ID, "r1"))
		noErr(t, s.ClaimDelivery(ctx(t), stored.ID, "r2", lapsed))
		noErr(t, s.ClaimDelivery(ctx(t), stored.ID, "r3", live)) // r2's lapsed
		eq(t, "pending claim", must(s.PendingDeliveries(ctx(t), "", 0))[0].ClaimedBy, "r3")
		noErr(t, s.MarkDelivered(ctx(t), stored.ID, "m1"))
		wantErr(t, s.ClaimDelivery(ctx(t), stored.ID, "r3", live), store.ErrClaimed)
		wantErr(t, s.ClaimDelivery(ctx(t), stored.ID+100, "r3", live), store.ErrNotFound)
	},
	"ClaimDeliveryHasOneWinner": func(t *testing.T, s store.Store) {
		stored := must(s.EnqueueDeliveries(ctx(t), delivery("k1", "web:dm:1", "hi")))[0]
		const claimers = 8
		var wg sync.WaitGroup
		wins := make(chan string, claimers)
		for c := range claimers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				by := fmt.Sprintf("r%d", c)
				switch err := s.ClaimDelivery(ctx(t), stored.ID, by, live); {
				case err == nil:
					wins <- by
				case !errors.Is(err, store.ErrClaimed):
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		close(wins)
		eq(t, "winners", len(wins), 1)
	},
	"LeaseHasOneHolderAtATime": func(t *testing.T, s store.Store) {
		l := must(s.TakeLease(ctx(t), "lead:telegram", "r1", live))
		eq(t, "holder", l.Holder, "r1")
		_, err := s.TakeLease(ctx(t), "lead:telegram", "r2", live)
		wantErr(t, err, store.ErrClaimed)
		again := must(s.TakeLease(ctx(t), "lead:telegram", "r1", live))
		if !again.Since.Equal(l.Since) {
			t.Fatalf("renewal moved since from %v to %v", l.Since, again.Since)
		}
		noErr(t, s.ReleaseLease(ctx(t), "lead:telegram", "r2")) // not r2's: kept
		eq(t, "leases", len(must(s.Leases(ctx(t)))), 1)
		noErr(t, s.ReleaseLease(ctx(t), "lead:telegram", "r1"))
		eq(t, "leases after release", len(must(s.Leases(ctx(t)))), 0)
		must(s.TakeLease(ctx(t), "lead:telegram", "r2", lapsed))
		eq(t, "lapsed leases listed", len(must(s.Leases(ctx(t)))), 0)
		l3 := must(s.TakeLease(ctx(t), "lead:telegram", "r3", live))
		eq(t, "taken over by", l3.Holder, "r3")
		ls := must(s.Leases(ctx(t)))
		eq(t, "listed holder", ls[0].Holder, "r3")
		_, err = s.TakeLease(ctx(t), "", "r1", live)
		wantErr(t, err, store.ErrInvalid)
		_, err = s.TakeLease(ctx(t), "x", "", live)
		wantErr(t, err, store.ErrInvalid)
	},
	"LeaseHasOneWinnerAmongRacers": func(t *testing.T, s store.Store) {
		const racers = 8
		var wg sync.WaitGroup
		wins := make(chan string, racers)
		for c := range racers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				by := fmt.Sprintf("r%d", c)
				switch _, err := s.TakeLease(ctx(t), "turn:s1", by, live); {
				case err == nil:
					wins <- by
				case !errors.Is(err, store.ErrClaimed):
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		close(wins)
		eq(t, "winners", len(wins), 1)
	},
	"HeartbeatRenewsWhatItsReplicaHolds": func(t *testing.T, s store.Store) {
		r1 := store.Replica{ID: "r1", Host: "box-a", PID: 42, Started: at}
		in := inbound("telegram", "1", "hi")
		in.ClaimedBy, in.ClaimedUntil = "r1", time.Now().Add(lapsed)
		must2(s.AddInbound(ctx(t), in))
		d := delivery("k1", "telegram:dm:1", "hi")
		d.ClaimedBy, d.ClaimedUntil = "r1", time.Now().Add(lapsed)
		stored := must(s.EnqueueDeliveries(ctx(t), d))[0]
		must(s.TakeLease(ctx(t), "lead:telegram", "r1", lapsed))
		must(s.TakeLease(ctx(t), "lead:discord", "r1", lapsed))
		must(s.TakeLease(ctx(t), "lead:discord", "r2", live)) // taken over once lapsed

		held := must(s.Heartbeat(ctx(t), r1, live))
		eqSlice(t, "held", held, []string{"lead:telegram"})
		eq(t, "inbound claimable", len(must(s.ClaimInbound(ctx(t), "r2", live, 0))), 0)
		wantErr(t, s.ClaimDelivery(ctx(t), stored.ID, "r2", live), store.ErrClaimed)
		_, err := s.TakeLease(ctx(t), "lead:telegram", "r2", live)
		wantErr(t, err, store.ErrClaimed)

		reps := must(s.ReplicaList(ctx(t)))
		eq(t, "replicas", len(reps), 1)
		eq(t, "id", reps[0].ID, "r1")
		eq(t, "host", reps[0].Host, "box-a")
		eq(t, "pid", reps[0].PID, 42)
		if !reps[0].Started.Equal(at) || reps[0].Seen.IsZero() {
			t.Fatalf("started %v seen %v", reps[0].Started, reps[0].Seen)
		}
		_, err = s.Heartbeat(ctx(t), store.Replica{}, live)
		wantErr(t, err, store.ErrInvalid)
	},
	"LeaveReplicaFreesWhatItHeld": func(t *testing.T, s store.Store) {
		must(s.Heartbeat(ctx(t), store.Replica{ID: "r1", Host: "a"}, live))
		must(s.Heartbeat(ctx(t), store.Replica{ID: "r2", Host: "b"}, live))
		in := inbound("telegram", "1", "hi")
		in.ClaimedBy, in.ClaimedUntil = "r1", time.Now().Add(live)
		added, _ := must2(s.AddInbound(ctx(t), in))
		d := delivery("k1", "telegram:dm:1", "hi")
		d.ClaimedBy, d.ClaimedUntil = "r1", time.Now().Add(live)
		stored := must(s.EnqueueDeliveries(ctx(t), d))[0]
		must(s.TakeLease(ctx(t), "lead:telegram", "r1", live))

		noErr(t, s.LeaveReplica(ctx(t), "r1"))
		eqIDs(t, "inbound taken over", inboundIDs(must(s.ClaimInbound(ctx(t), "r2", live, 0))), []int64{added.ID})
		noErr(t, s.ClaimDelivery(ctx(t), stored.ID, "r2", live))
		must(s.TakeLease(ctx(t), "lead:telegram", "r2", live))
		reps := must(s.ReplicaList(ctx(t)))
		eq(t, "replicas left", len(reps), 1)
		eq(t, "replica left", reps[0].ID, "r2")
	},
}
