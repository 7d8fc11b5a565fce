package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/baton-agent/baton/internal/gateway/control"
	"github.com/baton-agent/baton/internal/place"
	"github.com/baton-agent/baton/internal/store"
)

// A terminal waiting at its prompt is told at once when its session
// moves (a chat or the page took it with /continue, a handoff of it began
// or ended elsewhere), not at the next thing typed: it reads the
// session's holder and newest handoff from the store every WatchEvery,
// two indexed reads, and says what changed above the prompt.

// DefaultWatchEvery is how often an idle terminal reads where its
// session is.
const DefaultWatchEvery = 250 * time.Millisecond

// Notifier is a LineReader that can show a line while a prompt waits,
// redrawing the prompt and what is typed after it.
type Notifier interface {
	Notify(text string)
}

// whereabouts is what the watcher compares: where the session is held
// and its newest live handoff.
type whereabouts struct {
	sessionID string
	holder    string
	heldSince time.Time
	handoff   int64 // a pending or running handoff's id; 0 for none
	mine      bool  // this terminal had the session open and held it
}

// whereaboutsOf reads where s is now, as seen from this terminal.
func (r *REPL) whereaboutsOf(ctx context.Context, s store.Session) whereabouts {
	w := whereabouts{sessionID: s.ID, holder: s.Holder, heldSince: s.HeldSince}
	if h, err := r.app.Store.HandoffState(ctx, s.ID); err == nil && (h.State == store.HandoffPending || h.State == store.HandoffRunning) {
		w.handoff = h.ID
	}
	return w
}

// snapshot is where the current session is now, as this terminal sees it.
func (r *REPL) snapshot(ctx context.Context) whereabouts {
	if r.session.ID == "" {
		return whereabouts{}
	}
	w := r.whereaboutsOf(ctx, r.session)
	w.mine = r.lock != nil && r.lock.sessionID == r.session.ID && !r.session.HeldElsewhere(r.app.TerminalKey())
	return w
}

// told records that the person has just been shown where the session
// is (or this terminal moved it itself): nothing to tell of it later.
func (r *REPL) told(ctx context.Context) {
	w := r.snapshot(ctx)
	r.mu.Lock()
	r.known = w
	r.mu.Unlock()
}

// idle runs as the prompt is shown (the REPL just refreshed the
// session): a move since the person last heard of it is told now, and
// the watcher reports the next ones while the prompt waits.
func (r *REPL) idle(ctx context.Context) {
	now := r.snapshot(ctx)
	var line string
	r.mu.Lock()
	if r.known.sessionID != "" && r.known.sessionID == now.sessionID && r.known.differs(now) {
		line = r.moved(ctx, r.session, r.known, now)
	}
	r.known, r.atPrompt = now, true
	waiting := r.toldNext
	r.toldNext = ""
	r.mu.Unlock()
	if line != "" {
		r.out.Printf("%s\n", line)
	}
	if waiting != "" {
		r.out.Printf("%s\n", waiting)
	}
}

// busy ends idle: what follows is the REPL's own doing.
func (r *REPL) busy() {
	r.mu.Lock()
	r.atPrompt = false
	r.mu.Unlock()
}

// differs reports whether the session moved between w and now.
func (w whereabouts) differs(now whereabouts) bool {
	return w.holder != now.holder || !w.heldSince.Equal(now.heldSince) || w.handoff != now.handoff
}

