package gateway

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/baton-agent/baton/internal/agent"
	"github.com/baton-agent/baton/internal/command"
	"github.com/baton-agent/baton/internal/place"
	"github.com/baton-agent/baton/internal/platform"
	"github.com/baton-agent/baton/internal/retry"
	"github.com/baton-agent/baton/internal/store"
)

// handle is every adapter's Handler: it authorizes the event, stores it in
// the inbox (deduplicating redeliveries) and queues it on its
// conversation's mailbox. It returns nil only once the event is stored or
// deliberately dropped, so the adapter may acknowledge it.
func (g *Gateway) handle(ctx context.Context, ev platform.Event) error {
	ok, err := g.authorized(ctx, ev)
	if err != nil {
		return fmt.Errorf("authorize %s sender %s: %w", ev.At.Platform, ev.SenderID, err)
	}
	if !ok {
		g.stranger(ctx, ev)
		return nil
	}
	// Approval answers bypass the mailbox: the turn waiting for them is
	// what occupies it.
	if g.answerApproval(ctx, ev) {
		return nil
	}
	in, isNew, err := g.st.AddInbound(ctx, store.Inbound{
		Platform:      ev.At.Platform,
		PlatformMsgID: ev.ID,
		AddressKey:    ev.At.Key(),
		SenderID:      ev.SenderID,
		Sender:        ev.Sender,
		Text:          ev.Text,
		ReceivedAt:    ev.Time,
	})
	if err != nil {
		return fmt.Errorf("store inbound %s message %s: %w", ev.At.Platform, ev.ID, err)
	}
	if !isNew {
		// A redelivery: it is queued already, handled already, or will be
		// picked up by recover at the next start.
		g.log.Debug("duplicate inbound message", "platform", ev.At.Platform, "id", ev.ID)
		return nil
	}
	// Bounded per person: a runaway script or a leaked account cannot
	// flood the agent (and the owner's model bill). Counted after the
	// duplicate check, so that a client sending again what was not
	// acknowledged (a page after a reconnect) spends nothing; refused
	// messages are kept, marked done, and not answered.
	if !g.senders.take(ev.At.Platform+"/"+ev.SenderID, g.cfg.Rate, time.Now()) {
		g.log.Warn("message refused: too fast", "platform", ev.At.Platform, "sender_id", ev.SenderID)
		if err := g.st.MarkInboundDone(ctx, in.ID); err != nil {
			return fmt.Errorf("mark refused %s message %s done: %w", ev.At.Platform, ev.ID, err)
		}
		g.sendNow(ctx, ev.At, tooFast(g.cfg.Rate))
		return nil
	}
	if g.stopping.Load() {
		// Kept for the next start; the grace period is for the turns
		// already running.
		g.log.Info("message kept for the next start: the gateway is stopping", "at", in.AddressKey)
		g.sendNow(ctx, ev.At, "baton is restarting. Your message is kept and will be answered when it is back.")
		return nil
	}
	// Handled in the gateway's work context, not the adapter's: a page
	// that disconnects does not cancel its turn, a shutdown past its grace
	// period does.
	g.boxes.push(in.AddressKey, func() { g.process(g.work(), in, true) })
	return nil
}

// authorized reports whether the sender is the owner: on a trusted
// platform, by configuration, or by an identity linked to the owner (a
// pairing the owner approved).
func (g *Gateway) authorized(ctx context.Context, ev platform.Event) (bool, error) {
	for _, p := range g.cfg.TrustedPlatforms {
		if p == ev.At.Platform {
			return true, nil
		}
	}
	if g.owners[ev.At.Platform][ev.SenderID] {
		return true, nil
	}
	if ev.SenderID == "" {
		return false, nil
	}
	id, err := g.st.LookupIdentity(ctx, ev.At.Platform, ev.SenderID)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return false, nil
	case err != nil:
		return false, err
	}
	return id.UserID == g.cfg.OwnerID, nil
}

