package gateway

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/baton-agent/baton/internal/owner"
	"github.com/baton-agent/baton/internal/place"
	"github.com/baton-agent/baton/internal/platform"
	"github.com/baton-agent/baton/internal/store"
)

// A session is held in one place at a time (store.Session.Holder): only
// the holder runs turns. A message that reaches the session from anywhere
// else is parked, answered with where the conversation is, and carried
// along when /continue brings the session there.

// arriving reports whether sess is on its way to addr: a handoff there
// is under way, so addr is about to hold it and what is said there waits
// for its turn rather than being parked.
func (g *Gateway) arriving(ctx context.Context, sess store.Session, addr platform.Address) bool {
	h, err := g.st.HandoffState(ctx, sess.ID)
	return err == nil && (h.State == store.HandoffPending || h.State == store.HandoffRunning) && h.Destination == addr.Key()
}

// leaving reports whether a handoff of sess out of addr, the place
// holding it, is under way: h, bound elsewhere. addr runs no new turn
// meanwhile; what is said there is parked, as anywhere not holding it.
func (g *Gateway) leaving(ctx context.Context, sess store.Session, addr platform.Address) (h store.Handoff, ok bool) {
	if sess.Holder != addr.Key() {
		return h, false
	}
	h, err := g.st.HandoffState(ctx, sess.ID)
	live := err == nil && (h.State == store.HandoffPending || h.State == store.HandoffRunning)
	return h, live && h.Destination != addr.Key()
}

// notHereLine is the one line a place answers with instead of a turn,
// the place it names (where the session is, or is going), and ok, when
// sess is held elsewhere or on its way out of addr.
func (g *Gateway) notHereLine(ctx context.Context, sess store.Session, addr platform.Address) (line, where string, ok bool) {
	if sess.HeldElsewhere(addr.Key()) {
		return g.whereLine(sess), g.holderName(sess.Holder), true
	}
	if h, leaving := g.leaving(ctx, sess, addr); leaving {
		return place.OnItsWay(g.placeName(h.Platform)), g.placeName(h.Platform), true
	}
	return "", "", false
}

// whereLine is the one line a place not holding sess answers with.
func (g *Gateway) whereLine(sess store.Session) string {
	return place.Elsewhere(g.holderName(sess.Holder), sess.HeldSince, time.Now())
}

// holderName names the place an address key is, for people.
func (g *Gateway) holderName(key string) string {
	return place.NameOf(key, TerminalPlatform, g.cfg.Display)
}

// park keeps a message that reached sess from a place not holding it (or
// that it is leaving) and tells that place, in line, where it is (where).
func (g *Gateway) park(ctx context.Context, addr platform.Address, in store.Inbound, sess store.Session, line, where string) error {
	// Its own delivery key: the message's answer, once it runs, is "in:ID".
	told := outgoing{key: fmt.Sprintf("in:%d:where", in.ID), text: line, kind: store.DeliveryElsewhere, data: store.DeliveryData{Place: where}}
	if err := g.deliverAll(ctx, addr, nil, told); errors.Is(err, errNotRecorded) {
		return err
	} else if err != nil {
		g.log.Error("deliver where the conversation is", "to", addr.Key(), "err", err)
	}
	if err := g.st.ParkInbound(ctx, in.ID, sess.ID, addr.Key()); err != nil {
		return notRecorded("park message", err)
	}
	return nil
}

