package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/baton-agent/baton/internal/gateway/control"
	"github.com/baton-agent/baton/internal/note"
	"github.com/baton-agent/baton/internal/place"
	"github.com/baton-agent/baton/internal/platform"
	"github.com/baton-agent/baton/internal/retry"
	"github.com/baton-agent/baton/internal/store"
)

// HandoffLead starts the text of a handoff turn's synthetic user message,
// so the model reads it as words from baton, not from the person.
// Code tells that message apart by its kind (store.KindHandoff), never by
// this text. Its first sentence after the lead says from where to where:
// people are shown that sentence (see internal/transcript).
const HandoffLead = "[baton handoff]"

// Sentinel errors of RequestHandoff.
var (
	ErrNotLive  = errors.New("platform is not live in this gateway")
	ErrNoHome   = errors.New("platform has no home channel")
	ErrStopping = errors.New("the gateway is stopping")
)

// handoffWorker is the room that moves sessions: it records the handoffs
// asked for, claims them for the platforms live here (under a lease it
// renews), carries each out step by step — the turn where the session was
// stopped, a destination opened and bound, the note and the greeting
// delivered — and tells the places involved how it ended. It owns the
// handoff claims and, under its own lock, which chat asked for each
// handoff in flight (to tell it the outcome).
type handoffWorker struct {
	st       store.Store
	log      *slog.Logger
	places   *platforms
	life     *lifecycle
	out      *outbox
	turns    *turns
	notes    *note.Writer
	progress *broker
	cfg      workerConfig
	// takeParked runs, in order, what was parked at a place that holds
	// its session now; the router, which runs messages, gives it.
	takeParked func(ctx context.Context, at platform.Address)

	kick   chan struct{} // wakes the worker
	claims sync.WaitGroup
	// signals, when the store carries them, wake this worker for what
	// processes on other machines wrote, and tell them of handoffs here.
	signals store.Signals

	mu        sync.Mutex
	outcomeTo map[string]string // session → the chat tellOutcome tells of its handoff's end
}

// workerConfig is what the worker takes of Config.
type workerConfig struct {
	claimer   string
	lease     time.Duration
	pollEvery time.Duration
	send      retry.Policy
	known     []string // Config.Places
}

func newHandoffWorker(cfg Config, places *platforms, life *lifecycle, out *outbox, turns *turns, notes *note.Writer) *handoffWorker {
	w := &handoffWorker{
		st: cfg.Store, log: cfg.Log, places: places, life: life, out: out, turns: turns, notes: notes,
		progress:  &broker{},
		cfg:       workerConfig{claimer: cfg.Claimer, lease: cfg.Lease, pollEvery: cfg.PollEvery, send: cfg.Send, known: cfg.Places},
		kick:      make(chan struct{}, 1),
		outcomeTo: map[string]string{},
	}
	if sig, ok := control.SignalsOf(cfg.Store); ok {
		w.signals = sig
		w.progress.signal = func(p control.Progress) { w.signal(control.TopicProgress, control.ProgressPayload(p)) }
	}
	return w
}

// signalWait bounds sending one signal: a slow server delays a handoff's
// step by no more.
const signalWait = 5 * time.Second

// signal sends a signal to the processes sharing the store, when it
// carries them. One lost costs only time: the other side reads the store
// on its fallback tick.
func (w *handoffWorker) signal(topic, payload string) {
	if w.signals == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), signalWait)
	defer cancel()
	if err := w.signals.Notify(ctx, topic, payload); err != nil {
		w.log.Warn("send a signal through the store", "topic", topic, "err", err)
	}
}

// listen returns the signals that wake the worker, or nil (the tick
// alone) when the store carries none or listening failed.
func (w *handoffWorker) listen(ctx context.Context) <-chan store.Signal {
	if w.signals == nil {
		return nil
	}
	ch, err := w.signals.Listen(ctx, control.GatewayTopics...)
	if err != nil {
		w.log.Warn("cannot listen for handoffs requested elsewhere; reading the store every poll interval only", "every", w.cfg.pollEvery, "err", err)
		return nil
	}
	return ch
}