// errNotRecorded marks a failure to record a turn or its reply in the
// store, for a reason that may pass: the message is handled again.
var errNotRecorded = errors.New("not recorded")

// notRecorded marks err as errNotRecorded when it may pass.
func notRecorded(what string, err error) error {
	if store.Transient(err) || errors.Is(err, agent.ErrStore) {
		return fmt.Errorf("%s: %w: %w", what, errNotRecorded, err)
	}
	return fmt.Errorf("%s: %w", what, err)
}

// process handles one stored inbound event in its mailbox. When the store
// cannot record its turn or reply, the person is told once, plainly, and
// the event is handled again under the Rerecord policy, holding its
// conversation's later messages back so that order is kept; it is marked
// done only once handled. fresh says this run stored the event just now
// (AddInbound found it new), so no earlier try can have recorded a turn
// for it.
func (g *Gateway) process(ctx context.Context, in store.Inbound, fresh bool) {
	key := fmt.Sprintf("in:%d", in.ID)
	defer g.forgetTrouble(key)
	err := retry.Do(ctx, g.cfg.Rerecord, func(ctx context.Context) error {
		err := g.handleOnce(ctx, &in, fresh)
		fresh = false // a failed try may have recorded part of the turn
		if err != nil && !errors.Is(err, errNotRecorded) {
			g.log.Error("handle message", "at", in.AddressKey, "err", err)
			return nil // not the store's passing trouble: retrying will not help
		}
		return err
	}, func(err error, wait time.Duration) {
		g.log.Warn("the store could not record a message's turn; trying again", "at", in.AddressKey, "in", wait.Round(time.Millisecond), "err", err)
		if addr, perr := platform.ParseKey(in.AddressKey); perr == nil {
			g.tellTrouble(ctx, addr, key, err)
		}
	})
	if err != nil || ctx.Err() != nil {
		return // stopped mid-way: handled again at the next start
	}
	if !in.DoneAt.IsZero() {
		return // marked done with its answer (reply)
	}
	_ = retry.Do(ctx, g.cfg.Rerecord, func(ctx context.Context) error {
		wctx, cancel := context.WithTimeout(ctx, storeTimeout)
		defer cancel()
		return g.st.MarkInboundDone(wctx, in.ID)
	}, func(err error, _ time.Duration) {
		g.log.Warn("mark inbound done", "id", in.ID, "err", err)
	})
}

// storeTrouble tells a person why their message waits.
func storeTrouble(err error) string {
	why := "the store is busy"
	if strings.Contains(err.Error(), "disk is full") {
		why = "the disk is full"
	}
	return "baton could not save this conversation just now (" + why + "); it will keep trying. Your message is kept and will be answered as soon as it can be saved."
}

// tellTrouble tells the person at addr, once per turn key, that the store
// could not record their turn.
func (g *Gateway) tellTrouble(ctx context.Context, addr platform.Address, key string, err error) {
	g.mu.Lock()
	told := g.troubleTold[key]
	g.troubleTold[key] = true
	g.mu.Unlock()
	if !told {
		g.sendNow(ctx, addr, "⚠️ "+storeTrouble(err))
	}
}

func (g *Gateway) forgetTrouble(key string) {
	g.mu.Lock()
	delete(g.troubleTold, key)
	g.mu.Unlock()
}

