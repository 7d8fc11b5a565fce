// Package gateway is baton's daemon: it runs the platform adapters, routes
// what people say to the right session, runs one turn at a time per
// conversation, delivers replies through the store's outbox, runs the
// handoff worker, and answers the terminal on the control socket.
package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/baton-agent/baton/internal/agent"
	"github.com/baton-agent/baton/internal/command"
	"github.com/baton-agent/baton/internal/gateway/control"
	"github.com/baton-agent/baton/internal/platform"
	"github.com/baton-agent/baton/internal/retry"
	"github.com/baton-agent/baton/internal/store"
)

// Defaults for zero-valued Config fields.
const (
	DefaultLease           = 30 * time.Second
	DefaultPollEvery       = 2 * time.Second
	DefaultOfferWithin     = 12 * time.Hour
	DefaultShutdownGrace   = 10 * time.Second
	DefaultApprovalTimeout = 10 * time.Minute
	typingEvery            = 4 * time.Second
	// typingAfter is how long a turn runs before typing shows: an answer
	// ready by then (posted whole after firstPostWait) needs no indicator,
	// which would cost the service a call per reply.
	typingAfter = firstPostWait
)

// Config is what a Gateway is made of. Store, Agent and OwnerID are required.
type Config struct {
	Store store.Store
	// Agent runs the turns. Its Approver is replaced by the gateway's own,
	// and its StoreRetry by Rerecord: a turn whose store fails keeps what
	// the model said and waits for the store as long as the gateway runs.
	Agent    *agent.Agent
	Adapters []platform.Adapter
	OwnerID  string // the user every session the gateway creates belongs to
	// Owners lists, per platform, the platform user ids that are the owner;
	// anyone else is ignored (and logged). A platform listed in
	// TrustedPlatforms needs none: its own access control (the web chat's
	// token) already proves the owner.
	Owners           map[string][]string
	TrustedPlatforms []string
	// PersonalPlatforms run on the owner's own account (platform.Spec's
	// Personal): strangers there are ignored without a word.
	PersonalPlatforms []string
	// Homes are the configured home channels (platform → address key);
	// one set by /sethome, kept in the store, wins.
	Homes map[string]string
	// Socket is where the control API listens; "" runs none.
	Socket string
	// ControlIdle closes a control connection that sends no request for
	// this long; 0: DefaultControlIdle.
	ControlIdle time.Duration
	// ControlConns bounds open control connections; 0: DefaultControlConns.
	ControlConns  int
	Claimer       string // who claims handoffs; default host:pid
	Lease         time.Duration
	PollEvery     time.Duration
	ShutdownGrace time.Duration
	Log           *slog.Logger
	// WebURL is reported by Status (the web chat's address with token).
	WebURL string
	// Commands are the slash commands understood in chats; nil: command.Default().
	Commands *command.Registry
	// ApprovalTimeout is how long a tool waits for /approve in a chat
	// before it is denied; 0: DefaultApprovalTimeout.
	ApprovalTimeout time.Duration
	// Rate bounds how fast one person's messages are taken, per platform
	// account; zero: DefaultRate.
	Rate Rate
	// OfferWithin is how recently another session must have been active
	// for a place holding none to offer it (/continue); 0:
	// DefaultOfferWithin, negative: never.
	OfferWithin time.Duration
	// Display names platforms for people ("Telegram"); a platform not
	// listed is shown by its name.
	Display map[string]string
	// Places are every platform baton has, set up or not, so a handoff
	// to a name that is none is told apart from one to a platform not
	// set up here; nil tells them apart by nothing.
	Places []string
	// Restart is how a platform whose connection failed is restarted;
	// zero: platform.DefaultRestart().
	Restart retry.Policy
	// Send is the retry series of one delivery attempt (the adapter tries
	// each call once); zero: DefaultSend().
	Send retry.Policy
	// Resend is how replies left unsent by a failed series are tried again
	// in the background until they are sent; zero: DefaultResend().
	Resend retry.Policy
	// Rerecord is how what the store could not record (busy, locked, disk
	// full) is written again until the store recovers: a turn's messages,
	// a message handled again in its place in the conversation, a reply
	// recorded as sent; zero: DefaultRerecord().
	Rerecord retry.Policy
}

// DefaultSend is the retry series of a delivery while someone waits for
// the answer: a few quick tries, at most 15 seconds.
func DefaultSend() retry.Policy {
	return retry.Policy{First: 500 * time.Millisecond, Max: 4 * time.Second, Tries: 4, Within: 15 * time.Second}
}

