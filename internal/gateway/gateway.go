// Package gateway is baton's daemon: it runs the platform adapters, routes
// what people say to the right session, runs one turn at a time per
// conversation, delivers replies through the store's outbox, runs the
// handoff worker, and answers the terminal on the control socket.
//
// It is built in rooms, each with its own state and lock, each asking
// only the rooms below it (TestRoomsReadTopToBottom holds every file to
// that). From the top:
//
//   - gateway.go assembles the rooms and runs them;
//   - the router takes what arrives: inbound.go is a message's path,
//     commands.go, pairing.go and holder.go what it answers, router.go
//     its state;
//   - the handoff worker (handoff.go) moves sessions;
//   - approvals.go and turns.go run the agent, one turn per session;
//   - the outbox (outbox.go, sent.go, stream.go, streamed.go) sends, and
//     mirror.go shows the web chat's pages here what other replicas sent;
//   - platforms.go, lifecycle.go and config.go are what every room asks.
package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/baton-agent/baton/internal/agent"
	"github.com/baton-agent/baton/internal/command"
	"github.com/baton-agent/baton/internal/gateway/control"
	"github.com/baton-agent/baton/internal/platform"
	"github.com/baton-agent/baton/internal/retry"
	"github.com/baton-agent/baton/internal/store"
)

// Gateway routes events between platforms, the agent and the store. It
// assembles the rooms and runs them; each room keeps its own state.
type Gateway struct {
	log    *slog.Logger
	st     store.Store
	places *platforms
	life   *lifecycle
	out    *outbox
	router *router
	worker *handoffWorker
	ctl    *controlServer
	socket string
	grace  time.Duration
	// restart is how a platform whose connection failed is restarted.
	restart retry.Policy
	resend  retry.Policy
	ownerID string
	owners  map[string][]string
}

// New checks cfg and builds a Gateway; Run starts it.
func New(cfg Config) (*Gateway, error) {
	if cfg.Store == nil || cfg.Agent == nil || cfg.OwnerID == "" {
		return nil, errors.New("gateway: Store, Agent and OwnerID are required")
	}
	cfg = withDefaults(cfg)
	places, err := newPlatforms(cfg.Adapters, cfg)
	if err != nil {
		return nil, err
	}
	cmds := cfg.Commands
	if cmds == nil {
		cmds = command.Default()
	}
	life := newLifecycle()
	out := newOutbox(cfg.Store, cfg.Log, places, life, newStreamedReplies(cfg.Store, cfg.Log),
		sendPolicies{send: cfg.Send, resend: cfg.Resend, rerecord: cfg.Rerecord})
	out.mirror = newMirror(cfg, places)
	turns := newTurns(cfg.Agent, cfg.Store, cfg.Log, places, out)
	approvals := &approvals{turns: turns, out: out, log: cfg.Log, cmds: cmds, timeout: cfg.ApprovalTimeout}
	notes := newNoteWriter(cfg.Agent, cfg.Store, cfg.Log)
	worker := newHandoffWorker(cfg, places, life, out, turns, notes)
	router := newRouter(cfg, cmds, places, life, out, turns, approvals, worker, notes)
	// The worker runs what waited at a place once its session is held
	// there; running messages is the router's.
	worker.takeParked = router.takeParked
	cfg.Agent.Approver = agent.ApproverFunc(approvals.ask)
	cfg.Agent.StoreRetry = cfg.Rerecord
	return &Gateway{
		log: cfg.Log, st: cfg.Store, places: places, life: life, out: out, router: router, worker: worker,
		ctl:    newControlServer(cfg, places, out, worker),
		socket: cfg.Socket, grace: cfg.ShutdownGrace, restart: cfg.Restart, resend: cfg.Resend,
		ownerID: cfg.OwnerID, owners: cfg.Owners,
	}, nil
}

