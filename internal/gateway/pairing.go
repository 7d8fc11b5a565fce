package gateway

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/baton-agent/baton/internal/platform"
	"github.com/baton-agent/baton/internal/store"
)

// Pairing policy: a code lasts an hour; a platform has at most three
// waiting, a fourth replacing the oldest; a person gets a new code at most
// once a day; a person who writes more than five times on one code, or is
// denied, is ignored for a day.
const (
	PairingTTL         = time.Hour
	PairingMaxPending  = 3
	PairingMaxAttempts = 5
	PairingLock        = 24 * time.Hour
	PairingRenew       = 24 * time.Hour
)

// codeAlphabet has no look-alikes (0/O, 1/I/L).
const codeAlphabet = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"

// NewPairingCode is 8 random characters from codeAlphabet.
func NewPairingCode() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	for i := range b {
		b[i] = codeAlphabet[int(b[i])%len(codeAlphabet)]
	}
	return string(b)
}

// ShowCode is a code as people read it: ABCD-EFGH.
func ShowCode(code string) string {
	if len(code) != 8 {
		return code
	}
	return code[:4] + "-" + code[4:]
}

// stranger answers someone who is not the owner. In a group or thread
// they are ignored (and see nothing); in a direct chat they get a pairing
// code for the owner to approve, reminders while it waits, and silence
// once locked out.
func (r *router) stranger(ctx context.Context, ev platform.Event) {
	if slices.Contains(r.cfg.personal, ev.At.Platform) {
		// The owner's own account: someone writing to them, not to baton.
		return
	}
	r.log.Warn("message from someone who is not the owner",
		"platform", ev.At.Platform, "sender_id", ev.SenderID, "at", ev.At.Key())
	if ev.At.Kind != platform.DM || ev.SenderID == "" {
		return
	}
	now := time.Now()
	var (
		p      store.Pairing
		issued bool
		err    error
	)
	for range 3 { // a new code colliding with a waiting one: draw again
		p, issued, err = r.st.AskPairing(ctx, store.PairingAsk{
			Platform: ev.At.Platform, PlatformUserID: ev.SenderID, Sender: ev.Sender, AddressKey: ev.At.Key(),
			Code: NewPairingCode(), Now: now, TTL: PairingTTL, MaxPending: PairingMaxPending,
			MaxAttempts: PairingMaxAttempts, Lock: PairingLock, Renew: PairingRenew,
		})
		if !errors.Is(err, store.ErrConflict) {
			break
		}
	}
	switch {
	case err != nil:
		r.log.Error("pairing request", "platform", ev.At.Platform, "err", err)
		return
	case p.LockedUntil.After(now):
		switch p.Attempts {
		case 1: // asked again before a new code is due
			r.out.sendNow(ctx, ev.At, fmt.Sprintf("Your pairing code ran out without an approval. You can ask for a new one after %s.",
				p.LockedUntil.Format("Jan 2 15:04 MST")))
		case PairingMaxAttempts + 1:
			r.out.sendNow(ctx, ev.At, "Too many messages without an approval: I will ignore you for a while.")
		}
		return
	case issued:
		r.out.sendNow(ctx, ev.At, fmt.Sprintf("This is a personal agent, and I do not know you yet. Your pairing code is %s (valid for %s). "+
			"If you know my owner, ask them to approve it with: baton pairing approve %s", ShowCode(p.Code), PairingTTL, ShowCode(p.Code)))
	default:
		r.out.sendNow(ctx, ev.At, fmt.Sprintf("Your pairing code %s is waiting for the owner's approval.", ShowCode(p.Code)))
	}
}

// pairingCommand is /pairing in an owner's chat: list, approve CODE or
// deny CODE.
func (r *router) pairingCommand(ctx context.Context, args string) string {
	verb, code, _ := strings.Cut(strings.TrimSpace(args), " ")
	now := time.Now()
	switch verb {
	case "", "list":
		ps, err := r.st.PendingPairings(ctx, now)
		if err != nil {
			return "Could not list pairing requests: " + err.Error()
		}
		return FormatPairings(ps, now)
	case "approve":
		p, err := r.st.ApprovePairing(ctx, code, r.cfg.ownerID, now)
		if err != nil {
			return "Not approved: " + err.Error()
		}
		r.welcome(ctx, p)
		return fmt.Sprintf("Approved %s on %s: they can talk to me now.", PairingWho(p), p.Platform)
	case "deny":
		p, err := r.st.DenyPairing(ctx, code, now.Add(PairingLock))
		if err != nil {
			return "Not denied: " + err.Error()
		}
		return fmt.Sprintf("Denied %s on %s; ignored for %s.", PairingWho(p), p.Platform, PairingLock)
	}
	return "Use /pairing list, /pairing approve CODE or /pairing deny CODE."
}

// PairingWelcome is what a person is told once the owner approved them.
const PairingWelcome = "The owner approved you: you can talk to me now."

// PairingWelcomeDelivery is the welcome for approved pairing p, as the
// outbox keeps it: under the same key whether the owner approved it in a
// chat or with `baton pairing approve`, so it is sent once.
func PairingWelcomeDelivery(p store.Pairing) store.Delivery {
	return store.Delivery{Key: partKey(pairingWelcomeKey(p.Code), 0), AddressKey: p.AddressKey, Text: PairingWelcome}
}

func pairingWelcomeKey(code string) string { return "pairing:" + code + ":welcome" }

// welcome tells a newly approved person they are in, through the outbox.
func (r *router) welcome(ctx context.Context, p store.Pairing) {
	addr, err := platform.ParseKey(p.AddressKey)
	if err != nil {
		return
	}
	if err := r.out.deliver(ctx, addr, pairingWelcomeKey(p.Code), PairingWelcome); err != nil {
		r.log.Warn("welcome an approved person", "to", addr.Key(), "err", err)
	}
}

// PairingWho names the person of a pairing request.
func PairingWho(p store.Pairing) string {
	if p.Sender != "" {
		return fmt.Sprintf("%s (%s)", p.Sender, p.PlatformUserID)
	}
	return p.PlatformUserID
}

// FormatPairings lists pairing requests for people, one a line.
func FormatPairings(ps []store.Pairing, now time.Time) string {
	if len(ps) == 0 {
		return "No pairing requests."
	}
	var b strings.Builder
	for _, p := range ps {
		if p.LockedUntil.After(now) {
			fmt.Fprintf(&b, "locked     %-9s %-20s until %s\n", p.Platform, PairingWho(p), p.LockedUntil.Format("2006-01-02 15:04"))
			continue
		}
		fmt.Fprintf(&b, "%s  %-9s %-20s expires in %s\n", ShowCode(p.Code), p.Platform, PairingWho(p), p.ExpiresAt.Sub(now).Round(time.Minute))
	}
	return strings.TrimSuffix(b.String(), "\n")
}
