package gateway

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/baton-agent/baton/internal/gateway/control"
	"github.com/baton-agent/baton/internal/note"
	"github.com/baton-agent/baton/internal/place"
	"github.com/baton-agent/baton/internal/platform"
	"github.com/baton-agent/baton/internal/retry"
	"github.com/baton-agent/baton/internal/store"
)

// Platform names that are places but not adapters.
const (
	// TerminalPlatform is the terminal: handoffs to it wait in the store
	// until `baton` (or `baton resume`) picks them up.
	TerminalPlatform = "cli"
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

// RequestHandoff checks that the destination can take the session, records
// a pending handoff, and wakes the worker at once.
func (g *Gateway) RequestHandoff(ctx context.Context, sessionID, from, to string) (store.Handoff, error) {
	return g.RequestHandoffAt(ctx, sessionID, from, to, false)
}

// RequestHandoffAt is RequestHandoff, landing in the platform's home chat
// itself when inHome, rather than in a new thread there. The home is
// recorded as the handoff's destination, so a gateway that retries it
// lands there too.
func (g *Gateway) RequestHandoffAt(ctx context.Context, sessionID, from, to string, inHome bool) (store.Handoff, error) {
	if g.stopping.Load() {
		return store.Handoff{}, fmt.Errorf("%w: try again once it is back (`baton gateway`)", ErrStopping)
	}
	if _, err := g.st.GetSession(ctx, sessionID); err != nil {
		return store.Handoff{}, fmt.Errorf("handoff of session %s: %w", sessionID, err)
	}
	if to != TerminalPlatform {
		if err := g.checkDestination(ctx, to); err != nil {
			return store.Handoff{}, err
		}
	}
	dest := ""
	if inHome && to != TerminalPlatform {
		homes, err := g.homes(ctx)
		if err != nil {
			return store.Handoff{}, err
		}
		dest = homes[to]
	}
	h, err := g.st.RequestHandoffTo(ctx, sessionID, from, to, dest)
	if err != nil {
		return h, fmt.Errorf("handoff of session %s: %w", sessionID, err)
	}
	g.progress.publish(control.Progress{HandoffID: h.ID, State: string(h.State), Step: "requested"})
	g.Kick()
	return h, nil
}

func (g *Gateway) checkDestination(ctx context.Context, to string) error {
	if g.cfg.Places != nil && !slices.Contains(g.cfg.Places, to) {
		return place.Unknown(to, TerminalPlatform, g.cfg.Places)
	}
	if _, ok := g.adapters[to]; !ok {
		names := g.names()
		slices.Sort(names)
		return fmt.Errorf("%w: %s", ErrNotLive, place.NotSetUp(g.placeName(to), names))
	}
	if st := g.platformStatus(to); st.State != platform.StateLive {
		return fmt.Errorf("%w: %s", ErrNotLive, g.notLive(to, st))
	}
	homes, err := g.homes(ctx)
	if err != nil {
		return err
	}
	if homes[to] == "" {
		return fmt.Errorf("%w: %s has no home channel yet; type /sethome in the %s chat where handoffs should land, or set gateway.homes.%s in config.yaml", ErrNoHome, to, to, to)
	}
	return nil
}

func (g *Gateway) names() []string {
	var out []string
	for n := range g.adapters {
		out = append(out, n)
	}
	return out
}

// Kick wakes the handoff worker, which also sends the notices other
// processes stored (sendStoredNotices).
func (g *Gateway) Kick() {
	select {
	case g.kick <- struct{}{}:
	default:
	}
}

// runWorker claims pending handoffs for live platforms when kicked, and
// every PollEvery as the fallback for writers that cannot kick (another
// process writing the store). It also reaps expired leases.
func (g *Gateway) runWorker(ctx, work context.Context) {
	tick := time.NewTicker(g.cfg.PollEvery)
	defer tick.Stop()
	for {
		g.claimPending(ctx, work)
		select {
		case <-ctx.Done():
			return
		case <-g.kick:
			g.sendStoredNotices(ctx)
		case <-tick.C:
			g.sendStoredNotices(ctx)
			if n, failed, err := g.st.ReapHandoffs(ctx, time.Now()); err != nil {
				g.log.Warn("reap handoffs", "err", err)
			} else if n+len(failed) > 0 {
				g.log.Info("took back handoffs with expired leases", "requeued", n, "failed", len(failed))
				for _, id := range failed {
					g.undoReaped(ctx, id)
				}
			}
		}
	}
}

func (g *Gateway) claimPending(ctx, work context.Context) {
	live := g.livePlatforms()
	if len(live) == 0 {
		return
	}
	pending, err := g.st.PendingHandoffs(ctx, live...)
	if err != nil {
		g.log.Warn("list pending handoffs", "err", err)
		return
	}
	for _, p := range pending {
		h, ok, err := g.st.ClaimHandoff(ctx, p.ID, g.cfg.Claimer, g.cfg.Lease)
		if err != nil {
			g.log.Warn("claim handoff", "id", p.ID, "err", err)
			continue
		}
		if !ok {
			continue // another gateway got it
		}
		g.claims.Add(1)
		go func() {
			defer g.claims.Done()
			g.runHandoff(work, h)
		}()
	}
}

// runHandoff carries one claimed handoff to completed or failed, renewing
// its lease meanwhile. If the lease is lost, it stops without a verdict:
// whoever holds the handoff now decides.
func (g *Gateway) runHandoff(ctx context.Context, h store.Handoff) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	lost := make(chan struct{})
	go func() {
		tick := time.NewTicker(g.cfg.Lease / 3)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				ok, err := g.st.RenewHandoff(ctx, h.ID, g.cfg.Claimer, g.cfg.Lease)
				if err == nil && !ok {
					close(lost)
					cancel()
					return
				}
			}
		}
	}()
	g.step(h, "running", "claimed by the gateway", "")
	var before string // the holder the session leaves
	if sess, err := g.st.GetSession(ctx, h.SessionID); err == nil {
		before = sess.Holder
	}
	dest, undo, err := g.carry(ctx, h)
	select {
	case <-lost:
		g.log.Warn("lost the lease of a handoff mid-way; leaving it to its new claimer", "id", h.ID)
		return
	default:
	}
	if err != nil && ctx.Err() != nil {
		// The gateway is stopping: no verdict. The lease runs out and this
		// or another gateway retries it, picking up where it stopped.
		g.log.Info("handoff interrupted by shutdown; it will be retried", "id", h.ID)
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
		g.log.Warn("handoff failed", "id", h.ID, "session", h.SessionID, "to", h.Platform, "err", reason)
		if ok, ferr := g.st.FailHandoff(wctx, h.ID, g.cfg.Claimer, reason); ferr != nil || !ok {
			g.log.Warn("record handoff failure", "id", h.ID, "applied", ok, "err", ferr)
			return
		}
		g.progress.publish(control.Progress{HandoffID: h.ID, State: string(store.HandoffFailed), Step: "failed", Error: store.TruncateReason(reason)})
		g.stayed(wctx, h.SessionID)
		return
	}
	if ok, cerr := g.st.CompleteHandoff(wctx, h.ID, g.cfg.Claimer); cerr != nil || !ok {
		g.log.Warn("record handoff completion", "id", h.ID, "applied", ok, "err", cerr)
		return
	}
	g.log.Info("handoff completed", "id", h.ID, "session", h.SessionID, "to", dest.Key())
	g.moved(wctx, h, before, dest)
	g.progress.publish(control.Progress{HandoffID: h.ID, State: string(store.HandoffCompleted), Step: "completed", Destination: dest.Key(), Link: g.linkFor(dest.Key())})
}