// continueHere is /continue typed in a chat: a handoff to this very
// place of the session bound here (or, where none is, of the owner's
// latest session), through the same worker as /handoff.
func (g *Gateway) continueHere(ctx context.Context, addr platform.Address) string {
	sess, err := g.boundSession(ctx, addr)
	if h, ok := g.leaving(ctx, sess, addr); err == nil && ok {
		// Asked to go to the terminal, not taken yet: it stays, and
		// what was typed here meanwhile runs now.
		if h.Platform == TerminalPlatform && g.withdrawTerminalHandoff(ctx, sess.ID, "withdrawn by /continue in "+g.placeName(addr.Platform)) {
			g.carryParked(ctx, addr)
			return fmt.Sprintf("%s stays here; the handoff to the terminal is withdrawn.", upperFirst(describe(sess)))
		}
		return "A handoff of this session is already under way."
	}
	if err != nil || !sess.HeldElsewhere(addr.Key()) {
		// Nothing here is held elsewhere: the session the owner was
		// working on elsewhere lately, as the continue-offer said.
		latest, lerr := g.latestElsewhere(ctx, addr)
		switch {
		case lerr == nil:
			sess = latest
		case err != nil:
			return err.Error()
		default:
			return "This conversation is here already."
		}
	}
	h, err := g.requestHandoffTo(ctx, sess.ID, holderPlatform(sess, addr), addr)
	switch {
	case errors.Is(err, store.ErrHandoffInFlight):
		return "A handoff of this session is already under way."
	case err != nil:
		return "Cannot continue here: " + err.Error()
	}
	g.tellFailure(addr, h)
	return fmt.Sprintf("Bringing %s here from %s…", describe(sess), g.holderName(sess.Holder))
}

// latestElsewhere is the owner's most recently active open session held
// somewhere other than addr, if it was active within OfferWithin.
func (g *Gateway) latestElsewhere(ctx context.Context, addr platform.Address) (store.Session, error) {
	if g.cfg.OfferWithin < 0 {
		return store.Session{}, store.ErrNotFound
	}
	ss, err := g.st.ListSessions(ctx, store.SessionFilter{OwnerID: g.cfg.OwnerID, Limit: 10})
	if err != nil {
		return store.Session{}, err
	}
	for _, s := range ss {
		if time.Since(s.UpdatedAt) > g.cfg.OfferWithin {
			break // most recent first: the rest are older still
		}
		if s.Open() && s.MessageCount > 0 && s.HeldElsewhere(addr.Key()) {
			return s, nil
		}
	}
	return store.Session{}, store.ErrNotFound
}

// offerFor is what follows the first answer in a place that held no
// session: the session the owner was working on elsewhere lately, to
// /continue here; "" for none. Only the owner reaches a turn, so only the
// owner is offered anything.
func (g *Gateway) offerFor(ctx context.Context, addr platform.Address, here store.Session) string {
	s, err := g.latestElsewhere(ctx, addr)
	if err != nil || s.ID == here.ID {
		return ""
	}
	what := "a conversation"
	if s.Title != "" {
		what = "«" + s.Title + "»"
	}
	return fmt.Sprintf("You were working on %s in %s %s — /continue to pick it up here.", what, g.holderName(s.Holder), ago(s.UpdatedAt, time.Now()))
}

// ago is how long before now t was, as people say it.
func ago(t, now time.Time) string {
	d := now.Sub(t)
	switch {
	case d < time.Minute:
		return "just now"
	case d < 2*time.Minute:
		return "a minute ago"
	case d < time.Hour:
		return fmt.Sprintf("%d minutes ago", int(d.Minutes()))
	case d < 2*time.Hour:
		return "an hour ago"
	}
	return fmt.Sprintf("%d hours ago", int(d.Hours()))
}

// holderPlatform is the platform of the place holding sess, the origin
// of a move to addr ("" holder: addr's own).
func holderPlatform(sess store.Session, addr platform.Address) string {
	if p, _, ok := strings.Cut(sess.Holder, ":"); ok && p != "" {
		return p
	}
	return addr.Platform
}

// requestHandoffTo records a handoff of sessionID from the platform from
// (where it is held) to addr itself and wakes the worker.
func (g *Gateway) requestHandoffTo(ctx context.Context, sessionID, from string, addr platform.Address) (store.Handoff, error) {
	if g.stopping.Load() {
		return store.Handoff{}, fmt.Errorf("%w: try again once it is back (`baton gateway`)", ErrStopping)
	}
	h, err := g.st.RequestHandoffTo(ctx, sessionID, from, addr.Platform, addr.Key())
	if err != nil {
		return h, fmt.Errorf("handoff of session %s: %w", sessionID, err)
	}
	g.Kick()
	return h, nil
}