// request checks that the destination can take the session, records a
// pending handoff, and wakes the worker at once. inHome lands it in the
// platform's home chat itself rather than in a new thread there. The home
// is recorded as the handoff's destination, so a gateway that retries it
// lands there too.
func (w *handoffWorker) request(ctx context.Context, sessionID, from, to string, inHome bool) (store.Handoff, error) {
	if w.life.isStopping() {
		return store.Handoff{}, fmt.Errorf("%w: try again once it is back (`baton gateway`)", ErrStopping)
	}
	if _, err := w.st.GetSession(ctx, sessionID); err != nil {
		return store.Handoff{}, fmt.Errorf("handoff of session %s: %w", sessionID, err)
	}
	if to != TerminalPlatform {
		if err := w.checkDestination(ctx, to); err != nil {
			return store.Handoff{}, err
		}
	}
	dest := ""
	if inHome && to != TerminalPlatform {
		homes, err := w.places.homeChats(ctx)
		if err != nil {
			return store.Handoff{}, err
		}
		dest = homes[to]
	}
	h, err := w.st.RequestHandoffTo(ctx, sessionID, from, to, dest)
	if err != nil {
		return h, fmt.Errorf("handoff of session %s: %w", sessionID, err)
	}
	w.progress.publish(control.Progress{HandoffID: h.ID, State: string(h.State), Step: "requested"})
	w.wake()
	w.announce(h)
	return h, nil
}

// announce tells the processes sharing the store of a handoff requested
// here: other gateways may run its destination, and a handoff to the
// terminal is for a terminal on any machine.
func (w *handoffWorker) announce(h store.Handoff) {
	if h.Platform == TerminalPlatform {
		w.signal(control.TopicTerminal, h.SessionID)
		return
	}
	w.signal(control.TopicHandoffs, control.HandoffPayload(h.ID))
}

func (w *handoffWorker) checkDestination(ctx context.Context, to string) error {
	if w.cfg.known != nil && !slices.Contains(w.cfg.known, to) {
		return place.Unknown(to, TerminalPlatform, w.cfg.known)
	}
	if _, ok := w.places.adapter(to); !ok {
		return fmt.Errorf("%w: %s", ErrNotLive, place.NotSetUp(w.places.placeName(to), w.places.names()))
	}
	if st := w.places.statusOf(to); st.State != platform.StateLive && !w.places.ledElsewhere(ctx, to) {
		return fmt.Errorf("%w: %s", ErrNotLive, w.places.notLive(to, st))
	}
	homes, err := w.places.homeChats(ctx)
	if err != nil {
		return err
	}
	if homes[to] == "" {
		return fmt.Errorf("%w: %s has no home channel yet; type /sethome in the %s chat where handoffs should land, or set gateway.homes.%s in config.yaml", ErrNoHome, to, to, to)
	}
	return nil
}

