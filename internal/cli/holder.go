package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/baton-agent/baton/internal/app"
	"github.com/baton-agent/baton/internal/gateway/control"
	"github.com/baton-agent/baton/internal/place"
	"github.com/baton-agent/baton/internal/platform"
	"github.com/baton-agent/baton/internal/platform/all"
	"github.com/baton-agent/baton/internal/store"
)

// A session is held in one place at a time (store.Session.Holder); the
// terminal runs turns only in sessions it holds. What is typed into a
// session held elsewhere runs no turn: it waits here, and /continue (a
// handoff to the terminal) brings the session and then answers it.

// ErrHeldElsewhere is returned by Once for a session another place holds.
var ErrHeldElsewhere = errors.New("the session is held elsewhere")

// placeOf names the place an address key is, for people (place.NameOf,
// with the platforms' display names).
func placeOf(key string) string {
	display := map[string]string{}
	for _, s := range all.Specs() {
		display[s.Name] = s.Display
	}
	return place.NameOf(key, Platform, display)
}

// whereLine says where s is held.
func whereLine(s store.Session) string {
	return place.Elsewhere(placeOf(s.Holder), s.HeldSince, time.Now())
}

// refresh reloads the current session (another place may have taken it).
func (r *REPL) refresh(ctx context.Context) {
	if r.session.ID == "" {
		return
	}
	if s, err := r.app.Store.GetSession(ctx, r.session.ID); err == nil {
		r.session = s
	}
}

// notHere reports whether the current session runs no turn here: held
// elsewhere, or on its way out of the terminal (a chat's /continue took
// it and the move is under way). A turn started meanwhile would run
// beside the move; what is typed is kept instead, as a chat keeps it.
func (r *REPL) notHere(ctx context.Context) bool {
	if r.session.HeldElsewhere(r.app.TerminalKey()) {
		return true
	}
	h, err := r.app.Store.HandoffState(ctx, r.session.ID)
	return err == nil && (h.State == store.HandoffPending || h.State == store.HandoffRunning) && h.Platform != Platform
}

// offerToTake asks, for a session entered while held elsewhere, whether
// to move it here; no leaves it read-only here.
func (r *REPL) offerToTake(ctx context.Context) {
	if !r.session.HeldElsewhere(r.app.TerminalKey()) {
		return
	}
	if hf, ok := r.handedHere(ctx); ok {
		// Handed off to the terminal already (/handoff cli): asked for.
		r.pickUp(ctx, hf)
		return
	}
	place := placeOf(r.session.Holder)
	ans, err := r.in.Ask(fmt.Sprintf("It is in %s — move it here? [Y/n] ", place))
	if err == nil {
		switch strings.ToLower(strings.TrimSpace(ans)) {
		case "", "y", "yes":
			r.takeHere(ctx)
			return
		}
	}
	r.out.Printf("It stays in %s; here it is read-only (/continue brings it here).\n", place)
}

// takeHere is /continue in the terminal: a handoff of the current session
// to this terminal, picked up at once; the place that held it is told,
// and what was typed here meanwhile is answered.
func (r *REPL) takeHere(ctx context.Context) {
	r.refresh(ctx)
	if r.session.ID == "" {
		r.out.Printf("There is no conversation here yet; /resume picks one.\n")
		return
	}
	if !r.session.HeldElsewhere(r.app.TerminalKey()) {
		r.out.Printf("This conversation is here already.\n")
		r.carryKept(ctx, nil)
		return
	}
	if hf, ok := r.handedHere(ctx); ok {
		r.pickUp(ctx, hf)
		return
	}
	h, err := r.app.Store.RequestHandoffTo(ctx, r.session.ID, platformOf(r.session.Holder), Platform, r.app.TerminalKey())
	if errors.Is(err, store.ErrHandoffInFlight) {
		r.out.Printf("A handoff of this conversation is under way; try /continue again in a moment.\n")
		return
	} else if err != nil {
		r.out.Printf("error: %v\n", err)
		return
	}
	r.pickUp(ctx, h)
}

// handedHere is the session's handoff to the terminal waiting to be
// picked up, if there is one (/handoff cli in a chat).
func (r *REPL) handedHere(ctx context.Context) (store.Handoff, bool) {
	hf, err := r.app.Store.HandoffState(ctx, r.session.ID)
	return hf, err == nil && hf.State == store.HandoffPending && hf.Platform == Platform
}