// DefaultResend is how unsent replies are tried again in the background:
// for as long as it takes, at least every half minute (retry's cap). A
// platform that comes back live sends what waits for it at once.
func DefaultResend() retry.Policy { return retry.Policy{First: 5 * time.Second} }

// DefaultRerecord tries a message again soon, then every half minute,
// for as long as the gateway runs.
func DefaultRerecord() retry.Policy { return retry.Policy{First: time.Second, Max: 30 * time.Second} }

// Gateway routes events between platforms, the agent and the store.
type Gateway struct {
	cfg      Config
	st       store.Store
	ag       *agent.Agent
	log      *slog.Logger
	adapters map[string]platform.Adapter
	owners   map[string]map[string]bool
	cmds     *command.Registry
	started  time.Time

	kick chan struct{} // wakes the handoff worker
	// workCtx is the context of turns and deliveries: it outlives Run's
	// ctx by the shutdown grace period. Set by Run before any adapter
	// starts; atomic, since a web page may connect to an adapter served
	// before Run and ask for what waits (read through work).
	workCtx   atomic.Pointer[context.Context]
	boxes     mailboxes
	send      keyedLocks // per address key
	sessions  keyedLocks // per session id
	progress  broker
	approvals approvals
	refused   *refusals // optional capabilities refused, per place (capabilities.go)

	mu              sync.Mutex
	status          map[string]platform.Status  // per platform, from its supervisor
	senders         *senderRates                // messages taken per person, for Config.Rate
	resending       map[string]bool             // address keys with a background resend running
	redelivering    map[string]bool             // address keys being redelivered → asked again meanwhile
	streamed        map[string][]string         // answer's outbox key → the streamed messages its parts replace
	sentNotRecorded map[int64]string            // delivery id → platform message id: sent, its record failed
	sentUpTo        map[string]int64            // address key → the highest delivery id this process sent there (deliver.go)
	sentFloor       int64                       // the highest mark dropped from sentUpTo, standing for every address without one
	sentMarks       int                         // how many addresses sentUpTo keeps
	troubleTold     map[string]bool             // turn keys whose person was told of store trouble
	turnAddr        map[string]platform.Address // session → where its running turn answers
	outcomeTo       map[string]string           // session → the chat tellOutcome tells of its handoff's end
	claims          sync.WaitGroup
	// background holds resends and other work that ends with the work
	// context; started only through goBackground, which refuses once Run
	// waits for it (backgroundDone, under mu).
	background     sync.WaitGroup
	backgroundDone bool
	stopping       atomic.Bool   // no new handoffs once set
	quit           chan struct{} // closed when stopping begins
}