// handleOnce is one try at handling an inbound event; an error marked
// errNotRecorded means the store could not record it and it should be
// tried again. fresh: see process.
func (g *Gateway) handleOnce(ctx context.Context, in *store.Inbound, fresh bool) error {
	addr, err := platform.ParseKey(in.AddressKey)
	if err != nil {
		g.log.Error("inbound event with a bad address", "key", in.AddressKey, "err", err)
		return nil
	}
	text := strings.TrimSpace(in.Text)
	if command.IsCommand(text) {
		// A command whose answer is stored ran before a stop or crash:
		// running it again would repeat what it did (a second /new, a
		// second handoff); its answer only needs sending.
		if _, err := g.st.DeliveryByKey(ctx, partKey(fmt.Sprintf("in:%d", in.ID), 0)); err == nil {
			if err := g.flush(ctx, addr); err != nil {
				g.log.Warn("send a command's stored answer", "to", addr.Key(), "err", err)
			}
			return nil
		} else if !errors.Is(err, store.ErrNotFound) {
			return notRecorded("look for a command's answer", err)
		}
		reply := g.command(ctx, addr, text)
		if reply != "" {
			return g.reply(ctx, addr, in, reply, "")
		}
		return nil
	}
	if text == "" {
		return nil
	}
	sess, newSession, err := g.sessionFor(ctx, addr)
	if err != nil {
		if err := notRecorded("find session", err); errors.Is(err, errNotRecorded) {
			return err
		}
		g.log.Error("find session", "at", addr.Key(), "err", err)
		return g.reply(ctx, addr, in, "Something went wrong finding this conversation's session: "+err.Error(), "")
	}
	if line, where, ok := g.notHereLine(ctx, sess, addr); ok && !g.arriving(ctx, sess, addr) {
		return g.park(ctx, addr, *in, sess, line, where)
	}
	if in.PlatformMsgID != "" && !fresh {
		// Stored by an earlier run or try that stopped mid-turn: never
		// store it twice; deliver the answer it got, or answer it now.
		prior, err := g.priorTurn(ctx, in.Platform, in.PlatformMsgID)
		if err != nil {
			return notRecorded("look for an earlier turn", err)
		}
		switch {
		case !prior.found:
		case prior.movedOn:
			return nil
		case prior.answer != "":
			g.takeOverStreamed(ctx, addr, fmt.Sprintf("in:%d", in.ID))
			return g.reply(ctx, addr, in, prior.answer, "")
		default:
			return g.turn(ctx, addr, in, prior.sessionID, store.Message{Platform: in.Platform}, "")
		}
	}
	var offer string // decided as the message arrives, sent at the end of its answer
	if newSession {
		offer = g.offerFor(ctx, addr, sess)
	}
	return g.turn(ctx, addr, in, sess.ID, store.Message{
		Role: store.RoleUser, Content: text, Platform: in.Platform, PlatformMsgID: in.PlatformMsgID,
	}, offer)
}

// prior is what an earlier run left of a turn whose input is stored.
type prior struct {
	found     bool
	sessionID string
	answer    string // the turn's final answer; "" if it did not finish
	movedOn   bool   // later input followed it: leave it be
}

// priorTurn finds the input stored under a platform message id and what
// followed it in its session.
func (g *Gateway) priorTurn(ctx context.Context, platformName, msgID string) (prior, error) {
	m, err := g.st.FindPlatformMessage(ctx, platformName, msgID)
	if errors.Is(err, store.ErrNotFound) {
		return prior{}, nil
	} else if err != nil {
		return prior{}, err
	}
	p := prior{found: true, sessionID: m.SessionID}
	msgs, err := g.st.Transcript(ctx, m.SessionID)
	if err != nil {
		return p, fmt.Errorf("load transcript: %w", err)
	}
	for _, later := range msgs {
		if later.Seq <= m.Seq {
			continue
		}
		switch {
		case later.Role == store.RoleUser:
			p.movedOn = true
			return p, nil
		case later.Role == store.RoleAssistant && len(later.ToolCalls) == 0 && later.Content != "" &&
			!strings.HasSuffix(later.Content, agent.InterruptedMarker):
			p.answer = later.Content
		}
	}
	return p, nil
}

