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

// notHereLine is the one line a place answers with instead of a turn,
// the place it names (where the session is, or is going), and ok, when
// sess is held elsewhere or on its way out of addr.
func (r *router) notHereLine(ctx context.Context, sess store.Session, addr platform.Address) (line, where string, ok bool) {
	if sess.HeldElsewhere(addr.Key()) {
		return r.whereLine(sess), r.places.holderName(sess.Holder), true
	}
	if h, leaving := r.worker.leaving(ctx, sess, addr); leaving {
		return place.OnItsWay(r.places.placeName(h.Platform)), r.places.placeName(h.Platform), true
	}
	return "", "", false
}

// whereLine is the one line a place not holding sess answers with.
func (r *router) whereLine(sess store.Session) string {
	return place.Elsewhere(r.places.holderName(sess.Holder), sess.HeldSince, time.Now())
}

// park keeps a message that reached sess from a place not holding it (or
// that it is leaving) and tells that place, in line, where it is (where).
func (r *router) park(ctx context.Context, addr platform.Address, in store.Inbound, sess store.Session, line, where string) error {
	// Its own delivery key: the message's answer, once it runs, is "in:ID".
	told := outgoing{key: inKey(in.ID) + ":where", text: line, kind: store.DeliveryElsewhere, data: store.DeliveryData{Place: where}}
	if err := r.out.deliverAll(ctx, addr, nil, told); errors.Is(err, errNotRecorded) {
		return err
	} else if err != nil {
		r.log.Error("deliver where the conversation is", "to", addr.Key(), "err", err)
	}
	if err := r.st.ParkInbound(ctx, in.ID, sess.ID, addr.Key()); err != nil {
		return notRecorded("park message", err)
	}
	return nil
}

// continueHere is /continue typed in a chat: a handoff to this very
// place of the session bound here (or, where none is, of the owner's
// latest session), through the same worker as /handoff.
func (r *router) continueHere(ctx context.Context, addr platform.Address) string {
	sess, err := r.boundSession(ctx, addr)
	if h, ok := r.worker.leaving(ctx, sess, addr); err == nil && ok {
		// Asked to go to the terminal, not taken yet: it stays, and
		// what was typed here meanwhile runs now.
		if h.Platform == TerminalPlatform && r.worker.withdrawTerminal(ctx, sess.ID, "withdrawn by /continue in "+r.places.placeName(addr.Platform)) {
			r.worker.stayed(ctx, sess.ID) // addr holds it: what was typed here runs
			return fmt.Sprintf("%s stays here; the handoff to the terminal is withdrawn.", upperFirst(describe(sess)))
		}
		return "A handoff of this session is already under way."
	}
	if err != nil || !sess.HeldElsewhere(addr.Key()) {
		// Nothing here is held elsewhere: the session the owner was
		// working on elsewhere lately, as the continue-offer said.
		latest, lerr := r.latestElsewhere(ctx, addr)
		switch {
		case lerr == nil:
			sess = latest
		case err != nil:
			return err.Error()
		default:
			return "This conversation is here already."
		}
	}
	h, err := r.worker.requestTo(ctx, sess.ID, holderPlatform(sess, addr), addr)
	switch {
	case errors.Is(err, store.ErrHandoffInFlight):
		return "A handoff of this session is already under way."
	case err != nil:
		return "Cannot continue here: " + err.Error()
	}
	r.worker.tellFailure(addr, h)
	return fmt.Sprintf("Bringing %s here from %s…", describe(sess), r.places.holderName(sess.Holder))
}

// latestElsewhere is the owner's most recently active open session held
// somewhere other than addr, if it was active within OfferWithin.
func (r *router) latestElsewhere(ctx context.Context, addr platform.Address) (store.Session, error) {
	if r.cfg.offerWithin < 0 {
		return store.Session{}, store.ErrNotFound
	}
	ss, err := r.st.ListSessions(ctx, store.SessionFilter{OwnerID: r.cfg.ownerID, Limit: 10})
	if err != nil {
		return store.Session{}, err
	}
	for _, s := range ss {
		if time.Since(s.UpdatedAt) > r.cfg.offerWithin {
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
func (r *router) offerFor(ctx context.Context, addr platform.Address, here store.Session) string {
	s, err := r.latestElsewhere(ctx, addr)
	if err != nil || s.ID == here.ID {
		return ""
	}
	what := "a conversation"
	if s.Title != "" {
		what = "«" + s.Title + "»"
	}
	return fmt.Sprintf("You were working on %s in %s %s — /continue to pick it up here.", what, r.places.holderName(s.Holder), ago(s.UpdatedAt, time.Now()))
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

// upperFirst is s with its first letter capitalized.
func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// heldAt is ", in Telegram since 14:02" for a list of sessions.
func (r *router) heldAt(s store.Session) string {
	if s.Holder == "" {
		return ""
	}
	return fmt.Sprintf(", in %s since %s", r.places.holderName(s.Holder), place.Moment(s.HeldSince, time.Now()))
}

// where is /where typed in a chat.
func (r *router) where(ctx context.Context, addr platform.Address) string {
	sess, err := r.boundSession(ctx, addr)
	if err != nil {
		return err.Error()
	}
	if sess.HeldElsewhere(addr.Key()) {
		return r.whereLine(sess)
	}
	if h, ok := r.worker.leaving(ctx, sess, addr); ok {
		return place.Leaving(describe(sess), r.places.placeName(h.Platform))
	}
	return place.Here(describe(sess), sess.HeldSince, time.Now())
}

// whoami is /whoami typed in a chat: the owner's accounts.
func (r *router) whoami(ctx context.Context) string {
	configured := map[string][]string{}
	for p, ids := range r.cfg.owners {
		for id := range ids {
			configured[p] = append(configured[p], id)
		}
	}
	accts, err := owner.Accounts(ctx, r.st, r.cfg.ownerID, configured)
	if err != nil {
		return "Could not list your accounts: " + err.Error()
	}
	name := "the owner"
	if u, err := r.st.GetUser(ctx, r.cfg.ownerID); err == nil && u.Name != "" {
		name = u.Name
	}
	return owner.Describe(name, accts)
}