// stopWait bounds how long a move waits for the turn it stopped to end.
const stopWait = 30 * time.Second

// stopTurn stops a turn running in the session where it is now (a chat
// of this gateway's, or a terminal): its answer so far is stored once,
// marked, before the handoff's note and turn, and nothing of it lands in
// the session after it moved. A turn that does not stop within stopWait
// (one waiting for a person's answer to an approval question in a
// terminal) is left to end on its own.
func (g *Gateway) stopTurn(ctx context.Context, h store.Handoff) {
	to := h.Destination
	if to == "" {
		to = h.Platform + ":" // the place is chosen next; its platform names it
	}
	running, err := g.ag.Turns.Stop(ctx, h.SessionID, to, stopWait)
	if err != nil {
		g.log.Warn("stop the turn running in a session that moves", "id", h.ID, "session", h.SessionID, "err", err)
	}
	if running {
		g.step(h, "running", "stopped the turn running where the conversation was", "")
	}
}

func (g *Gateway) step(h store.Handoff, state, step, dest string) {
	g.progress.publish(control.Progress{HandoffID: h.ID, State: state, Step: step, Destination: dest})
}

// carry does the work of a handoff: pick the destination (a new thread
// under the home, or the home itself), bind it to the session, write the
// handoff note, run the synthetic "you were just handed off" turn and
// deliver the note with its answer. Each
// step is idempotent, so a retried handoff picks up where one stopped.
//
// undo, once the destination is bound, takes the binding back (to the
// session the place had before, if any) and abandons what is not yet sent.
func (g *Gateway) carry(ctx context.Context, h store.Handoff) (dest platform.Address, undo func(context.Context), err error) {
	sess, err := g.st.GetSession(ctx, h.SessionID)
	if err != nil {
		return dest, nil, fmt.Errorf("load session: %w", err)
	}
	a, ok := g.adapters[h.Platform]
	if !ok || !g.isLive(h.Platform) {
		return dest, nil, fmt.Errorf("%s is not running in this gateway", h.Platform)
	}
	g.stopTurn(ctx, h)
	dest, prev, err := g.destination(ctx, h, sess, a)
	if err != nil {
		return dest, nil, err
	}
	undo = func(ctx context.Context) { g.undoHandoff(ctx, h, sess.ID, dest, prev) }
	return dest, undo, g.greet(ctx, h, sess, dest)
}