// turn runs one agent turn in the session and delivers its answer to addr,
// ending with offer (if any). A turn the store could not record returns
// errNotRecorded, to be run again; the model's own failures are told to
// the person.
func (g *Gateway) turn(ctx context.Context, addr platform.Address, in *store.Inbound, sessionID string, input store.Message, offer string) error {
	res, err := g.runTurn(ctx, addr, sessionID, input, fmt.Sprintf("in:%d", in.ID))
	if err != nil && ctx.Err() != nil {
		// Stopping: the turn is suspended, not failed. The message stays
		// pending and its turn resumes at the next start.
		g.log.Info("turn suspended by the stop; it resumes at the next start", "session", sessionID, "err", err)
		return nil
	}
	if errors.Is(err, agent.ErrStore) {
		return notRecorded("run turn", err)
	}
	var moved *agent.MovedError
	if errors.As(err, &moved) {
		// A move of the session stopped it (a terminal or another chat
		// took it): what it wrote is in the session, stored once; this
		// place hears where it went, with the part it saw written.
		g.log.Info("turn stopped: its session moved", "session", sessionID, "to", moved.To)
		text := place.Stopped(g.holderName(moved.To))
		if res.Cut != "" {
			text = res.Cut + "\n\n" + text
		}
		return g.reply(ctx, addr, in, text, "")
	}
	if err != nil {
		g.log.Warn("turn failed", "session", sessionID, "err", err)
		text := "⚠️ " + turnError(err)
		if res.Text != "" {
			text = res.Text + "\n\n" + text
		}
		return g.reply(ctx, addr, in, text, offer)
	}
	return g.reply(ctx, addr, in, res.Text, offer)
}

// runTurn runs the agent with typing shown and the reply streamed where
// the platform can (its own Streamer, or edits), retrying while another
// turn holds the session. key is the outbox key the answer will be
// delivered under, which takes over the streamed messages.
func (g *Gateway) runTurn(ctx context.Context, addr platform.Address, sessionID string, input store.Message, key string) (agent.Result, error) {
	a := g.adapters[addr.Platform]
	done, err := g.working(ctx, addr, sessionID)
	if err != nil {
		return agent.Result{}, err
	}
	defer done()
	show := func(agent.Event) {}
	emit := func(ev agent.Event) {
		if ev.Kind == agent.EventStoreTrouble {
			g.log.Warn("the store could not record a turn; keeping it and trying again", "session", sessionID, "err", ev.Err)
			g.tellTrouble(ctx, addr, key, ev.Err)
			return
		}
		show(ev)
	}
	if s, ok := a.(platform.Streamer); ok {
		show = func(ev agent.Event) {
			if ev.Kind == agent.EventTextDelta {
				if err := s.Delta(ctx, addr, ev.Text); err != nil {
					g.log.Debug("stream delta", "err", err)
				}
			}
		}
	} else if es := g.streamEdits(ctx, a, addr, key, input.Role == ""); es != nil {
		show = es.event
		defer func() { g.noteStreamed(key, es.finish()) }()
	}
	for wait := 100 * time.Millisecond; ; wait = min(2*wait, 2*time.Second) {
		res, err := g.ag.Run(ctx, sessionID, input, emit)
		if !errors.Is(err, agent.ErrBusy) {
			return res, err
		}
		g.log.Debug("session busy outside the gateway's turns; waiting", "session", sessionID, "at", addr.Key())
		// Something outside the gateway's turns holds the session (an
		// /undo or /compress, or a terminal's turn a move is stopping):
		// wait for it rather than interleave. The input is in the inbox
		// meanwhile.
		select {
		case <-ctx.Done():
			return res, ctx.Err()
		case <-time.After(wait):
		}
	}
}

