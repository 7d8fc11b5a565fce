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
	"github.com/baton-agent/baton/internal/plural"
	"github.com/baton-agent/baton/internal/retry"
	"github.com/baton-agent/baton/internal/store"
)

// A message's path through the router, top to bottom: an adapter hands it
// to handle, which stores it and queues it on its conversation's mailbox;
// process runs it there (again while the store cannot record it);
// handleOnce decides what it is — a command, a message for a session held
// elsewhere (parked), or a turn; turn runs the agent; reply stores the
// answer in the outbox, which sends it.

// handle is every adapter's Receive: it authorizes the event, stores it in
// the inbox (deduplicating redeliveries) and queues it on its
// conversation's mailbox. It returns nil only once the event is stored or
// deliberately dropped, so the adapter may acknowledge it.
func (r *router) handle(ctx context.Context, ev platform.Event) error {
	ok, err := r.authorized(ctx, ev)
	if err != nil {
		return fmt.Errorf("authorize %s sender %s: %w", ev.At.Platform, ev.SenderID, err)
	}
	if !ok {
		r.stranger(ctx, ev)
		return nil
	}
	// Approval answers bypass the mailbox: the turn waiting for them is
	// what occupies it.
	if r.approvals.answer(ev) {
		return nil
	}
	files, refused, err := r.keepFiles(ctx, ev)
	if err != nil {
		// Not acknowledged: the service hands the message over again.
		return fmt.Errorf("keep the files of %s message %s: %w", ev.At.Platform, ev.ID, err)
	}
	if refused != "" {
		r.out.sendNow(ctx, ev.At, refused)
	}
	if strings.TrimSpace(ev.Text) == "" && len(files) == 0 && len(ev.Attachments) > 0 {
		return nil // nothing of it could be kept; the person was told why
	}
	// Claimed by the replica that heard it, which handles it.
	by, until := r.places.rep.claim()
	in, isNew, err := r.st.AddInbound(ctx, store.Inbound{
		ClaimedBy:     by,
		ClaimedUntil:  until,
		Attachments:   files,
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
		r.log.Debug("duplicate inbound message", "platform", ev.At.Platform, "id", ev.ID)
		return nil
	}
	// Bounded per person: a runaway script or a leaked account cannot
	// flood the agent (and the owner's model bill). Counted after the
	// duplicate check, so that a client sending again what was not
	// acknowledged (a page after a reconnect) spends nothing; refused
	// messages are kept, marked done, and not answered.
	if !r.senders.take(ev.At.Platform+"/"+ev.SenderID, r.cfg.rate, time.Now()) {
		r.log.Warn("message refused: too fast", "platform", ev.At.Platform, "sender_id", ev.SenderID)
		if err := r.st.MarkInboundDone(ctx, in.ID); err != nil {
			return fmt.Errorf("mark refused %s message %s done: %w", ev.At.Platform, ev.ID, err)
		}
		r.out.sendNow(ctx, ev.At, tooFast(r.cfg.rate))
		return nil
	}
	if r.life.isStopping() {
		// Kept for the next start; the grace period is for the turns
		// already running.
		r.log.Info("message kept for the next start: the gateway is stopping", "at", in.AddressKey)
		r.out.sendNow(ctx, ev.At, "baton is restarting. Your message is kept and will be answered when it is back.")
		return nil
	}
	// Handled in the gateway's work context, not the adapter's: a page
	// that disconnects does not cancel its turn, a shutdown past its grace
	// period does.
	r.places.rep.hold(in.ID)
	r.boxes.push(in.AddressKey, func() {
		defer r.places.rep.drop(in.ID)
		r.process(r.life.work(), ev.At, in, true)
	})
	return nil
}

// process handles one stored inbound event in its mailbox. When the store
// cannot record its turn or reply, the person is told once, plainly, and
// the event is handled again under the Rerecord policy, holding its
// conversation's later messages back so that order is kept; it is marked
// done only once handled. fresh says this run stored the event just now
// (AddInbound found it new), so no earlier try can have recorded a turn
// for it. addr is where it was said (in.AddressKey, parsed).
func (r *router) process(ctx context.Context, addr platform.Address, in store.Inbound, fresh bool) {
	key := inKey(in.ID)
	defer r.turns.forgetTrouble(key)
	// A parked event is done as stored (it waits in parked, not in the
	// queue), and it is this replica's once its conversation is held here.
	if in.DoneAt.IsZero() && !r.places.rep.stillMine(ctx, in.ID) {
		r.log.Info("another replica handles this message now", "at", in.AddressKey, "id", in.ID)
		return
	}
	err := retry.Do(ctx, r.cfg.rerecord, func(ctx context.Context) error {
		err := r.handleOnce(ctx, addr, &in, fresh)
		fresh = false // a failed try may have recorded part of the turn
		if err != nil && !errors.Is(err, errNotRecorded) {
			r.log.Error("handle message", "at", in.AddressKey, "err", err)
			return nil // not the store's passing trouble: retrying will not help
		}
		return err
	}, func(err error, wait time.Duration) {
		r.log.Warn("the store could not record a message's turn; trying again", "at", in.AddressKey, "in", wait.Round(time.Millisecond), "err", err)
		r.turns.tellTrouble(ctx, addr, key, err)
	})
	if err != nil || ctx.Err() != nil {
		return // stopped mid-way: handled again at the next start
	}
	if !in.DoneAt.IsZero() {
		return // marked done with its answer (reply)
	}
	_ = retry.Do(ctx, r.cfg.rerecord, func(ctx context.Context) error {
		wctx, cancel := context.WithTimeout(ctx, storeTimeout)
		defer cancel()
		return r.st.MarkInboundDone(wctx, in.ID)
	}, func(err error, _ time.Duration) {
		r.log.Warn("mark inbound done", "id", in.ID, "err", err)
	})
}

// handleOnce is one try at handling an inbound event; an error marked
// errNotRecorded means the store could not record it and it should be
// tried again. fresh: see process.
func (r *router) handleOnce(ctx context.Context, addr platform.Address, in *store.Inbound, fresh bool) error {
	text := strings.TrimSpace(in.Text)
	if command.IsCommand(text) {
		// A command whose answer is stored ran before a stop or crash:
		// running it again would repeat what it did (a second /new, a
		// second handoff); its answer only needs sending.
		if _, err := r.st.DeliveryByKey(ctx, partKey(inKey(in.ID), 0)); err == nil {
			if err := r.out.flush(ctx, addr); err != nil {
				r.log.Warn("send a command's stored answer", "to", addr.Key(), "err", err)
			}
			return nil
		} else if !errors.Is(err, store.ErrNotFound) {
			return notRecorded("look for a command's answer", err)
		}
		reply := r.command(ctx, addr, text)
		if reply != "" {
			return r.reply(ctx, addr, in, reply, "")
		}
		return nil
	}
	if text == "" && len(in.Attachments) == 0 {
		return nil
	}
	sess, newSession, err := r.sessionFor(ctx, addr)
	if err != nil {
		if err := notRecorded("find session", err); errors.Is(err, errNotRecorded) {
			return err
		}
		r.log.Error("find session", "at", addr.Key(), "err", err)
		return r.reply(ctx, addr, in, "Something went wrong finding this conversation's session: "+err.Error(), "")
	}
	if _, _, ok := r.notHereLine(ctx, sess, addr); ok && !r.worker.arriving(ctx, sess, addr) {
		// Read the session again, after the handoff state: a handoff to
		// here that completed since sess was read moved the holder here,
		// and what was said is this place's to answer.
		if now, err := r.st.GetSession(ctx, sess.ID); err == nil {
			sess = now
		}
		if line, where, ok := r.notHereLine(ctx, sess, addr); ok {
			return r.park(ctx, addr, *in, sess, line, where)
		}
	}
	if in.PlatformMsgID != "" && !fresh {
		// Stored by an earlier run or try that stopped mid-turn: never
		// store it twice; deliver the answer it got, or answer it now.
		prior, err := r.turns.prior(ctx, in.Platform, in.PlatformMsgID)
		if err != nil {
			return notRecorded("look for an earlier turn", err)
		}
		switch {
		case !prior.found:
		case prior.movedOn:
			return nil
		case prior.answer != "":
			r.out.takeOverStreamed(ctx, addr, inKey(in.ID))
			return r.reply(ctx, addr, in, prior.answer, "", prior.files...)
		default:
			return r.turn(ctx, addr, in, prior.sessionID, store.Message{Platform: in.Platform}, "")
		}
	}
	var offer string // decided as the message arrives, sent at the end of its answer
	if newSession {
		offer = r.offerFor(ctx, addr, sess)
	}
	files := r.hear(ctx, addr, sess.ID, in.Attachments)
	return r.turn(ctx, addr, in, sess.ID, store.Message{
		Role: store.RoleUser, Content: text, Attachments: files, Platform: in.Platform, PlatformMsgID: in.PlatformMsgID,
	}, offer)
}

// turn runs one agent turn in the session and delivers its answer to addr,
// ending with offer (if any). A turn the store could not record returns
// errNotRecorded, to be run again; the model's own failures are told to
// the person.
func (r *router) turn(ctx context.Context, addr platform.Address, in *store.Inbound, sessionID string, input store.Message, offer string) error {
	res, err := r.turns.run(ctx, addr, sessionID, input, inKey(in.ID))
	if err != nil && ctx.Err() != nil {
		// Stopping: the turn is suspended, not failed. The message stays
		// pending and its turn resumes at the next start.
		r.log.Info("turn suspended by the stop; it resumes at the next start", "session", sessionID, "err", err)
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
		r.log.Info("turn stopped: its session moved", "session", sessionID, "to", moved.To)
		text := place.Stopped(r.places.holderName(moved.To))
		if res.Cut != "" {
			text = res.Cut + "\n\n" + text
		}
		return r.reply(ctx, addr, in, text, "", res.Files...)
	}
	if err != nil {
		r.log.Warn("turn failed", "session", sessionID, "err", err)
		text := "⚠️ " + turnError(err)
		if res.Text != "" {
			text = res.Text + "\n\n" + text
		}
		return r.reply(ctx, addr, in, text, offer, res.Files...)
	}
	text := res.Text
	if res.Notice != "" {
		text = res.Notice + "\n\n" + text
	}
	files := res.Files
	if spoken, ok := r.speak(ctx, addr, sessionID, res.Text); ok {
		files = append(files, agent.OutFile{Attachment: spoken})
	}
	return r.reply(ctx, addr, in, text, offer, files...)
}

// reply delivers text as the answer to inbound event in (idempotent per
// event), ending with offer (an offer to continue) unless it is "": one
// message, so a reply streamed by edits is edited into the answer and its
// offer rather than followed by a message of its own. It is stored with
// in marked done, in one write. files, the turn's tools gave to send, go
// first, each a message of its own.
func (r *router) reply(ctx context.Context, addr platform.Address, in *store.Inbound, text, offer string, files ...agent.OutFile) error {
	if strings.TrimSpace(text) == "" && len(files) == 0 {
		return nil
	}
	if offer != "" {
		text = strings.TrimRight(text, " \n") + "\n\n" + offer
	}
	msgs := make([]outgoing, 0, len(files)+1)
	var spoken []outgoing // a spoken answer follows its text
	for i, f := range files {
		m := outgoing{key: fileKey(inKey(in.ID), i), text: f.Caption, files: []store.Attachment{f.Attachment}}
		if f.Voice {
			spoken = append(spoken, m)
			continue
		}
		msgs = append(msgs, m)
	}
	if strings.TrimSpace(text) != "" {
		msgs = append(msgs, outgoing{key: inKey(in.ID), text: text})
	}
	msgs = append(msgs, spoken...)
	err := r.out.deliverAll(ctx, addr, in, msgs...)
	if errors.Is(err, errNotRecorded) {
		return err // the reply is not stored: the turn is handled again
	}
	if err != nil {
		// Stored; sending failed and is retried in the background.
		r.log.Error("deliver reply", "to", addr.Key(), "err", err)
	}
	return nil
}

// recoverPage is how many pending inbound events recover reads at once.
const recoverPage = 500

// recover resumes what a previous run left: every inbound event stored but
// not handled, page by page, in the order stored. Among replicas it is
// what no live replica claims (takeOver).
func (r *router) recover(ctx context.Context) {
	if r.places.rep != nil {
		r.takeOver(ctx)
		return
	}
	var after int64
	for {
		pending, err := r.st.PendingInbound(ctx, after, recoverPage)
		if err != nil {
			r.log.Error("load pending inbound events", "err", err)
			return
		}
		for _, in := range pending {
			if in.Platform == TerminalPlatform {
				// Kept by a terminal (parked as it is stored): the
				// terminal's to answer, never a chat's.
				continue
			}
			if addr, ok := r.stored(ctx, in); ok {
				r.boxes.push(in.AddressKey, func() { r.process(ctx, addr, in, false) })
			}
		}
		if len(pending) < recoverPage {
			break
		}
		after = pending[len(pending)-1].ID
	}
	// Unsent replies are sent as each platform becomes live (runAdapter).
}

// takeOver claims the inbound events no live replica holds (none claimed
// them, or the replica that did stopped renewing its claim) and queues
// them, in the order stored. The heartbeat runs it, so what a dead
// replica was handling is handled within a lease. Only the platforms
// read here are taken: a conversation on a platform one replica leads
// is the leader's alone, so what it hears next waits behind what it took
// over (Gateway.lead).
func (r *router) takeOver(ctx context.Context) {
	var here []string
	for _, name := range r.places.names() {
		if r.places.rep.runsHere(name) {
			here = append(here, name)
		}
	}
	if len(here) == 0 {
		return
	}
	for {
		claimed, err := r.st.ClaimInbound(ctx, r.places.rep.me.ID, r.places.rep.ttl, recoverPage, here...)
		if err != nil {
			if ctx.Err() == nil {
				r.log.Error("claim pending inbound events", "err", err)
			}
			return
		}
		for _, in := range claimed {
			if in.Platform == TerminalPlatform {
				continue // a terminal's, never a chat's (see recover)
			}
			if !r.places.rep.hold(in.ID) {
				continue // queued here already; its claim is renewed again
			}
			if addr, ok := r.stored(ctx, in); ok {
				r.log.Info("taking over a message no live replica handles", "at", in.AddressKey, "id", in.ID)
				r.boxes.push(in.AddressKey, func() {
					defer r.places.rep.drop(in.ID)
					r.process(ctx, addr, in, false)
				})
			} else {
				r.places.rep.drop(in.ID)
			}
		}
		if len(claimed) < recoverPage {
			return
		}
	}
}

// takeParked runs what was parked at dest (its session is held there
// now), in order, through its mailbox.
func (r *router) takeParked(ctx context.Context, dest platform.Address) {
	parked, err := r.st.Parked(ctx, dest.Key())
	if err != nil {
		r.log.Warn("list parked messages", "at", dest.Key(), "err", err)
		return
	}
	for _, in := range parked {
		addr, ok := r.stored(ctx, in)
		if !ok {
			continue
		}
		r.boxes.push(in.AddressKey, func() {
			r.process(r.life.work(), addr, in, false)
			if err := r.st.Unpark(r.life.work(), in.ID); err != nil {
				r.log.Warn("unpark", "id", in.ID, "err", err)
			}
		})
	}
}

// stored is where an inbound event read back from the store was said; ok
// is false for an address no adapter could have made: it is logged and
// marked done, as nothing can answer it.
func (r *router) stored(ctx context.Context, in store.Inbound) (platform.Address, bool) {
	addr, err := platform.ParseKey(in.AddressKey)
	if err != nil {
		r.log.Error("inbound event with a bad address; dropped", "key", in.AddressKey, "err", err)
		if err := r.st.MarkInboundDone(ctx, in.ID); err != nil {
			r.log.Warn("mark inbound done", "id", in.ID, "err", err)
		}
		return addr, false
	}
	return addr, true
}

// fileWait bounds the download of one file from its service.
const fileWait = 2 * time.Minute

// keepFiles reads the files that came with ev from their service into
// the store, before the event is stored and acknowledged. A file the
// service's or the store's bound refuses is left out, and refused says
// why in one line for the person; any other failure is returned, so the
// event is not acknowledged and comes again.
func (r *router) keepFiles(ctx context.Context, ev platform.Event) (kept []store.Attachment, refused string, err error) {
	if len(ev.Attachments) == 0 {
		return nil, "", nil
	}
	var why []string
	used, err := r.sessionFiles(ctx, ev.At)
	if err != nil {
		return nil, "", err
	}
	for _, f := range ev.Attachments {
		name := f.Name
		if name == "" {
			name = string(f.Kind) // a photo or a voice note comes without one
		}
		if f.Size > 0 && used+f.Size > r.cfg.maxFiles {
			why = append(why, sessionFull(name, r.cfg.maxFiles))
			continue
		}
		a, err := r.keepFile(ctx, f, name)
		switch {
		case errors.Is(err, platform.ErrTooLarge) || errors.Is(err, store.ErrFileTooLarge):
			r.log.Info("a file was refused", "platform", ev.At.Platform, "name", name, "err", err)
			why = append(why, err.Error())
		case err != nil:
			return nil, "", err
		case used+a.Size > r.cfg.maxFiles && a.Size > 0:
			// Its size was not told before: kept bytes no message names
			// are swept later.
			why = append(why, sessionFull(name, r.cfg.maxFiles))
		default:
			used += a.Size
			a.Voice = f.Kind == platform.KindVoice
			kept = append(kept, a)
		}
	}
	if len(why) > 0 {
		refused = "Not kept: " + strings.Join(why, "; ") + "."
	}
	return kept, refused, nil
}

// sessionFiles is the bytes of the files the session bound at addr
// carries (0 for none bound yet), each file once.
func (r *router) sessionFiles(ctx context.Context, addr platform.Address) (int64, error) {
	s, err := r.st.BoundSession(ctx, addr.Key())
	if errors.Is(err, store.ErrNotFound) {
		return 0, nil
	} else if err != nil {
		return 0, fmt.Errorf("load the session at %s: %w", addr.Key(), err)
	}
	msgs, err := r.st.Transcript(ctx, s.ID)
	if err != nil {
		return 0, fmt.Errorf("load the transcript of %s: %w", s.ID, err)
	}
	var n int64
	seen := map[string]bool{}
	for _, m := range msgs {
		for _, a := range m.Attachments {
			if !seen[a.SHA256] {
				seen[a.SHA256] = true
				n += a.Size
			}
		}
	}
	return n, nil
}

// sessionFull is the refusal of a file past a conversation's bound.
func sessionFull(name string, bound int64) string {
	return fmt.Sprintf("%s would take this conversation's files past their %s bound (files.max_session_bytes); /new starts a conversation with room", name, plural.Size(bound))
}

func (r *router) keepFile(ctx context.Context, f platform.Attachment, name string) (store.Attachment, error) {
	ctx, cancel := context.WithTimeout(ctx, fileWait)
	defer cancel()
	rc, err := f.Open(ctx)
	if err != nil {
		return store.Attachment{}, fmt.Errorf("download %s: %w", name, err)
	}
	defer rc.Close()
	a, err := r.st.PutFile(ctx, rc, name)
	if err != nil {
		return store.Attachment{}, fmt.Errorf("store %s: %w", name, err)
	}
	return a, nil
}