// greet posts what is queued at dest (a notice, if any) and the first
// message there: the handoff note, then the agent's greeting.
//
// The note is written beside the greeting, not before it: the greeting
// streams to dest from the model's first token, and the note joins it at
// the top of the first message once both are done. The note covers the
// transcript before the handoff's own turn (notes().TurnOf) and is
// stored once per handoff: a retry shows the note an attempt stored.
func (g *Gateway) greet(ctx context.Context, h store.Handoff, sess store.Session, dest platform.Address) error {
	g.step(h, "running", "conversation ready in "+g.placeName(dest.Platform), dest.Key())
	if err := g.flush(ctx, dest); err != nil {
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
		n, err := g.notes().ForHandoff(nctx, h)
		if err == nil {
			if n.Fallback != "" {
				g.step(h, "running", "note written by baton from the last turns ("+n.Fallback+")", dest.Key())
			} else {
				g.step(h, "running", "note written", dest.Key())
			}
		}
		noted <- written{n, err}
	}()
	reply, err := g.handoffTurn(ctx, h, sess, dest)
	if err != nil {
		stopNote()
		<-noted
		return err
	}
	w := <-noted
	if w.err != nil {
		return fmt.Errorf("write the handoff note: %w", w.err)
	}
	greeting := outgoing{key: fmt.Sprintf("handoff:%d", h.ID), text: withNote(w.n, reply), kind: store.DeliveryGreeting}
	if err := g.deliverAll(ctx, dest, nil, greeting); err != nil {
		return fmt.Errorf("deliver the first message to %s: %w", dest.Key(), err)
	}
	g.step(h, "running", "first message delivered", dest.Key())
	return nil
}

// undoReaped takes back what a handoff the reaper failed (its claimers
// all stopped answering) did: the same undo as the worker's own failure
// path. What the destination had bound before is not known here: a place
// made for the handoff (a thread) is unbound, a home chat keeps the
// session (its notice told the person how to /resume the other).
func (g *Gateway) undoReaped(ctx context.Context, id int64) {
	h, err := g.st.GetHandoff(ctx, id)
	if err != nil {
		g.log.Warn("load a reaped handoff", "id", id, "err", err)
		return
	}
	if h.Destination == "" {
		return // it never got as far as a place
	}
	dest, err := platform.ParseKey(h.Destination)
	if err != nil {
		g.log.Warn("a reaped handoff's destination", "id", id, "err", err)
		return
	}
	prev := ""
	if homes, err := g.homes(ctx); err != nil || homes[h.Platform] == h.Destination {
		prev = h.SessionID // keep the binding: see undoHandoff
	}
	g.undoHandoff(ctx, h, h.SessionID, dest, prev)
	g.progress.publish(control.Progress{HandoffID: h.ID, State: string(store.HandoffFailed), Step: "failed", Error: h.Error})
	g.stayed(ctx, h.SessionID)
}