// moved runs once a handoff completed: the place that held the session
// before is told where it went, and what was parked at the destination
// runs now, in order.
func (g *Gateway) moved(ctx context.Context, h store.Handoff, before string, dest platform.Address) {
	g.mu.Lock()
	toldByOutcome := g.outcomeTo[h.SessionID] == before
	g.mu.Unlock()
	if before != "" && before != dest.Key() && !toldByOutcome {
		// A chat that asked to move is told by tellOutcome instead.
		if old, err := platform.ParseKey(before); err == nil && g.adapters[old.Platform] != nil {
			left := outgoing{key: fmt.Sprintf("handoff:%d:left", h.ID), text: place.Left(g.placeName(dest.Platform)), kind: store.DeliveryNotice}
			if err := g.deliverAll(ctx, old, nil, left); err != nil {
				g.log.Warn("tell the place a session left", "at", before, "err", err)
			}
		}
	}
	g.carryParked(ctx, dest)
}

// carryParked runs what was parked at dest (its session is held there
// now), in order, through its mailbox.
func (g *Gateway) carryParked(ctx context.Context, dest platform.Address) {
	parked, err := g.st.Parked(ctx, dest.Key())
	if err != nil {
		g.log.Warn("list parked messages", "at", dest.Key(), "err", err)
		return
	}
	for _, in := range parked {
		g.boxes.push(in.AddressKey, func() {
			g.process(g.work(), in, false)
			if err := g.st.Unpark(g.work(), in.ID); err != nil {
				g.log.Warn("unpark", "id", in.ID, "err", err)
			}
		})
	}
}

// sendStoredNotices sends the notices another process stored for a chat,
// which no turn of this gateway's would otherwise flush: a terminal that
// took a session from a chat ("… continues in the terminal now"), or
// `baton pairing approve` welcoming the person approved. Those processes
// kick the gateway after storing; the worker's tick is the fallback.
func (g *Gateway) sendStoredNotices(ctx context.Context) {
	pending, err := g.st.PendingDeliveries(ctx, "", 0)
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
		if addr, err := platform.ParseKey(d.AddressKey); err == nil && g.isLive(addr.Platform) {
			if err := g.flush(ctx, addr); err != nil {
				g.log.Warn("send a notice", "to", d.AddressKey, "err", err)
			}
		}
	}
}

// upperFirst is s with its first letter capitalized.
func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// heldAt is ", in Telegram since 14:02" for a list of sessions.
func (g *Gateway) heldAt(s store.Session) string {
	if s.Holder == "" {
		return ""
	}
	return fmt.Sprintf(", in %s since %s", g.holderName(s.Holder), place.Moment(s.HeldSince, time.Now()))
}

// where is /where typed in a chat.
func (g *Gateway) where(ctx context.Context, addr platform.Address) string {
	sess, err := g.boundSession(ctx, addr)
	if err != nil {
		return err.Error()
	}
	if sess.HeldElsewhere(addr.Key()) {
		return g.whereLine(sess)
	}
	if h, ok := g.leaving(ctx, sess, addr); ok {
		return place.Leaving(describe(sess), g.placeName(h.Platform))
	}
	return place.Here(describe(sess), sess.HeldSince, time.Now())
}

// linkFor is an address people can open for the place key names, where
// its platform gives one.
func (g *Gateway) linkFor(key string) string {
	addr, err := platform.ParseKey(key)
	if err != nil {
		return ""
	}
	if l, ok := g.adapters[addr.Platform].(platform.Linker); ok {
		return l.Link(addr)
	}
	return ""
}

// whoami is /whoami typed in a chat: the owner's accounts.
func (g *Gateway) whoami(ctx context.Context) string {
	configured := map[string][]string{}
	for p, ids := range g.owners {
		for id := range ids {
			configured[p] = append(configured[p], id)
		}
	}
	accts, err := owner.Accounts(ctx, g.st, g.cfg.OwnerID, configured)
	if err != nil {
		return "Could not list your accounts: " + err.Error()
	}
	name := "the owner"
	if u, err := g.st.GetUser(ctx, g.cfg.OwnerID); err == nil && u.Name != "" {
		name = u.Name
	}
	return owner.Describe(name, accts)
}