// Run starts everything and blocks until ctx ends; then it stops taking
// input (what arrives is stored for the next start), gives running turns
// ShutdownGrace to finish and be delivered, suspends the rest (they keep
// what was said, and resume at the next start) and returns.
func (g *Gateway) Run(ctx context.Context) error {
	g.ctl.started = time.Now()
	if err := g.linkOwners(ctx); err != nil {
		return err
	}
	if g.socket != "" {
		stopControl, err := g.ctl.serve(g.socket)
		if err != nil {
			return err
		}
		defer stopControl()
	}

	// work outlives ctx by the grace period, so turns in flight at a
	// SIGTERM can finish and be delivered; past it they are suspended.
	work, cancelWork := context.WithCancelCause(context.WithoutCancel(ctx))
	suspend := func() { cancelWork(agent.ErrSuspended) }
	defer suspend()
	g.life.workCtx.Store(&work)
	// The platforms run as long as the turns: during the grace period the
	// answers still reach the chats and approvals are still heard.
	live, stopPlatforms := context.WithCancel(context.WithoutCancel(ctx))
	defer stopPlatforms()
	rep := g.places.rep
	if rep != nil {
		// Seen, with what it holds, before it claims anything.
		rep.beat(ctx)
	}

	// What waited from the last run is queued before any platform can
	// hand in something newer: each conversation's mailbox then answers
	// in the order people wrote, and a cut-off answer is continued before
	// a later message could interrupt it.
	g.router.recover(work)
	var adapters sync.WaitGroup
	for _, name := range g.places.names() {
		a, _ := g.places.adapter(name)
		adapters.Add(1)
		go func() {
			defer adapters.Done()
			if rep.isShared(name) {
				g.runAdapter(live, name, a)
				return
			}
			g.lead(live, work, name, a)
		}()
	}
	var beats sync.WaitGroup
	beatsCtx, stopBeats := context.WithCancel(context.WithoutCancel(ctx))
	defer stopBeats()
	if rep != nil {
		beats.Add(2)
		go func() {
			defer beats.Done()
			g.beat(beatsCtx, work)
		}()
		go func() {
			defer beats.Done()
			g.out.mirror.run(beatsCtx)
		}()
	}

	var worker sync.WaitGroup
	worker.Add(1)
	go func() {
		defer worker.Done()
		g.worker.run(ctx, work)
	}()

	<-ctx.Done()
	g.life.stop()
	g.log.Info("gateway stopping", "grace", g.grace)
	worker.Wait()
	done := make(chan struct{})
	go func() {
		g.router.boxes.wait()
		g.worker.wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(g.grace):
		g.log.Warn("turns still running after the grace period; suspending them until the next start")
		suspend()
		<-done
	}
	stopPlatforms()
	adapters.Wait()
	suspend() // background resends end here; what they did not send waits in the store
	g.life.waitBackground()
	stopBeats()
	beats.Wait()
	if rep != nil {
		// What this replica held is the others' at once, not in a lease.
		lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), storeTimeout)
		rep.leave(lctx)
		cancel()
	}
	g.log.Info("gateway stopped")
	return nil
}

// runAdapter supervises one platform until ctx ends: its Run is restarted
// with backoff whenever it fails, except on refused credentials, and every
// change of its state is kept for Status and the handoff checks.
func (g *Gateway) runAdapter(ctx context.Context, name string, a platform.Adapter) {
	var menu sync.Once
	g.log.Info("platform starting", "platform", name)
	platform.Supervise(ctx, a, receiver{g}, g.restart, func(s platform.Status) {
		prev := g.places.setStatus(name, s)
		switch s.State {
		case platform.StateLive:
			g.log.Info("platform live", "platform", name)
			g.worker.wake() // handoffs may be waiting for it
			// Replies that waited for it go now, not at their resend's
			// next try.
			g.out.redeliver(platform.Address{Platform: name})
			if c, ok := a.(platform.Commander); ok {
				menu.Do(func() {
					g.life.goBackground(func() { g.publishCommands(ctx, name, c) })
				})
			}
		case platform.StateDown:
			if prev.State != platform.StateDown || prev.Reason != s.Reason {
				g.log.Warn("platform down; restarting it", "platform", name, "reason", s.Reason, "next_try", s.NextTry.Format(time.TimeOnly))
			}
		case platform.StateRefused:
			g.log.Error("platform refused baton's credentials; fix them and restart the gateway", "platform", name, "reason", s.Reason)
		}
	})
}