// watch runs until ctx ends, telling the person at the prompt when the
// session moved. With a store that signals (one shared with other
// machines), a move's signal (from listen) wakes it, and the reading
// every WatchEvery (by default gateway.poll_every) is the fallback.
func (r *REPL) watch(ctx context.Context, signals <-chan store.Signal) {
	every := r.cfg.WatchEvery
	switch {
	case every > 0:
	case signals != nil && r.app.Config.Gateway.PollEvery > 0:
		every = r.app.Config.Gateway.PollEvery
	case signals != nil:
		every = 2 * time.Second
	default:
		every = DefaultWatchEvery
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case s, ok := <-signals:
			if !ok {
				signals = nil
				continue
			}
			if s.Topic == control.TopicTerminal && !s.Missed {
				r.waitingHere(ctx, s.Payload)
			}
		}
		r.mu.Lock()
		was, idle := r.known, r.atPrompt
		r.mu.Unlock()
		if !idle || was.sessionID == "" {
			continue
		}
		s, err := r.app.Store.GetSession(ctx, was.sessionID)
		if err != nil {
			continue
		}
		now := r.whereaboutsOf(ctx, s)
		now.mine = was.mine && !s.HeldElsewhere(r.app.TerminalKey())
		if !was.differs(now) {
			continue
		}
		line := r.moved(ctx, s, was, now)
		r.mu.Lock()
		if r.atPrompt && r.known == was {
			// Still at the same prompt: say it, once.
			r.known = now
			if line != "" {
				r.notify(line)
			}
		}
		r.mu.Unlock()
	}
}

// moved is the line telling this terminal how its session moved from
// was to now; "" when nothing it needs to hear changed.
func (r *REPL) moved(ctx context.Context, s store.Session, was, now whereabouts) string {
	here := r.app.TerminalKey()
	switch {
	case now.holder != was.holder || !now.heldSince.Equal(was.heldSince):
		switch {
		case was.mine && s.HeldElsewhere(here):
			return place.Left(placeOf(s.Holder))
		case !s.HeldElsewhere(here):
			// Another terminal took it (this one would have said so itself).
			return "This conversation is in another terminal now; here it is read-only."
		}
		return whereLine(s)
	case now.handoff != 0 && now.handoff != was.handoff:
		h, err := r.app.Store.GetHandoff(ctx, now.handoff)
		if err != nil {
			return ""
		}
		if h.Platform == Platform {
			return place.Leaving(describe(s), placeOf(Platform+":")) + " /continue picks it up here."
		}
		return place.Leaving(describe(s), placeOf(h.Platform+":"))
	}
	return ""
}

// notify shows line above the prompt; called with r.mu held.
func (r *REPL) notify(line string) {
	if n, ok := r.in.(Notifier); ok {
		n.Notify(line)
		return
	}
	r.out.Printf("\n%s\n", line)
}

// listen returns the signals that a session moved or was handed off to
// the terminal, from any machine sharing the store; nil when the store
// carries none (or listening failed: the reading every WatchEvery stays).
func (r *REPL) listen(ctx context.Context) <-chan store.Signal {
	sig, ok := control.SignalsOf(r.app.Store)
	if !ok {
		return nil
	}
	ch, err := sig.Listen(ctx, control.TopicProgress, control.TopicTerminal)
	if err != nil {
		return nil
	}
	return ch
}

// waitingHere tells the person at the prompt that another of their
// sessions was just handed off to the terminal (/handoff cli in a chat,
// on whichever machine runs the gateway), and how to take it. One on
// the current session is told by moved.
func (r *REPL) waitingHere(ctx context.Context, sessionID string) {
	r.mu.Lock()
	current := r.known.sessionID
	r.mu.Unlock()
	if sessionID == "" || sessionID == current {
		return
	}
	h, err := r.app.Store.HandoffState(ctx, sessionID)
	if err != nil || h.State != store.HandoffPending || h.Platform != Platform {
		return
	}
	s, err := r.app.Store.GetSession(ctx, sessionID)
	if err != nil || s.OwnerID != r.app.Owner.ID {
		return
	}
	from := "a chat"
	if h.FromPlatform != "" {
		from = placeOf(h.FromPlatform + ":")
	}
	line := fmt.Sprintf("Waiting for you here: %s, handed off from %s. /resume %s continues it here.", describe(s), from, short(s.ID))
	r.mu.Lock()
	if r.atPrompt {
		r.notify(line)
	} else {
		r.toldNext = line // busy: said at the next prompt
	}
	r.mu.Unlock()
}
