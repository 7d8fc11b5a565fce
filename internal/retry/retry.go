// Package retry is baton's one way of trying again: exponential backoff
// with jitter, a cap, a bound in tries or time, waits a failure asks for
// (Retry-After), and failures no retry can fix. Every loop that retries in
// baton — deliveries, restarts of a chat service, model calls, opening the
// store — is a Policy here, so what "retry" means is decided in one place.
package retry

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cenkalti/backoff/v5"
)

// Policy says how to retry. Zero fields take the defaults noted.
type Policy struct {
	First time.Duration // first wait; default 500ms
	Max   time.Duration // cap on any computed wait; default 30s
	// Tries bounds the attempts, the first included; 0 means no bound.
	Tries uint
	// Within bounds the whole series: no wait starts that would end past
	// it; 0 means no bound.
	Within time.Duration
}

// Wait is an error asking for a given wait before the next try (a 429's
// Retry-After); the wait may exceed Policy.Max.
type Wait struct {
	After time.Duration
	Err   error
}

func (w *Wait) Error() string { return w.Err.Error() }
func (w *Wait) Unwrap() error { return w.Err }

// After marks err as asking for a wait of d before the next try.
func After(d time.Duration, err error) error {
	if err == nil {
		return nil
	}
	return &Wait{After: d, Err: err}
}

// stop marks an error that ends the series at once.
type stop struct{ err error }

func (s *stop) Error() string { return s.err.Error() }
func (s *stop) Unwrap() error { return s.err }

// Stop marks err as one that no retry can fix; Do returns it at once.
func Stop(err error) error {
	if err == nil {
		return nil
	}
	return &stop{err: err}
}

// Notify hears of each failed try before its wait.
type Notify func(err error, wait time.Duration)

// Do calls op until it succeeds, returns an error marked with Stop, the
// policy's bounds are spent, or ctx ends. It returns op's last error
// (unmarked), or ctx's when ctx ended first.
func Do(ctx context.Context, p Policy, op func(ctx context.Context) error, notify Notify) error {
	_, err := Value(ctx, p, func(ctx context.Context) (struct{}, error) { return struct{}{}, op(ctx) }, notify)
	return err
}

// Value is Do for an operation that returns a value.
func Value[T any](ctx context.Context, p Policy, op func(ctx context.Context) (T, error), notify Notify) (T, error) {
	var last error
	opts := []backoff.RetryOption{
		backoff.WithBackOff(p.Backoff()),
		backoff.WithMaxTries(p.Tries),
		backoff.WithMaxElapsedTime(p.Within), // 0: no bound
	}
	if notify != nil {
		opts = append(opts, backoff.WithNotify(func(_ error, d time.Duration) { notify(last, d) }))
	}
	v, err := backoff.Retry(ctx, func() (T, error) {
		v, err := op(ctx)
		last = err
		if err == nil {
			return v, nil
		}
		var s *stop
		if errors.As(err, &s) {
			return v, backoff.Permanent(err)
		}
		var w *Wait
		if errors.As(err, &w) && w.After > 0 {
			return v, &backoff.RetryAfterError{Duration: w.After}
		}
		return v, err
	}, opts...)
	if err == nil {
		return v, nil
	}
	if ctx.Err() != nil && last != nil && !errors.Is(last, ctx.Err()) {
		return v, fmt.Errorf("%w; last failure: %w", ctx.Err(), unmark(last))
	}
	if last != nil {
		return v, unmark(last)
	}
	return v, err
}

// unmark strips Stop and Wait so callers see the operation's own error.
func unmark(err error) error {
	for {
		switch e := err.(type) {
		case *stop:
			err = e.err
		case *Wait:
			err = e.Err
		default:
			return err
		}
	}
}

// Backoff is the policy's sequence of waits, for loops that keep their own
// state (a supervisor that resets it after a long healthy run).
func (p Policy) Backoff() *backoff.ExponentialBackOff {
	b := backoff.NewExponentialBackOff()
	b.InitialInterval = p.First
	if b.InitialInterval <= 0 {
		b.InitialInterval = 500 * time.Millisecond
	}
	b.MaxInterval = p.Max
	if b.MaxInterval <= 0 {
		b.MaxInterval = 30 * time.Second
	}
	b.Multiplier = 2
	b.RandomizationFactor = 0.2
	b.Reset()
	return b
}

// Sleep waits d or until ctx ends; it reports whether ctx is still live.
func Sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