// lead runs a platform whose service allows one reader while this
// replica leads it, and waits to take the lead while another does: the
// one place leadership is decided, for every such adapter.
func (g *Gateway) lead(ctx, work context.Context, name string, a platform.Adapter) {
	rep := g.places.rep
	for ctx.Err() == nil {
		if run, done, ok := rep.lead(ctx, name); ok {
			// What the last leader was handling goes first, in order:
			// anything heard from now on queues behind it.
			rep.settle(run, name)
			g.router.takeOver(work)
			g.runAdapter(run, name, a)
			done()
			continue
		}
		select {
		case <-ctx.Done():
		case <-time.After(rep.every()):
		}
	}
}

// beat is a replica's heartbeat, every third of a lease until ctx ends:
// it renews what the replica holds, takes over the inbound events no live
// replica holds, and sends what waits for the platforms it reads (replies
// another replica stored for a platform this one leads, or whose sender
// died).
func (g *Gateway) beat(ctx, work context.Context) {
	rep := g.places.rep
	tick := time.NewTicker(rep.every())
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		rep.beat(ctx)
		if g.life.isStopping() {
			continue // what waits is the others' to take
		}
		g.router.takeOver(work)
		for _, name := range g.places.live() {
			if rep.runsHere(name) {
				g.out.redeliver(platform.Address{Platform: name})
			}
		}
	}
}

// receiver is what adapters hand their events to.
type receiver struct{ g *Gateway }

func (r receiver) Receive(ctx context.Context, ev platform.Event) error {
	return r.g.router.handle(ctx, ev)
}
func (r receiver) Live() {}

// Redeliver sends at once what waits for a place its adapter can reach again.
func (r receiver) Redeliver(at platform.Address) { r.g.out.redeliver(at) }

// publishCommands publishes the chat command menu in the background, so a
// slow or refusing server never delays the platform's start.
func (g *Gateway) publishCommands(ctx context.Context, name string, c platform.Commander) {
	err := retry.Do(ctx, g.resend, func(ctx context.Context) error {
		err := c.SetCommands(ctx, g.router.chatCommands())
		if cl, _ := platform.Classify(err); cl == platform.ClassUnsupported || cl == platform.ClassPermanent || cl == platform.ClassRefused {
			return retry.Stop(err)
		}
		return retryable(err)
	}, nil)
	switch {
	case err == nil:
		g.log.Debug("command menu published", "platform", name)
	case ctx.Err() == nil:
		g.log.Info("command menu not published", "platform", name, "err", err)
	}
}

// linkOwners records the configured owner identities in the store, so the
// owner's sessions can be found from any platform they use.
func (g *Gateway) linkOwners(ctx context.Context) error {
	for p, ids := range g.owners {
		for _, id := range ids {
			if err := g.st.LinkIdentity(ctx, store.Identity{Platform: p, PlatformUserID: id, UserID: g.ownerID}); err != nil {
				return fmt.Errorf("link owner identity %s:%s: %w", p, id, err)
			}
		}
	}
	return nil
}

// Status reports what runs.
func (g *Gateway) Status(ctx context.Context) control.Status { return g.ctl.status(ctx) }

// Kick wakes the handoff worker, which also sends the notices other
// processes stored.
func (g *Gateway) Kick() { g.worker.wake() }

// RequestHandoff checks that the destination can take the session, records
// a pending handoff, and wakes the worker at once.
func (g *Gateway) RequestHandoff(ctx context.Context, sessionID, from, to string) (store.Handoff, error) {
	return g.worker.request(ctx, sessionID, from, to, false)
}

// RequestHandoffAt is RequestHandoff, landing in the platform's home chat
// itself when inHome, rather than in a new thread there. The home is
// recorded as the handoff's destination, so a gateway that retries it
// lands there too.
func (g *Gateway) RequestHandoffAt(ctx context.Context, sessionID, from, to string, inHome bool) (store.Handoff, error) {
	return g.worker.request(ctx, sessionID, from, to, inHome)
}
