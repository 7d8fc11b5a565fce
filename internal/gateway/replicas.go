package gateway

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/baton-agent/baton/internal/store"
)

// replica is this gateway's part among several sharing one store
// (Config.Shared). Everything shared is claimed in the store under a
// lease its heartbeat renews (store.Replicas): the inbound events it
// heard, the deliveries it sends, and the lead of every platform whose
// service allows one reader. A replica that dies stops renewing, and
// within a lease another takes over what it held. A session's turn is
// marked by the agent, as every process sharing the store marks it
// (agent.StoreTurns): one runs at a time, wherever it runs, and a move
// stops it.
//
// A nil *replica is a gateway alone on its store: it claims nothing,
// runs every platform and grants every lock.
type replica struct {
	st     store.Store
	log    *slog.Logger
	me     store.Replica
	ttl    time.Duration
	shared map[string]bool // platforms every replica reads

	mu       sync.Mutex
	leading  map[string]led // platforms this replica leads
	beatOK   time.Time      // the last heartbeat the store took
	handling map[int64]bool // inbound events queued or running here
}

// led is a platform this replica leads: since when, and what stops its
// run.
type led struct {
	at   time.Time
	stop context.CancelFunc
}

// leadPrefix names the lease of a platform's lead.
const leadPrefix = "lead:"

func newReplica(cfg Config) *replica {
	if !cfg.Shared {
		return nil
	}
	host, _ := os.Hostname()
	r := &replica{
		st: cfg.Store, log: cfg.Log, ttl: cfg.Lease,
		me:       store.Replica{ID: cfg.Claimer, Host: host, PID: os.Getpid(), Started: time.Now()},
		shared:   map[string]bool{},
		leading:  map[string]led{},
		beatOK:   time.Now(),
		handling: map[int64]bool{},
	}
	for _, p := range cfg.SharedPlatforms {
		r.shared[p] = true
	}
	return r
}

// every is how often the heartbeat runs: three times a lease, so one
// late beat loses nothing.
func (r *replica) every() time.Duration { return r.ttl / 3 }

// claim is what a row this replica stores is claimed with: by nobody
// when it is alone.
func (r *replica) claim() (by string, until time.Time) {
	if r == nil {
		return "", time.Time{}
	}
	return r.me.ID, time.Now().Add(r.ttl)
}

// isShared reports whether every replica reads the platform.
func (r *replica) isShared(platform string) bool { return r == nil || r.shared[platform] }

// runsHere reports whether this replica reads the platform now: always
// when alone or when it is shared, else while it leads it.
func (r *replica) runsHere(platform string) bool {
	if r.isShared(platform) {
		return true
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.leading[platform]
	return ok
}

// leadElsewhere is the lead of a platform another replica holds now, as
// the store has it (a lead taken a moment ago counts).
func (r *replica) leadElsewhere(ctx context.Context, platform string) (store.Lease, bool) {
	if r == nil || r.shared[platform] {
		return store.Lease{}, false
	}
	leases, err := r.st.Leases(ctx)
	if err != nil {
		r.log.Warn("read who leads the platforms", "err", err)
		return store.Lease{}, false
	}
	for _, l := range leases {
		if l.Name == leadPrefix+platform && l.Holder != r.me.ID {
			return l, true
		}
	}
	return store.Lease{}, false
}

// claimDelivery makes d this replica's to send: ErrClaimed when another
// sends it (or sent it). One claimed here at its storing needs no call.
func (r *replica) claimDelivery(ctx context.Context, d store.Delivery) error {
	if r == nil || (d.ClaimedBy == r.me.ID && d.ClaimedUntil.After(time.Now())) {
		return nil
	}
	return r.st.ClaimDelivery(ctx, d.ID, r.me.ID, r.ttl)
}

// stillMine renews this replica's claim on an inbound event it is about
// to handle: false when another replica took it over meanwhile (this
// one stopped answering the store for longer than its lease: paused,
// starved) or it is done, and it is not this replica's to handle any
// more. Alone, it always is.
func (r *replica) stillMine(ctx context.Context, id int64) bool {
	if r == nil {
		return true
	}
	err := r.st.HoldInbound(ctx, id, r.me.ID, r.ttl)
	if errors.Is(err, store.ErrClaimed) {
		return false
	}
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		// Handled as before: the store's trouble is not a sign of
		// another taker, and the turn itself runs one at a time.
		r.log.Warn("renew the claim of a message", "id", id, "err", err)
	}
	return true
}

// releaseDelivery leaves d to whichever replica can send it (the page it
// is for is connected to another).
func (r *replica) releaseDelivery(ctx context.Context, id int64) {
	if r == nil {
		return
	}
	if err := r.st.ReleaseDelivery(ctx, id, r.me.ID); err != nil {
		r.log.Warn("release a delivery", "id", id, "err", err)
	}
}