// wake wakes the worker, which also sends the notices other processes
// stored (sendStoredNotices).
func (w *handoffWorker) wake() {
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

// run claims pending handoffs for live platforms when kicked (over the
// control socket, or by a signal through the store from another
// machine), and every PollEvery as the fallback for a wake-up lost. It
// also reaps expired leases.
func (w *handoffWorker) run(ctx, work context.Context) {
	signals := w.listen(ctx)
	tick := time.NewTicker(w.cfg.pollEvery)
	defer tick.Stop()
	for {
		w.claimPending(ctx, work)
		select {
		case <-ctx.Done():
			return
		case _, ok := <-signals:
			if !ok {
				signals = nil
			}
			w.sendStoredNotices(ctx)
		case <-w.kick:
			w.sendStoredNotices(ctx)
		case <-tick.C:
			if signals == nil {
				signals = w.listen(ctx) // listening failed before: try again
			}
			w.sendStoredNotices(ctx)
			if n, failed, err := w.st.ReapHandoffs(ctx, time.Now()); err != nil {
				w.log.Warn("reap handoffs", "err", err)
			} else if n+len(failed) > 0 {
				w.log.Info("took back handoffs with expired leases", "requeued", n, "failed", len(failed))
				for _, id := range failed {
					w.undoReaped(ctx, id)
				}
			}
		}
	}
}

func (w *handoffWorker) claimPending(ctx, work context.Context) {
	live := w.places.live()
	if len(live) == 0 {
		return
	}
	pending, err := w.st.PendingHandoffs(ctx, live...)
	if err != nil {
		w.log.Warn("list pending handoffs", "err", err)
		return
	}
	for _, p := range pending {
		h, ok, err := w.st.ClaimHandoff(ctx, p.ID, w.cfg.claimer, w.cfg.lease)
		if err != nil {
			w.log.Warn("claim handoff", "id", p.ID, "err", err)
			continue
		}
		if !ok {
			continue // another gateway got it
		}
		w.claims.Add(1)
		go func() {
			defer w.claims.Done()
			w.runHandoff(work, h)
		}()
	}
}

// runHandoff carries one claimed handoff to completed or failed, renewing
// its lease meanwhile. If the lease is lost, it stops without a verdict:
// whoever holds the handoff now decides.
func (w *handoffWorker) runHandoff(ctx context.Context, h store.Handoff) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	lost := make(chan struct{})
	go func() {
		tick := time.NewTicker(w.cfg.lease / 3)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				ok, err := w.st.RenewHandoff(ctx, h.ID, w.cfg.claimer, w.cfg.lease)
				if err == nil && !ok {
					close(lost)
					cancel()
					return
				}
			}
		}
	}()
	w.step(h, "running", "claimed by the gateway", "")
	var before string // the holder the session leaves
	if sess, err := w.st.GetSession(ctx, h.SessionID); err == nil {
		before = sess.Holder
	}
	dest, undo, err := w.carry(ctx, h)
	select {
	case <-lost:
		w.log.Warn("lost the lease of a handoff mid-way; leaving it to its new claimer", "id", h.ID)
		return
	default:
	}
	if err != nil && ctx.Err() != nil {
		// The gateway is stopping: no verdict. The lease runs out and this
		// or another gateway retries it, picking up where it stopped.
		w.log.Info("handoff interrupted by shutdown; it will be retried", "id", h.ID)
		return
	}
	wctx, wcancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer wcancel()
	if err != nil {
		// Failed means not moved: take back the binding and anything not
		// yet posted, so the destination never shows a handoff the
		// terminal was told failed.
		if undo != nil {
			undo(wctx)
		}
		reason := err.Error()
		w.log.Warn("handoff failed", "id", h.ID, "session", h.SessionID, "to", h.Platform, "err", reason)
		if ok, ferr := w.st.FailHandoff(wctx, h.ID, w.cfg.claimer, reason); ferr != nil || !ok {
			w.log.Warn("record handoff failure", "id", h.ID, "applied", ok, "err", ferr)
			return
		}
		w.progress.publish(control.Progress{HandoffID: h.ID, State: string(store.HandoffFailed), Step: "failed", Error: store.TruncateReason(reason)})
		w.stayed(wctx, h.SessionID)
		return
	}
	if ok, cerr := w.st.CompleteHandoff(wctx, h.ID, w.cfg.claimer); cerr != nil || !ok {
		w.log.Warn("record handoff completion", "id", h.ID, "applied", ok, "err", cerr)
		return
	}
	w.log.Info("handoff completed", "id", h.ID, "session", h.SessionID, "to", dest.Key())
	w.moved(wctx, h, before, dest)
	w.progress.publish(control.Progress{HandoffID: h.ID, State: string(store.HandoffCompleted), Step: "completed", Destination: dest.Key(), Link: w.places.linkFor(dest.Key())})
}

// stopWait bounds how long a move waits for the turn it stopped to end.
const stopWait = 30 * time.Second

// stopTurn stops a turn running in the session where it is now (a chat
// of this gateway's, or a terminal): its answer so far is stored once,
// marked, before the handoff's note and turn, and nothing of it lands in
// the session after it moved. A turn that does not stop within stopWait
// (one waiting for a person's answer to an approval question in a
// terminal) is left to end on its own.
func (w *handoffWorker) stopTurn(ctx context.Context, h store.Handoff) {
	to := h.Destination
	if to == "" {
		to = h.Platform + ":" // the place is chosen next; its platform names it
	}
	if w.turns.ag.Turns == nil {
		return
	}
	running, err := w.turns.ag.Turns.Stop(ctx, h.SessionID, to, stopWait)
	if err != nil {
		w.log.Warn("stop the turn running in a session that moves", "id", h.ID, "session", h.SessionID, "err", err)
	}
	if running {
		w.step(h, "running", "stopped the turn running where the conversation was", "")
	}
}

func (w *handoffWorker) step(h store.Handoff, state, step, dest string) {
	w.progress.publish(control.Progress{HandoffID: h.ID, State: state, Step: step, Destination: dest})
}