// New checks cfg and builds a Gateway; Run starts it.
func New(cfg Config) (*Gateway, error) {
	if cfg.Store == nil || cfg.Agent == nil || cfg.OwnerID == "" {
		return nil, errors.New("gateway: Store, Agent and OwnerID are required")
	}
	if cfg.Lease <= 0 {
		cfg.Lease = DefaultLease
	}
	if cfg.PollEvery <= 0 {
		cfg.PollEvery = DefaultPollEvery
	}
	if cfg.ShutdownGrace <= 0 {
		cfg.ShutdownGrace = DefaultShutdownGrace
	}
	if cfg.ApprovalTimeout <= 0 {
		cfg.ApprovalTimeout = DefaultApprovalTimeout
	}
	if cfg.OfferWithin == 0 {
		cfg.OfferWithin = DefaultOfferWithin
	}
	if cfg.Claimer == "" {
		host, _ := os.Hostname()
		cfg.Claimer = fmt.Sprintf("gateway@%s:%d", host, os.Getpid())
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	g := &Gateway{
		cfg:             cfg,
		st:              cfg.Store,
		ag:              cfg.Agent,
		log:             cfg.Log,
		adapters:        map[string]platform.Adapter{},
		owners:          map[string]map[string]bool{},
		kick:            make(chan struct{}, 1),
		quit:            make(chan struct{}),
		status:          map[string]platform.Status{},
		resending:       map[string]bool{},
		redelivering:    map[string]bool{},
		streamed:        map[string][]string{},
		sentNotRecorded: map[int64]string{},
		sentUpTo:        map[string]int64{},
		sentMarks:       maxSentMarks,
		troubleTold:     map[string]bool{},
		outcomeTo:       map[string]string{},
		senders:         newSenderRates(),
		turnAddr:        map[string]platform.Address{},
		refused:         newRefusals(maxRefusedPlaces),
	}
	if cfg.Restart == (retry.Policy{}) {
		g.cfg.Restart = platform.DefaultRestart()
	}
	if cfg.Send == (retry.Policy{}) {
		g.cfg.Send = DefaultSend()
	}
	if cfg.Rate == (Rate{}) {
		g.cfg.Rate = DefaultRate()
	}
	if cfg.Rerecord == (retry.Policy{}) {
		g.cfg.Rerecord = DefaultRerecord()
	}
	if cfg.Resend == (retry.Policy{}) {
		g.cfg.Resend = DefaultResend()
	}
	g.cmds = cfg.Commands
	if g.cmds == nil {
		g.cmds = command.Default()
	}
	for _, a := range cfg.Adapters {
		if _, dup := g.adapters[a.Name()]; dup {
			return nil, fmt.Errorf("gateway: two adapters named %q", a.Name())
		}
		g.adapters[a.Name()] = a
	}
	for p, ids := range cfg.Owners {
		g.owners[p] = map[string]bool{}
		for _, id := range ids {
			g.owners[p][id] = true
		}
	}
	g.ag.Approver = agent.ApproverFunc(g.approve)
	g.ag.StoreRetry = g.cfg.Rerecord
	return g, nil
}

// Run starts everything and blocks until ctx ends; then it stops taking
// input (what arrives is stored for the next start), gives running turns
// ShutdownGrace to finish and be delivered, suspends the rest (they keep
// what was said, and resume at the next start) and returns.
func (g *Gateway) Run(ctx context.Context) error {
	g.started = time.Now()
	if err := g.linkOwners(ctx); err != nil {
		return err
	}
	var stopControl func()
	if g.cfg.Socket != "" {
		var err error
		if stopControl, err = g.serveControl(g.cfg.Socket); err != nil {
			return err
		}
		defer stopControl()
	}

	// work outlives ctx by the grace period, so turns in flight at a
	// SIGTERM can finish and be delivered; past it they are suspended.
	work, cancelWork := context.WithCancelCause(context.WithoutCancel(ctx))
	suspend := func() { cancelWork(agent.ErrSuspended) }
	defer suspend()
	g.workCtx.Store(&work)
	// The platforms run as long as the turns: during the grace period the
	// answers still reach the chats and approvals are still heard.
	live, stopPlatforms := context.WithCancel(context.WithoutCancel(ctx))
	defer stopPlatforms()

	// What waited from the last run is queued before any platform can
	// hand in something newer: each conversation's mailbox then answers
	// in the order people wrote, and a cut-off answer is continued before
	// a later message could interrupt it.
	g.recover(work)
	var adapters sync.WaitGroup
	for name, a := range g.adapters {
		adapters.Add(1)
		go func() {
			defer adapters.Done()
			g.runAdapter(live, name, a)
		}()
	}

	var worker sync.WaitGroup
	worker.Add(1)
	go func() {
		defer worker.Done()
		g.runWorker(ctx, work)
	}()

	<-ctx.Done()
	g.stopping.Store(true)
	close(g.quit)
	g.log.Info("gateway stopping", "grace", g.cfg.ShutdownGrace)
	worker.Wait()
	done := make(chan struct{})
	go func() {
		g.boxes.wait()
		g.claims.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(g.cfg.ShutdownGrace):
		g.log.Warn("turns still running after the grace period; suspending them until the next start")
		suspend()
		<-done
	}
	stopPlatforms()
	adapters.Wait()
	suspend() // background resends end here; what they did not send waits in the store
	g.mu.Lock()
	g.backgroundDone = true // a page opened now starts nothing to wait for
	g.mu.Unlock()
	g.background.Wait()
	g.log.Info("gateway stopped")
	return nil
}

// runAdapter supervises one platform until ctx ends: its Run is restarted
// with backoff whenever it fails, except on refused credentials, and every
// change of its state is kept for Status and the handoff checks.
func (g *Gateway) runAdapter(ctx context.Context, name string, a platform.Adapter) {
	var menu sync.Once
	g.log.Info("platform starting", "platform", name)
	platform.Supervise(ctx, a, receiver{g}, g.cfg.Restart, func(s platform.Status) {
		g.mu.Lock()
		prev := g.status[name]
		g.status[name] = s
		g.mu.Unlock()
		switch s.State {
		case platform.StateLive:
			g.log.Info("platform live", "platform", name)
			g.Kick() // handoffs may be waiting for it
			// Replies that waited for it go now, not at their resend's
			// next try.
			g.redeliver(platform.Address{Platform: name})
			if c, ok := a.(platform.Commander); ok {
				menu.Do(func() {
					g.goBackground(func() { g.publishCommands(ctx, name, c) })
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

// receiver is what adapters hand their events to.
type receiver struct{ g *Gateway }

func (r receiver) Receive(ctx context.Context, ev platform.Event) error { return r.g.handle(ctx, ev) }
func (r receiver) Live()                                                {}

// Redeliver sends at once what waits for a place its adapter can reach again.
func (r receiver) Redeliver(at platform.Address) { r.g.redeliver(at) }

// publishCommands publishes the chat command menu in the background, so a
// slow or refusing server never delays the platform's start.
func (g *Gateway) publishCommands(ctx context.Context, name string, c platform.Commander) {
	err := retry.Do(ctx, g.cfg.Resend, func(ctx context.Context) error {
		err := c.SetCommands(ctx, g.chatCommands())
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

// retryable passes a platform's wait request on to the retry policy.
func retryable(err error) error {
	if cl, d := platform.Classify(err); cl == platform.ClassRetryAfter {
		return retry.After(d, err)
	}
	return err
}

func (g *Gateway) isLive(name string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.status[name].State == platform.StateLive
}

func (g *Gateway) livePlatforms() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []string
	for name, s := range g.status {
		if s.State == platform.StateLive {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// display is a platform's name for people.
func (g *Gateway) display(name string) string {
	if d := g.cfg.Display[name]; d != "" {
		return d
	}
	return name
}

// linkOwners records the configured owner identities in the store, so the
// owner's sessions can be found from any platform they use.
func (g *Gateway) linkOwners(ctx context.Context) error {
	for p, ids := range g.owners {
		for id := range ids {
			if err := g.st.LinkIdentity(ctx, store.Identity{Platform: p, PlatformUserID: id, UserID: g.cfg.OwnerID}); err != nil {
				return fmt.Errorf("link owner identity %s:%s: %w", p, id, err)
			}
		}
	}
	return nil
}

// homes merges configured homes with those set by /sethome.
func (g *Gateway) homes(ctx context.Context) (map[string]string, error) {
	out := map[string]string{}
	for p, k := range g.cfg.Homes {
		out[p] = k
	}
	set, err := g.st.HomeChannels(ctx)
	if err != nil {
		return nil, fmt.Errorf("load home channels: %w", err)
	}
	for p, k := range set {
		out[p] = k
	}
	return out, nil
}

// Status reports what runs.
func (g *Gateway) Status(ctx context.Context) control.Status {
	homes, err := g.homes(ctx)
	if err != nil {
		g.log.Warn("status", "err", err)
	}
	s := control.Status{PID: os.Getpid(), Started: g.started, Claimer: g.cfg.Claimer, WebURL: g.cfg.WebURL}
	waiting, err := g.waiting(ctx)
	if err != nil {
		g.log.Warn("status", "err", err)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	for name := range g.adapters {
		st := g.status[name]
		if st.State == "" {
			st.State = platform.StateStarting
		}
		s.Platforms = append(s.Platforms, control.Platform{
			Name: name, Display: g.display(name), Live: st.State == platform.StateLive,
			State: string(st.State), Since: st.Since, NextTry: st.NextTry, Error: st.Reason,
			Home: homes[name], Waiting: waiting[name],
		})
	}
	sort.Slice(s.Platforms, func(i, j int) bool { return s.Platforms[i].Name < s.Platforms[j].Name })
	return s
}

// recoverPage is how many pending inbound events recover reads at once.
const recoverPage = 500

// recover resumes what a previous run left: every inbound event stored but
// not handled, page by page, in the order stored.
func (g *Gateway) recover(ctx context.Context) {
	var after int64
	for {
		pending, err := g.st.PendingInbound(ctx, after, recoverPage)
		if err != nil {
			g.log.Error("load pending inbound events", "err", err)
			return
		}
		for _, in := range pending {
			if in.Platform == TerminalPlatform {
				// Kept by a terminal (parked as it is stored): the
				// terminal's to answer, never a chat's.
				continue
			}
			g.boxes.push(in.AddressKey, func() { g.process(ctx, in, false) })
		}
		if len(pending) < recoverPage {
			break
		}
		after = pending[len(pending)-1].ID
	}
	// Unsent replies are sent as each platform becomes live (runAdapter).
}

// work is the context of turns and deliveries, or nil before Run.
func (g *Gateway) work() context.Context {
	if p := g.workCtx.Load(); p != nil {
		return *p
	}
	return nil
}

// goBackground runs fn in the background unless Run has stopped waiting
// for such work; it reports whether fn was started. Add happens under mu,
// so it never races Run's Wait.
func (g *Gateway) goBackground(fn func()) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.backgroundDone {
		return false
	}
	g.background.Add(1)
	go func() {
		defer g.background.Done()
		fn()
	}()
	return true
}