// lead takes the lead of a platform if it is free: ok, a context its run
// is to use (ended when the lead is lost) and done, which ends the run's
// lead.
func (r *replica) lead(ctx context.Context, platform string) (run context.Context, done func(), ok bool) {
	_, err := r.st.TakeLease(ctx, leadPrefix+platform, r.me.ID, r.ttl)
	if err != nil {
		if !errors.Is(err, store.ErrClaimed) && ctx.Err() == nil {
			r.log.Warn("take the lead of a platform", "platform", platform, "err", err)
		}
		return nil, nil, false
	}
	run, cancel := context.WithCancel(ctx)
	r.mu.Lock()
	r.leading[platform] = led{at: time.Now(), stop: cancel}
	r.mu.Unlock()
	r.log.Info("leading platform", "platform", platform, "replica", r.me.ID)
	return run, func() {
		cancel()
		r.mu.Lock()
		delete(r.leading, platform)
		r.mu.Unlock()
		if err := r.st.ReleaseLease(context.WithoutCancel(ctx), leadPrefix+platform, r.me.ID); err != nil {
			r.log.Warn("release the lead of a platform", "platform", platform, "err", err)
		}
	}, true
}

// settle waits, once a lead is taken, until the claims other replicas
// made on the platform's events as of now have lapsed or been answered:
// the last leader's lead may lapse before the claims it made just before
// it died (each lasts a lease from its own start). A live holder keeps
// what it holds; the wait is at most a lease.
func (r *replica) settle(ctx context.Context, platform string) {
	var until time.Time
	var after int64
	for {
		page, err := r.st.PendingInbound(ctx, after, store.DefaultQueueLimit)
		if err != nil {
			r.log.Warn("read what other replicas hold", "platform", platform, "err", err)
			return
		}
		for _, in := range page {
			if in.Platform == platform && in.ClaimedBy != "" && in.ClaimedBy != r.me.ID && in.ClaimedUntil.After(until) {
				until = in.ClaimedUntil
			}
		}
		if len(page) < store.DefaultQueueLimit {
			break
		}
		after = page[len(page)-1].ID
	}
	// A claim reaches at most a lease ahead; one further is not waited for.
	if wait := min(time.Until(until), r.ttl); wait > 0 {
		r.log.Info("waiting for the last reader's claims to lapse", "platform", platform, "for", wait.Round(time.Millisecond))
		select {
		case <-ctx.Done():
		case <-time.After(wait):
		}
	}
}

// beat tells the store this replica lives and renews what it holds. A
// lead it no longer holds (it was taken over after the store lost its
// beats) stops its run at once; so does every lead once no beat was
// taken for most of a lease, before another replica may take it.
func (r *replica) beat(ctx context.Context) {
	began := time.Now()
	held, err := r.st.Heartbeat(ctx, r.me, r.ttl)
	r.mu.Lock()
	if err != nil {
		r.log.Warn("heartbeat", "err", err)
		if time.Since(r.beatOK) > r.ttl-r.every() {
			for p, l := range r.leading {
				r.log.Warn("stopping a platform: its lead cannot be renewed", "platform", p)
				l.stop()
			}
		}
		r.mu.Unlock()
		return
	}
	r.beatOK = began
	for p, l := range r.leading {
		// A lead taken while the beat ran is not in held yet.
		if l.at.Before(began) && !slices.Contains(held, leadPrefix+p) {
			r.log.Warn("another replica leads the platform now; stopping it here", "platform", p)
			l.stop()
		}
	}
	r.mu.Unlock()
}

// hold notes that an inbound event is queued here; false when it is
// already (a claim of this replica's that lapsed and was claimed again).
func (r *replica) hold(id int64) bool {
	if r == nil {
		return true
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.handling[id] {
		return false
	}
	r.handling[id] = true
	return true
}

// drop ends hold.
func (r *replica) drop(id int64) {
	if r == nil {
		return
	}
	r.mu.Lock()
	delete(r.handling, id)
	r.mu.Unlock()
}

// leave ends everything this replica holds, for the others to take at
// once: a clean stop.
func (r *replica) leave(ctx context.Context) {
	if r == nil {
		return
	}
	if err := r.st.LeaveReplica(ctx, r.me.ID); err != nil {
		r.log.Warn("leave the replicas", "err", err)
	}
}

// replicaView is one replica as status shows it.
type replicaView struct {
	store.Replica
	Leads []string // the platforms it leads, sorted
	Self  bool
}

// view lists every replica and what each leads, as the store has it now.
func (r *replica) view(ctx context.Context) ([]replicaView, error) {
	if r == nil {
		return nil, nil
	}
	reps, err := r.st.ReplicaList(ctx)
	if err != nil {
		return nil, err
	}
	leases, err := r.st.Leases(ctx)
	if err != nil {
		return nil, err
	}
	leads := map[string][]string{}
	for _, l := range leases {
		if p, ok := strings.CutPrefix(l.Name, leadPrefix); ok {
			leads[l.Holder] = append(leads[l.Holder], p)
		}
	}
	out := make([]replicaView, 0, len(reps))
	for _, rep := range reps {
		ps := leads[rep.ID]
		sort.Strings(ps)
		out = append(out, replicaView{Replica: rep, Leads: ps, Self: rep.ID == r.me.ID})
	}
	return out, nil
}