// carry does the work of a handoff: pick the destination (a new thread
// under the home, or the home itself), bind it to the session, write the
// handoff note, run the synthetic "you were just handed off" turn and
// deliver the note with its answer. Each
// step is idempotent, so a retried handoff picks up where one stopped.
//
// undo, once the destination is bound, takes the binding back (to the
// session the place had before, if any) and abandons what is not yet sent.
func (w *handoffWorker) carry(ctx context.Context, h store.Handoff) (dest platform.Address, undo func(context.Context), err error) {
	sess, err := w.st.GetSession(ctx, h.SessionID)
	if err != nil {
		return dest, nil, fmt.Errorf("load session: %w", err)
	}
	a, ok := w.places.adapter(h.Platform)
	if !ok || !w.places.isLive(h.Platform) {
		return dest, nil, fmt.Errorf("%s is not running in this gateway", h.Platform)
	}
	w.stopTurn(ctx, h)
	dest, prev, err := w.destination(ctx, h, sess, a)
	if err != nil {
		return dest, nil, err
	}
	undo = func(ctx context.Context) { w.undoHandoff(ctx, h, sess.ID, dest, prev) }
	return dest, undo, w.greet(ctx, h, sess, dest)
}

// greet posts what is queued at dest (a notice, if any) and the first
// message there: the handoff note, then the agent's greeting.
//
// The note is written beside the greeting, not before it: the greeting
// streams to dest from the model's first token, and the note joins it at
// the top of the first message once both are done. The note covers the
// transcript before the handoff's own turn (notes().TurnOf) and is
// stored once per handoff: a retry shows the note an attempt stored.
func (w *handoffWorker) greet(ctx context.Context, h store.Handoff, sess store.Session, dest platform.Address) error {
	w.step(h, "running", "conversation ready in "+w.places.placeName(dest.Platform), dest.Key())
	if err := w.out.flush(ctx, dest); err != nil {
		return fmt.Errorf("send what waits at %s: %w", dest.Key(), err)
	}
	nctx, stopNote := context.WithCancel(ctx)
	defer stopNote()
	type written struct {
		n   note.Note
		err error
	}
	noted := make(chan written, 1)
	go func() {
		n, err := w.notes.ForHandoff(nctx, h)
		if err == nil {
			if n.Fallback != "" {
				w.step(h, "running", "note written by baton from the last turns ("+n.Fallback+")", dest.Key())
			} else {
				w.step(h, "running", "note written", dest.Key())
			}
		}
		noted <- written{n, err}
	}()
	reply, err := w.handoffTurn(ctx, h, sess, dest)
	if err != nil {
		stopNote()
		<-noted
		return err
	}
	note := <-noted
	if note.err != nil {
		return fmt.Errorf("write the handoff note: %w", note.err)
	}
	greeting := outgoing{key: handoffKey(h.ID), text: withNote(note.n, reply), kind: store.DeliveryGreeting}
	if err := w.out.deliverAll(ctx, dest, nil, greeting); err != nil {
		return fmt.Errorf("deliver the first message to %s: %w", dest.Key(), err)
	}
	w.step(h, "running", "first message delivered", dest.Key())
	return nil
}

// undoReaped takes back what a handoff the reaper failed (its claimers
// all stopped answering) did: the same undo as the worker's own failure
// path. What the destination had bound before is not known here: a place
// made for the handoff (a thread) is unbound, a home chat keeps the
// session (its notice told the person how to /resume the other).
func (w *handoffWorker) undoReaped(ctx context.Context, id int64) {
	h, err := w.st.GetHandoff(ctx, id)
	if err != nil {
		w.log.Warn("load a reaped handoff", "id", id, "err", err)
		return
	}
	if h.Destination == "" {
		return // it never got as far as a place
	}
	dest, err := platform.ParseKey(h.Destination)
	if err != nil {
		w.log.Warn("a reaped handoff's destination", "id", id, "err", err)
		return
	}
	prev := ""
	if homes, err := w.places.homeChats(ctx); err != nil || homes[h.Platform] == h.Destination {
		prev = h.SessionID // keep the binding: see undoHandoff
	}
	w.undoHandoff(ctx, h, h.SessionID, dest, prev)
	w.progress.publish(control.Progress{HandoffID: h.ID, State: string(store.HandoffFailed), Step: "failed", Error: h.Error})
	w.stayed(ctx, h.SessionID)
}

// stayed runs once a handoff failed: what was parked at the place still
// holding the session while it was leaving runs now, in order.
func (w *handoffWorker) stayed(ctx context.Context, sessionID string) {
	sess, err := w.st.GetSession(ctx, sessionID)
	if err != nil {
		return
	}
	if at, err := platform.ParseKey(sess.Holder); err == nil {
		if _, ok := w.places.adapter(at.Platform); ok {
			w.takeParked(ctx, at)
		}
	}
}