// pickUp completes hf, a handoff of the current session to the terminal,
// here: its note is shown, as a chat shows it with the greeting, and
// what was typed here meanwhile is answered.
func (r *REPL) pickUp(ctx context.Context, hf store.Handoff) {
	before := r.session.Holder
	// The note is the model's to write: seconds, during which the
	// terminal would otherwise look stuck.
	r.out.Status("bringing it here from " + placeOf(before) + ": writing the handoff note…")
	s, err := (&Handoffs{App: r.app}).PickUp(ctx, hf)
	r.out.ClearStatus()
	if err != nil {
		r.out.Printf("error: %v\n", err)
		return
	}
	r.session = s
	r.out.Printf("Brought %s here from %s.\n", describe(s), placeOf(before))
	r.told(ctx)
	r.showNote(ctx)
	r.carryKept(ctx, nil)
}

// keepKey is where what is typed into the current session in a terminal
// that cannot run it is kept (parked, as a chat's messages are): one
// place per session, since every terminal is one place to the store.
func (r *REPL) keepKey() string {
	return platform.Address{Platform: Platform, Kind: platform.Thread, Chat: r.app.Owner.ID, Thread: r.session.ID}.Key()
}

// keep stores text, typed where it cannot run now, parked in the current
// session until a terminal holding it answers it (carryKept), and says so.
func (r *REPL) keep(ctx context.Context, text, until string) {
	key := r.keepKey()
	in, _, err := r.app.Store.AddInbound(ctx, store.Inbound{Platform: Platform, AddressKey: key, SenderID: r.app.Owner.ID, Sender: r.app.Owner.Name, Text: text})
	if err == nil {
		err = r.app.Store.ParkInbound(ctx, in.ID, r.session.ID, key)
	}
	if err != nil {
		r.out.Printf("error: could not keep the message: %v\n", err)
		return
	}
	r.out.Printf("(kept: answered %s)\n", until)
}

// carryKept answers, in order, what was kept for the current session in
// a terminal while it could not run there; each is forgotten once its
// turn ran. moved says a move of the session stopped one: the session
// runs elsewhere now.
func (r *REPL) carryKept(ctx context.Context, interrupts <-chan os.Signal) (moved bool) {
	kept, err := r.app.Store.Parked(ctx, r.keepKey())
	if err != nil {
		r.out.Printf("warning: %v\n", err)
		return false
	}
	for _, in := range kept {
		r.out.Printf("(kept) %s%s\n", prompt, in.Text)
		moved := r.runTurn(ctx, in.Text, interrupts)
		if err := r.app.Store.Unpark(ctx, in.ID); err != nil {
			r.out.Printf("warning: %v\n", err)
		}
		if moved {
			return true // the rest stay kept
		}
	}
	return false
}

// keptCount is how many messages wait kept for the current session.
func (r *REPL) keptCount(ctx context.Context) int {
	kept, _ := r.app.Store.Parked(ctx, r.keepKey())
	return len(kept)
}

// platformOf is the platform of an address key ("telegram:dm:42").
func platformOf(key string) string {
	p, _, _ := strings.Cut(key, ":")
	return p
}

// tellLeft stores the notice for the chat a session left for the
// terminal, and wakes the gateway to send it (on this machine over its
// socket, elsewhere through the store).
func tellLeft(ctx context.Context, a *app.App, handoffID int64, before string) {
	if before == "" || strings.HasPrefix(before, Platform+":") {
		return
	}
	_, err := a.Store.EnqueueDeliveries(ctx, store.Delivery{
		Key:        fmt.Sprintf("handoff:%d:left:part:0", handoffID),
		AddressKey: before,
		Text:       place.Left(placeOf(Platform)),
	})
	if err != nil {
		return // the chat hears where it is at its next message
	}
	_ = control.Kick(ctx, a.Home, a.Store, control.TopicNotices, before)
}

// where is /where in the terminal.
func (r *REPL) where(ctx context.Context) {
	r.refresh(ctx)
	switch {
	case r.session.ID == "":
		r.out.Printf("No conversation yet: say something to start one here.\n")
	case r.session.HeldElsewhere(r.app.TerminalKey()):
		r.out.Printf("%s\n", r.elsewhereLine(ctx))
	default:
		r.out.Printf("%s\n", place.Here(describe(r.session), r.session.HeldSince, time.Now()))
	}
	r.told(ctx)
}

// elsewhereLine says where the current session, held elsewhere, is: on
// its way somewhere when a handoff of it is under way (here, when it was
// handed off to the terminal), else where it is held.
func (r *REPL) elsewhereLine(ctx context.Context) string {
	h, err := r.app.Store.HandoffState(ctx, r.session.ID)
	if err != nil || (h.State != store.HandoffPending && h.State != store.HandoffRunning) {
		return whereLine(r.session)
	}
	if h.Platform == Platform {
		return place.Leaving(describe(r.session), placeOf(Platform+":")) + " /continue picks it up here."
	}
	return place.Leaving(describe(r.session), placeOf(h.Platform+":"))
}
