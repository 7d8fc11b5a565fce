package platform

import (
	"errors"
	"time"
)

// Adapters only classify their failures; what to do about them (retry,
// wait, give up, fall back, restart) is decided once, by the gateway. An
// error of no class below is transient: worth trying again after a backoff.

// ErrUnsupported is wrapped by errors from optional capabilities the
// service refused; callers degrade at once, without retrying. Alone it
// speaks of the place asked (a Telegram group that is not a forum, a
// channel where the bot may not open threads): another place of the same
// platform may still offer it.
var ErrUnsupported = errors.New("not supported by this service")

// ErrNotOffered is wrapped, besides ErrUnsupported, by errors saying the
// service (or this server of it) has no such method at all (Telegram's
// 404 for a method): no place of the platform will do it.
var ErrNotOffered = errors.New("not offered by this server anywhere")

// ErrPermanent is wrapped by errors that a retry cannot fix (the chat is
// gone, the bot was blocked, the request is malformed); the gateway stops
// retrying.
var ErrPermanent = errors.New("permanent failure")

// ErrRefused is wrapped by a Run error meaning the service refused baton's
// credentials: restarting will not help until the owner fixes them.
var ErrRefused = errors.New("credentials refused")

// ErrAway is wrapped by a Send that found nobody there to receive the
// message (the web chat with no page open). The gateway keeps the message
// stored and unsent without retrying it: the adapter asks for it again
// (Redeliverer) when someone is there.
var ErrAway = errors.New("nobody there to receive it now")

// class keeps err's own message while making errors.Is see the class.
type class struct {
	err  error
	kind error
}

func (c *class) Error() string   { return c.err.Error() }
func (c *class) Unwrap() []error { return []error{c.err, c.kind} }

// Permanent marks err as one no retry can fix.
func Permanent(err error) error { return mark(err, ErrPermanent) }

// Unsupported marks err as an optional method this service does not offer.
func Unsupported(err error) error { return mark(err, ErrUnsupported) }

// NotOffered marks err as an optional method this server lacks everywhere;
// it is also Unsupported.
func NotOffered(err error) error { return mark(Unsupported(err), ErrNotOffered) }

// Refused marks err as the service refusing baton's credentials.
func Refused(err error) error { return mark(err, ErrRefused) }

// Away marks err as a Send that found nobody there to receive it.
func Away(err error) error { return mark(err, ErrAway) }

func mark(err, kind error) error {
	if err == nil {
		return nil
	}
	return &class{err: err, kind: kind}
}

// RetryAfterError is a failure the service said to retry after a wait (an
// HTTP 429 with Retry-After, Telegram's retry_after).
type RetryAfterError struct {
	Wait time.Duration
	Err  error
}

func (e *RetryAfterError) Error() string { return e.Err.Error() }
func (e *RetryAfterError) Unwrap() error { return e.Err }

// RetryAfter marks err as asking for a wait of d before the next try.
func RetryAfter(d time.Duration, err error) error {
	if err == nil {
		return nil
	}
	return &RetryAfterError{Wait: d, Err: err}
}

// Class is what a failure means to the caller.
type Class int

// The classes of failure, most decisive first.
const (
	ClassTransient   Class = iota // try again after a backoff
	ClassRetryAfter               // try again after the wait the service asked for
	ClassPermanent                // give up on this message
	ClassUnsupported              // degrade: do without this optional method
	ClassRefused                  // the credentials are refused: stop until fixed
	ClassAway                     // nobody there: keep it until the adapter asks again
)

func (c Class) String() string {
	switch c {
	case ClassRetryAfter:
		return "retry-after"
	case ClassPermanent:
		return "permanent"
	case ClassUnsupported:
		return "unsupported"
	case ClassRefused:
		return "refused"
	case ClassAway:
		return "away"
	}
	return "transient"
}

// Classify reads the class an adapter gave err, and the wait it asked for
// when it is ClassRetryAfter.
func Classify(err error) (Class, time.Duration) {
	var ra *RetryAfterError
	switch {
	case err == nil:
		return ClassTransient, 0
	case errors.Is(err, ErrRefused):
		return ClassRefused, 0
	case errors.Is(err, ErrUnsupported):
		return ClassUnsupported, 0
	case errors.Is(err, ErrPermanent):
		return ClassPermanent, 0
	case errors.Is(err, ErrAway):
		return ClassAway, 0
	case errors.As(err, &ra) && ra.Wait > 0:
		return ClassRetryAfter, ra.Wait
	}
	return ClassTransient, 0
}