// undoHandoff takes back what a failed handoff did at dest: the binding,
// what was not yet posted there, and the handoff's turn in the
// transcript (its synthetic message and the answer to it, when nothing
// came after them), so the session reads as if it never moved.
func (w *handoffWorker) undoHandoff(ctx context.Context, h store.Handoff, sessionID string, dest platform.Address, prev string) {
	w.takeBackTurn(ctx, h, sessionID)
	// prev == sessionID: an earlier attempt bound it, and what the place
	// had before is not known here; it stays on this session (/resume
	// switches it), rather than losing the binding altogether.
	if b, err := w.st.LookupBinding(ctx, dest.Key()); err == nil && b.SessionID == sessionID && prev != sessionID {
		if prev != "" {
			_, err = w.st.Bind(ctx, dest.Key(), prev)
		} else {
			err = w.st.Unbind(ctx, dest.Key())
		}
		if err != nil {
			w.log.Warn("take back a failed handoff's binding", "id", h.ID, "err", err)
		}
	}
	pending, err := w.st.PendingDeliveries(ctx, dest.Key(), 0)
	if err != nil {
		w.log.Warn("list a failed handoff's messages", "id", h.ID, "err", err)
		return
	}
	prefix := fmt.Sprintf("handoff:%d:", h.ID)
	for _, d := range pending {
		if strings.HasPrefix(d.Key, prefix) {
			if err := w.st.AbandonDelivery(ctx, d.ID, "the handoff failed"); err != nil {
				w.log.Warn("abandon a failed handoff's message", "id", h.ID, "err", err)
			}
		}
	}
}

// destination creates (or, on a retry, reuses) the place the session moves
// to and binds it; prev is the session bound there before. When binding
// takes the place from another open session, a notice saying which one is
// active now and how to go back is queued there first.
func (w *handoffWorker) destination(ctx context.Context, h store.Handoff, sess store.Session, a platform.Adapter) (dest platform.Address, prev string, err error) {
	if h.Destination != "" {
		if dest, err = platform.ParseKey(h.Destination); err != nil {
			return dest, "", fmt.Errorf("recorded destination: %w", err)
		}
	} else {
		homes, err := w.places.homeChats(ctx)
		if err != nil {
			return dest, "", err
		}
		homeKey := homes[h.Platform]
		if homeKey == "" {
			return dest, "", fmt.Errorf("%s has no home channel: type /sethome in the chat where handoffs should land, or set gateway.homes.%s in config.yaml", h.Platform, h.Platform)
		}
		home, err := platform.ParseKey(homeKey)
		if err != nil {
			return dest, "", fmt.Errorf("home channel of %s: %w", h.Platform, err)
		}
		var noThread error
		// Every try of the thread carries one key, so a service that can
		// drop a repeat (a Matrix transaction id) opens it once even when
		// an answer was lost, or this gateway died before recording it.
		tctx := platform.WithDeliveryKey(ctx, fmt.Sprintf("handoff:%d:thread", h.ID))
		dest, noThread = w.newThread(tctx, a, home, threadTitle(sess))
		if noThread != nil {
			// The person expected a thread: say why the conversation is in
			// the home chat instead. Stored before the destination is
			// recorded, so a retry after a crash still finds it to send.
			notice := fmt.Sprintf("No new thread could be opened for this conversation (%s), so it continues here in this chat.", platform.OneLine(noThread))
			if _, err := w.st.EnqueueDeliveries(ctx, store.Delivery{Key: fmt.Sprintf("handoff:%d:nothread:part:0", h.ID), AddressKey: dest.Key(), Text: notice, Kind: store.DeliveryNotice}); err != nil {
				return dest, "", fmt.Errorf("store the notice for %s: %w", dest.Key(), err)
			}
			w.step(h, "running", fmt.Sprintf("could not open a thread in %s (%s); continuing in the home chat", w.places.placeName(h.Platform), platform.OneLine(noThread)), dest.Key())
		}
		ok, err := w.st.SetHandoffDestination(ctx, h.ID, w.cfg.claimer, dest.Key())
		if err != nil {
			return dest, "", fmt.Errorf("record destination: %w", err)
		}
		if !ok {
			return dest, "", errors.New("lost the claim on this handoff")
		}
	}
	// The notice about a session this takes the place from is stored
	// before the binding changes: a retry after a crash in between no
	// longer sees the old session, but finds the notice waiting to be sent.
	if b, err := w.st.LookupBinding(ctx, dest.Key()); err == nil && b.SessionID != sess.ID {
		if old, err := w.st.GetSession(ctx, b.SessionID); err == nil && old.Open() {
			notice := fmt.Sprintf("This chat now continues %s. It was on %s until now; to go back, type /resume %s.",
				describe(sess), describe(old), shortID(old.ID))
			if _, err := w.st.EnqueueDeliveries(ctx, store.Delivery{Key: fmt.Sprintf("handoff:%d:notice:part:0", h.ID), AddressKey: dest.Key(), Text: notice, Kind: store.DeliveryNotice}); err != nil {
				return dest, "", fmt.Errorf("store the notice for %s: %w", dest.Key(), err)
			}
		}
	}
	prev, err = w.st.Bind(ctx, dest.Key(), sess.ID)
	if err != nil {
		return dest, "", fmt.Errorf("bind %s: %w", dest.Key(), err)
	}
	return dest, prev, nil
}

