package store

import (
	"context"
	"strings"
	"time"
)

// PairingCode is a code as typed, normalised: upper case, without the
// dash it is shown with or spaces.
func PairingCode(s string) string {
	return strings.ToUpper(strings.NewReplacer("-", "", " ", "").Replace(strings.TrimSpace(s)))
}

// Pairing is a request by an unknown person to be let in, waiting for the
// owner's approval under its code.
type Pairing struct {
	Code           string
	Platform       string
	PlatformUserID string
	Sender         string // display name, as the platform gave it
	AddressKey     string // where the person asked: where to tell them
	CreatedAt      time.Time
	ExpiresAt      time.Time
	// Attempts counts the person's messages since the code was issued,
	// also those while locked out.
	Attempts int
	// LockedUntil is after now for a person locked out (too many
	// attempts, or denied); their messages are then ignored.
	LockedUntil time.Time
}

// PairingAsk is one message from an unknown person, with the policy that
// governs it.
type PairingAsk struct {
	Platform, PlatformUserID, Sender, AddressKey string
	// Code is used if a new code is issued; the caller makes it.
	Code string
	Now  time.Time
	// TTL is how long a code lasts; MaxPending bounds unexpired codes per
	// platform: a new code past it replaces the oldest waiting one, so a
	// few strangers cannot keep everyone else out. After MaxAttempts
	// messages on one code the person is locked out for Lock. A person gets
	// a new code at most once per Renew (from their last code's issue):
	// one whose code ran out or was replaced, writing again sooner, is
	// locked out until then.
	TTL         time.Duration
	MaxPending  int
	MaxAttempts int
	Lock        time.Duration
	Renew       time.Duration
}

// Pairings keeps pairing requests.
type Pairings interface {
	// AskPairing records a message from an unknown person: a new code
	// (issued=true) if they hold none that is still valid, else one more
	// attempt on theirs, which may lock them out (the message that does
	// has Attempts == MaxAttempts+1; a locked-out person's messages still
	// count). A new code past MaxPending replaces the oldest waiting
	// one. A person asking again within Renew of their last code is locked
	// out until then; the message that does has Attempts == 1.
	AskPairing(ctx context.Context, ask PairingAsk) (p Pairing, issued bool, err error)
	// PendingPairings lists unexpired codes and locked-out people.
	PendingPairings(ctx context.Context, now time.Time) ([]Pairing, error)
	// ApprovePairing links the code's identity to userID and removes the
	// request; ErrNotFound for an unknown or expired code.
	ApprovePairing(ctx context.Context, code, userID string, now time.Time) (Pairing, error)
	// DenyPairing removes the request and locks the person out until
	// lockUntil; ErrNotFound for an unknown code.
	DenyPairing(ctx context.Context, code string, lockUntil time.Time) (Pairing, error)
}