// stayed runs once a handoff failed: what was parked at the place still
// holding the session while it was leaving runs now, in order.
func (g *Gateway) stayed(ctx context.Context, sessionID string) {
	sess, err := g.st.GetSession(ctx, sessionID)
	if err != nil {
		return
	}
	if at, err := platform.ParseKey(sess.Holder); err == nil && g.adapters[at.Platform] != nil {
		g.carryParked(ctx, at)
	}
}

// undoHandoff takes back what a failed handoff did at dest: the binding,
// what was not yet posted there, and the handoff's turn in the
// transcript (its synthetic message and the answer to it, when nothing
// came after them), so the session reads as if it never moved.
func (g *Gateway) undoHandoff(ctx context.Context, h store.Handoff, sessionID string, dest platform.Address, prev string) {
	g.takeBackTurn(ctx, h, sessionID)
	// prev == sessionID: an earlier attempt bound it, and what the place
	// had before is not known here; it stays on this session (/resume
	// switches it), rather than losing the binding altogether.
	if b, err := g.st.LookupBinding(ctx, dest.Key()); err == nil && b.SessionID == sessionID && prev != sessionID {
		if prev != "" {
			_, err = g.st.Bind(ctx, dest.Key(), prev)
		} else {
			err = g.st.Unbind(ctx, dest.Key())
		}
		if err != nil {
			g.log.Warn("take back a failed handoff's binding", "id", h.ID, "err", err)
		}
	}
	pending, err := g.st.PendingDeliveries(ctx, dest.Key(), 0)
	if err != nil {
		g.log.Warn("list a failed handoff's messages", "id", h.ID, "err", err)
		return
	}
	prefix := fmt.Sprintf("handoff:%d:", h.ID)
	for _, d := range pending {
		if strings.HasPrefix(d.Key, prefix) {
			if err := g.st.AbandonDelivery(ctx, d.ID, "the handoff failed"); err != nil {
				g.log.Warn("abandon a failed handoff's message", "id", h.ID, "err", err)
			}
		}
	}
}