// handoffTurn runs the synthetic turn that tells the agent where it now
// is, on the full transcript, and returns its answer. On a retry it reuses
// the answer an earlier attempt stored instead of asking twice.
func (w *handoffWorker) handoffTurn(ctx context.Context, h store.Handoff, sess store.Session, dest platform.Address) (string, error) {
	marker := fmt.Sprintf("handoff:%d", h.ID)
	defer w.turns.forgetTrouble(marker)
	p, err := w.turns.prior(ctx, h.Platform, marker)
	if err != nil {
		return "", err
	}
	if p.found {
		if p.answer != "" || p.movedOn {
			w.out.takeOverStreamed(ctx, dest, marker)
			return p.answer, nil
		}
		res, err := w.turns.run(ctx, dest, sess.ID, store.Message{Platform: h.Platform}, fmt.Sprintf("handoff:%d", h.ID)) // the input is stored; answer it
		if err != nil {
			return "", fmt.Errorf("handoff turn: %w", err)
		}
		return res.Text, nil
	}
	from := h.FromPlatform
	if from == "" {
		from = "another place"
	}
	input := store.Message{
		Role: store.RoleUser,
		Kind: store.KindHandoff,
		Content: fmt.Sprintf("%s This conversation was just handed off from %s to %s. The person will read your next message there. "+
			"Greet them briefly, say in a sentence or two where things stand, and carry on from there.", HandoffLead, w.places.placeName(from), w.places.placeName(h.Platform)),
		Platform:      h.Platform,
		PlatformMsgID: marker,
	}
	res, err := w.turns.run(ctx, dest, sess.ID, input, fmt.Sprintf("handoff:%d", h.ID))
	if err != nil {
		return "", fmt.Errorf("handoff turn: %w", err)
	}
	return res.Text, nil
}

func threadTitle(s store.Session) string {
	if s.Title != "" {
		return s.Title
	}
	return "baton " + shortID(s.ID)
}

func describe(s store.Session) string {
	if s.Title != "" {
		return fmt.Sprintf("%q (%s)", s.Title, shortID(s.ID))
	}
	return "session " + shortID(s.ID)
}

func shortID(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}

// errThreadsRefused is why a handoff lands in a home chat where threads
// were refused before (there, or by the platform's server everywhere).
var errThreadsRefused = errors.New("the service refused to open threads there before")

// newThread opens a thread for a handoff under home, or returns home
// itself where the platform has no threads, refuses them in this home
// chat (remembered, so it is asked once), or fails for a whole retry
// series. noThread says why
// a Threader's home is used instead of a new thread.
func (w *handoffWorker) newThread(ctx context.Context, a platform.Adapter, home platform.Address, title string) (dest platform.Address, noThread error) {
	t, ok := a.(platform.Threader)
	if !ok {
		return home, nil
	}
	if w.places.knownUnsupported(capThreads, home.Home()) {
		return home, errThreadsRefused
	}
	thread, err := retry.Value(ctx, w.cfg.send, func(ctx context.Context) (platform.Address, error) {
		addr, err := t.NewThread(ctx, home, title)
		switch cl, _ := platform.Classify(err); {
		case err == nil:
			return addr, nil
		case cl == platform.ClassTransient || cl == platform.ClassRetryAfter:
			return addr, retryable(err)
		}
		return addr, retry.Stop(err)
	}, nil)
	switch {
	case err == nil:
		return thread, nil
	case errors.Is(err, platform.ErrUnsupported):
		w.places.noteUnsupported(capThreads, home.Home(), err)
		return home, err
	}
	w.log.Warn("could not open a thread; handing off into the home chat", "platform", home.Platform, "err", err)
	return home, err
}