// working waits its turn in the session, then marks a turn of it as
// running at addr until done is called: the typing indicator shows there,
// and approvals the turn needs are asked there.
func (g *Gateway) working(ctx context.Context, addr platform.Address, sessionID string) (done func(), err error) {
	unlock, err := g.sessions.lock(ctx, sessionID)
	if err != nil {
		return nil, err
	}
	stopTyping := g.typing(ctx, g.adapters[addr.Platform], addr)
	g.mu.Lock()
	g.turnAddr[sessionID] = addr
	g.mu.Unlock()
	return func() {
		g.mu.Lock()
		delete(g.turnAddr, sessionID)
		g.mu.Unlock()
		stopTyping()
		unlock()
	}, nil
}

// typing shows the typing indicator every few seconds until stopped,
// from typingAfter on.
func (g *Gateway) typing(ctx context.Context, a platform.Adapter, addr platform.Address) (stop func()) {
	t, ok := a.(platform.Typer)
	if !ok || g.knownUnsupported(capTyping, addr) {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		select {
		case <-ctx.Done():
			return
		case <-time.After(typingAfter):
		}
		tick := time.NewTicker(typingEvery)
		defer tick.Stop()
		for {
			if err := t.Typing(ctx, addr); err != nil {
				if errors.Is(err, platform.ErrUnsupported) {
					g.noteUnsupported(capTyping, addr, err)
					return // no typing here; the turn goes on
				}
				if ctx.Err() != nil {
					return
				}
				g.log.Debug("typing indicator", "platform", addr.Platform, "err", err) // tried again at the next tick
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return func() { cancel(); <-done }
}

// sessionFor is the session bound to addr, or (fresh) a new one owned by
// the owner and bound there.
func (g *Gateway) sessionFor(ctx context.Context, addr platform.Address) (sess store.Session, fresh bool, err error) {
	s, err := g.st.BoundSession(ctx, addr.Key())
	if err == nil {
		if !s.Open() {
			if err := g.st.ReopenSession(ctx, s.ID); err != nil {
				return s, false, err
			}
		}
		return s, false, nil
	}
	if !errors.Is(err, store.ErrNotFound) {
		return store.Session{}, false, err
	}
	sess, err = g.newSession(ctx, addr)
	return sess, err == nil, err
}

func (g *Gateway) newSession(ctx context.Context, addr platform.Address) (store.Session, error) {
	s, err := g.st.CreateSession(ctx, store.Session{OwnerID: g.cfg.OwnerID, Platform: addr.Platform, Holder: addr.Key()})
	if err != nil {
		return s, fmt.Errorf("create session: %w", err)
	}
	if _, err := g.st.Bind(ctx, addr.Key(), s.ID); err != nil {
		return s, fmt.Errorf("bind %s: %w", addr.Key(), err)
	}
	return s, nil
}

// reply delivers text as the answer to inbound event in (idempotent per
// event), ending with offer (an offer to continue) unless it is "": one
// message, so a reply streamed by edits is edited into the answer and its
// offer rather than followed by a message of its own. It is stored with
// in marked done, in one write.
func (g *Gateway) reply(ctx context.Context, addr platform.Address, in *store.Inbound, text, offer string) error {
	if strings.TrimSpace(text) == "" {
		return nil
	}
	if offer != "" {
		text = strings.TrimRight(text, " \n") + "\n\n" + offer
	}
	err := g.deliverAll(ctx, addr, in, outgoing{key: fmt.Sprintf("in:%d", in.ID), text: text})
	if errors.Is(err, errNotRecorded) {
		return err // the reply is not stored: the turn is handled again
	}
	if err != nil {
		// Stored; sending failed and is retried in the background.
		g.log.Error("deliver reply", "to", addr.Key(), "err", err)
	}
	return nil
}

// turnError is a failed turn's error as a person should read it.
func turnError(err error) string {
	switch {
	case errors.Is(err, context.Canceled):
		return "The turn was stopped; what was said so far is kept."
	case errors.Is(err, agent.ErrMaxSteps):
		return "I stopped after too many steps without an answer. Say \"continue\" to let me go on."
	}
	return "The model call failed: " + err.Error() + "\nEverything said so far is kept; send your message again or /retry."
}