// destination creates (or, on a retry, reuses) the place the session moves
// to and binds it; prev is the session bound there before. When binding
// takes the place from another open session, a notice saying which one is
// active now and how to go back is queued there first.
func (g *Gateway) destination(ctx context.Context, h store.Handoff, sess store.Session, a platform.Adapter) (dest platform.Address, prev string, err error) {
	if h.Destination != "" {
		if dest, err = platform.ParseKey(h.Destination); err != nil {
			return dest, "", fmt.Errorf("recorded destination: %w", err)
		}
	} else {
		homes, err := g.homes(ctx)
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
		dest, noThread = g.newThread(tctx, a, home, threadTitle(sess))
		if noThread != nil {
			// The person expected a thread: say why the conversation is in
			// the home chat instead. Stored before the destination is
			// recorded, so a retry after a crash still finds it to send.
			notice := fmt.Sprintf("No new thread could be opened for this conversation (%s), so it continues here in this chat.", platform.OneLine(noThread))
			if _, err := g.st.EnqueueDeliveries(ctx, store.Delivery{Key: fmt.Sprintf("handoff:%d:nothread:part:0", h.ID), AddressKey: dest.Key(), Text: notice, Kind: store.DeliveryNotice}); err != nil {
				return dest, "", fmt.Errorf("store the notice for %s: %w", dest.Key(), err)
			}
			g.step(h, "running", fmt.Sprintf("could not open a thread in %s (%s); continuing in the home chat", g.placeName(h.Platform), platform.OneLine(noThread)), dest.Key())
		}
		ok, err := g.st.SetHandoffDestination(ctx, h.ID, g.cfg.Claimer, dest.Key())
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
	if b, err := g.st.LookupBinding(ctx, dest.Key()); err == nil && b.SessionID != sess.ID {
		if old, err := g.st.GetSession(ctx, b.SessionID); err == nil && old.Open() {
			notice := fmt.Sprintf("This chat now continues %s. It was on %s until now; to go back, type /resume %s.",
				describe(sess), describe(old), shortID(old.ID))
			if _, err := g.st.EnqueueDeliveries(ctx, store.Delivery{Key: fmt.Sprintf("handoff:%d:notice:part:0", h.ID), AddressKey: dest.Key(), Text: notice, Kind: store.DeliveryNotice}); err != nil {
				return dest, "", fmt.Errorf("store the notice for %s: %w", dest.Key(), err)
			}
		}
	}
	prev, err = g.st.Bind(ctx, dest.Key(), sess.ID)
	if err != nil {
		return dest, "", fmt.Errorf("bind %s: %w", dest.Key(), err)
	}
	return dest, prev, nil
}

// handoffTurn runs the synthetic turn that tells the agent where it now
// is, on the full transcript, and returns its answer. On a retry it reuses
// the answer an earlier attempt stored instead of asking twice.
func (g *Gateway) handoffTurn(ctx context.Context, h store.Handoff, sess store.Session, dest platform.Address) (string, error) {
	marker := fmt.Sprintf("handoff:%d", h.ID)
	defer g.forgetTrouble(marker)
	p, err := g.priorTurn(ctx, h.Platform, marker)
	if err != nil {
		return "", err
	}
	if p.found {
		if p.answer != "" || p.movedOn {
			g.takeOverStreamed(ctx, dest, marker)
			return p.answer, nil
		}
		res, err := g.runTurn(ctx, dest, sess.ID, store.Message{Platform: h.Platform}, fmt.Sprintf("handoff:%d", h.ID)) // the input is stored; answer it
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
			"Greet them briefly, say in a sentence or two where things stand, and carry on from there.", HandoffLead, g.placeName(from), g.placeName(h.Platform)),
		Platform:      h.Platform,
		PlatformMsgID: marker,
	}
	res, err := g.runTurn(ctx, dest, sess.ID, input, fmt.Sprintf("handoff:%d", h.ID))
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

// placeName names a place for people (place.Name).
func (g *Gateway) placeName(p string) string {
	return place.Name(p, TerminalPlatform, g.cfg.Display)
}

// errThreadsRefused is why a handoff lands in a home chat where threads
// were refused before (there, or by the platform's server everywhere).
var errThreadsRefused = errors.New("the service refused to open threads there before")

// newThread opens a thread for a handoff under home, or returns home
// itself where the platform has no threads, refuses them in this home
// chat (remembered, so it is asked once), or fails for a whole retry
// series. noThread says why
// a Threader's home is used instead of a new thread.
func (g *Gateway) newThread(ctx context.Context, a platform.Adapter, home platform.Address, title string) (dest platform.Address, noThread error) {
	t, ok := a.(platform.Threader)
	if !ok {
		return home, nil
	}
	if g.knownUnsupported(capThreads, home.Home()) {
		return home, errThreadsRefused
	}
	thread, err := retry.Value(ctx, g.cfg.Send, func(ctx context.Context) (platform.Address, error) {
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
		g.noteUnsupported(capThreads, home.Home(), err)
		return home, err
	}
	g.log.Warn("could not open a thread; handing off into the home chat", "platform", home.Platform, "err", err)
	return home, err
}

// platformStatus is what the supervisor last said of a platform.
func (g *Gateway) platformStatus(name string) platform.Status {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.status[name]
}

// notLive says why a platform cannot take a handoff now, for people.
func (g *Gateway) notLive(name string, st platform.Status) string {
	d := g.display(name)
	switch st.State {
	case platform.StateDown:
		return fmt.Sprintf("%s is down (%s); the gateway keeps trying to reconnect — see `baton gateway status`", d, st.Reason)
	case platform.StateRefused:
		return fmt.Sprintf("%s refused baton's credentials (%s); fix them in config.yaml or the environment and restart the gateway", d, st.Reason)
	case platform.StateStopped:
		return d + " has stopped with the gateway"
	}
	return d + " is still connecting; try again in a moment (`baton gateway status` shows it)"
}

// takeBackTurn removes a failed handoff's synthetic turn from the end of
// the transcript; the rows stay in the session's history. A turn that
// something followed (the person wrote meanwhile) is left as it is.
func (g *Gateway) takeBackTurn(ctx context.Context, h store.Handoff, sessionID string) {
	msgs, err := g.st.Transcript(ctx, sessionID)
	if err != nil {
		g.log.Warn("load a failed handoff's transcript", "id", h.ID, "err", err)
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
	if _, err := g.st.ReplaceTranscript(ctx, sessionID, keep); err != nil {
		g.log.Warn("take back a failed handoff's turn", "id", h.ID, "err", err)
	}
}