// takeBackTurn removes a failed handoff's synthetic turn from the end of
// the transcript; the rows stay in the session's history. A turn that
// something followed (the person wrote meanwhile) is left as it is.
func (w *handoffWorker) takeBackTurn(ctx context.Context, h store.Handoff, sessionID string) {
	msgs, err := w.st.Transcript(ctx, sessionID)
	if err != nil {
		w.log.Warn("load a failed handoff's transcript", "id", h.ID, "err", err)
		return
	}
	marker := fmt.Sprintf("handoff:%d", h.ID)
	at := -1
	for i, m := range msgs {
		if m.Kind == store.KindHandoff && m.PlatformMsgID == marker {
			at = i
		}
	}
	if at < 0 {
		return
	}
	for _, m := range msgs[at+1:] {
		if m.Role == store.RoleUser {
			return
		}
	}
	keep := make([]store.Message, at)
	for i, m := range msgs[:at] {
		m.ID, m.Seq, m.SessionID, m.Superseded = 0, 0, "", false
		keep[i] = m
	}
	if _, err := w.st.ReplaceTranscript(ctx, sessionID, keep); err != nil {
		w.log.Warn("take back a failed handoff's turn", "id", h.ID, "err", err)
	}
}

// arriving reports whether sess is on its way to addr: a handoff there
// is under way, so addr is about to hold it and what is said there waits
// for its turn rather than being parked.
func (w *handoffWorker) arriving(ctx context.Context, sess store.Session, addr platform.Address) bool {
	h, err := w.st.HandoffState(ctx, sess.ID)
	return err == nil && (h.State == store.HandoffPending || h.State == store.HandoffRunning) && h.Destination == addr.Key()
}

// leaving reports whether a handoff of sess out of addr, the place
// holding it, is under way: h, bound elsewhere. addr runs no new turn
// meanwhile; what is said there is parked, as anywhere not holding it.
func (w *handoffWorker) leaving(ctx context.Context, sess store.Session, addr platform.Address) (h store.Handoff, ok bool) {
	if sess.Holder != addr.Key() {
		return h, false
	}
	h, err := w.st.HandoffState(ctx, sess.ID)
	live := err == nil && (h.State == store.HandoffPending || h.State == store.HandoffRunning)
	return h, live && h.Destination != addr.Key()
}

// requestTo records a handoff of sessionID from the platform from
// (where it is held) to addr itself and wakes the worker.
func (w *handoffWorker) requestTo(ctx context.Context, sessionID, from string, addr platform.Address) (store.Handoff, error) {
	if w.life.isStopping() {
		return store.Handoff{}, fmt.Errorf("%w: try again once it is back (`baton gateway`)", ErrStopping)
	}
	h, err := w.st.RequestHandoffTo(ctx, sessionID, from, addr.Platform, addr.Key())
	if err != nil {
		return h, fmt.Errorf("handoff of session %s: %w", sessionID, err)
	}
	w.wake()
	w.announce(h)
	return h, nil
}

// moved runs once a handoff completed: the place that held the session
// before is told where it went, and what was parked at the destination
// runs now, in order.
func (w *handoffWorker) moved(ctx context.Context, h store.Handoff, before string, dest platform.Address) {
	w.mu.Lock()
	toldByOutcome := w.outcomeTo[h.SessionID] == before
	w.mu.Unlock()
	if before != "" && before != dest.Key() && !toldByOutcome {
		// A chat that asked to move is told by tellOutcome instead.
		if old, err := platform.ParseKey(before); err == nil && w.runs(old.Platform) {
			left := outgoing{key: handoffKey(h.ID) + ":left", text: place.Left(w.places.placeName(dest.Platform)), kind: store.DeliveryNotice}
			if err := w.out.deliverAll(ctx, old, nil, left); err != nil {
				w.log.Warn("tell the place a session left", "at", before, "err", err)
			}
		}
	}
	w.takeParked(ctx, dest)
}

// sendStoredNotices sends the notices another process stored for a chat,
// which no turn of this gateway's would otherwise flush: a terminal that
// took a session from a chat ("… continues in the terminal now"), or
// `baton pairing approve` welcoming the person approved. Those processes
// kick the gateway after storing; the worker's tick is the fallback.
func (w *handoffWorker) sendStoredNotices(ctx context.Context) {
	pending, err := w.st.PendingDeliveries(ctx, "", 0)
	if err != nil {
		return
	}
	seen := map[string]bool{}
	for _, d := range pending {
		notice := strings.Contains(d.Key, ":left:") || strings.HasPrefix(d.Key, "pairing:")
		if !notice || d.Attempts > 0 || seen[d.AddressKey] {
			continue
		}
		seen[d.AddressKey] = true
		if addr, err := platform.ParseKey(d.AddressKey); err == nil && w.places.isLive(addr.Platform) {
			if err := w.out.flush(ctx, addr); err != nil {
				w.log.Warn("send a notice", "to", d.AddressKey, "err", err)
			}
		}
	}
}

// forgetOutcome ends what chatHandoff noted for tellOutcome.
func (w *handoffWorker) forgetOutcome(sessionID string) {
	w.mu.Lock()
	delete(w.outcomeTo, sessionID)
	w.mu.Unlock()
}

// tellOutcome tells the chat a handoff was asked from how it ended: moved
// (and where), or failed (and why, and that the conversation stays here).
func (w *handoffWorker) tellOutcome(from platform.Address, h store.Handoff, success bool) {
	ch, stop := w.progress.subscribe(h.ID)
	w.claims.Add(1)
	go func() {
		defer w.claims.Done()
		defer stop()
		if success {
			defer w.forgetOutcome(h.SessionID)
		}
		ctx := w.life.work()
		var final control.Progress
		// The store first: it may have ended before the subscription.
		if cur, err := w.st.GetHandoff(ctx, h.ID); err == nil && cur.State.Terminal() {
			final = control.Progress{State: string(cur.State), Destination: cur.Destination, Error: cur.Error}
		}
		// Progress is published by this gateway's worker; a handoff ended
		// elsewhere (the reaper, another gateway) is seen in the store.
		tick := time.NewTicker(w.cfg.pollEvery)
		defer tick.Stop()
		for final.State == "" {
			select {
			case p := <-ch:
				if p.Terminal() {
					final = p
				}
			case <-tick.C:
				if cur, err := w.st.GetHandoff(ctx, h.ID); err == nil && cur.State.Terminal() {
					final = control.Progress{State: string(cur.State), Destination: cur.Destination, Error: cur.Error}
				}
			case <-w.life.quit:
				return // stopping: the chat will not hear; the store has the outcome
			}
		}
		text := fmt.Sprintf("This conversation now continues in %s. /continue to bring it back here.", w.places.placeName(h.Platform))
		if final.State != string(store.HandoffFailed) && !success {
			return
		}
		if final.State == string(store.HandoffFailed) {
			text = fmt.Sprintf("The handoff to %s failed: %s\nThe conversation stays here.", w.places.placeName(h.Platform), final.Error)
		}
		if err := w.out.deliver(ctx, from, fmt.Sprintf("handoff:%d:outcome", h.ID), text); err != nil {
			w.log.Warn("tell a handoff's outcome", "id", h.ID, "err", err)
		}
	}()
}

// withdrawTerminal fails a handoff of the session that is still
// waiting for the terminal, because the person has since asked for
// another; it reports whether there was one.
func (w *handoffWorker) withdrawTerminal(ctx context.Context, sessionID, reason string) bool {
	h, err := w.st.HandoffState(ctx, sessionID)
	if err != nil || h.State != store.HandoffPending || h.Platform != TerminalPlatform {
		return false
	}
	if _, ok, err := w.st.ClaimHandoff(ctx, h.ID, w.cfg.claimer, w.cfg.lease); err != nil || !ok {
		return false // the terminal took it meanwhile
	}
	ok, err := w.st.FailHandoff(ctx, h.ID, w.cfg.claimer, reason)
	return err == nil && ok
}

// tellFailure tells the chat only if the handoff it asked for failed (a
// /continue whose success shows as the conversation arriving here).
func (w *handoffWorker) tellFailure(from platform.Address, h store.Handoff) {
	w.tellOutcome(from, h, false)
}

// noteOutcomeTo has tellOutcome, not moved, tell the chat at key how the
// session's handoff ended: that chat asked for it. Noted before the
// worker can finish it.
func (w *handoffWorker) noteOutcomeTo(sessionID, key string) {
	w.mu.Lock()
	w.outcomeTo[sessionID] = key
	w.mu.Unlock()
}

// runs reports whether this gateway runs the platform.
func (w *handoffWorker) runs(name string) bool {
	_, ok := w.places.adapter(name)
	return ok
}

// wait waits for the handoffs claimed and the outcomes being told.
func (w *handoffWorker) wait() { w.claims.Wait() }
