package llm

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"
)

// RetryPolicy says how WithRetry retries transient provider failures. The
// zero value is usable: 3 attempts, 1s base backoff, 30s cap.
type RetryPolicy struct {
	MaxAttempts int           // total attempts including the first; 0 means 3
	BaseDelay   time.Duration // first backoff step; 0 means 1s
	MaxDelay    time.Duration // cap on any wait, Retry-After included; 0 means 30s

	// Sleep waits d or until ctx ends; nil means a real timer. Tests inject a
	// recorder so they neither wait nor guess at timing.
	Sleep func(ctx context.Context, d time.Duration) error

	// OnRetry, if set, hears about each retry before its wait, e.g. so a UI
	// can say "rate limited, retrying in 5s".
	OnRetry func(attempt int, err error, wait time.Duration)
}

// WithRetry wraps p so rate limits, server errors and streams that broke
// before any output are retried with backoff. A call that already handed text
// to onDelta is never retried: the caller has shown that text, and a second
// attempt would duplicate it.
func WithRetry(p Provider, policy RetryPolicy) Provider {
	return &retrying{inner: p, policy: policy.withDefaults()}
}

func (policy RetryPolicy) withDefaults() RetryPolicy {
	if policy.MaxAttempts <= 0 {
		policy.MaxAttempts = 3
	}
	if policy.BaseDelay <= 0 {
		policy.BaseDelay = time.Second
	}
	if policy.MaxDelay <= 0 {
		policy.MaxDelay = 30 * time.Second
	}
	if policy.Sleep == nil {
		policy.Sleep = sleepCtx
	}
	return policy
}

// Retry runs call under policy as WithRetry runs a model call: again
// after a rate limit, a server error or a broken stream (Retryable), after
// the provider's Retry-After or a backoff; for the other calls a model
// provider answers (a transcription, speech).
func Retry(ctx context.Context, policy RetryPolicy, call func(context.Context) error) error {
	r := &retrying{policy: policy.withDefaults()}
	for attempt := 1; ; attempt++ {
		err := call(ctx)
		if err == nil || attempt >= r.policy.MaxAttempts || !Retryable(err) {
			return err
		}
		wait := r.delay(err, attempt)
		if r.policy.OnRetry != nil {
			r.policy.OnRetry(attempt, err, wait)
		}
		if serr := r.policy.Sleep(ctx, wait); serr != nil {
			return errors.Join(err, serr)
		}
	}
}

type retrying struct {
	inner  Provider
	policy RetryPolicy
}

func (r *retrying) Name() string { return r.inner.Name() }

// Prefills is the wrapped provider's answer: retrying changes no capability.
func (r *retrying) Prefills() bool { return CanPrefill(r.inner) }

// SeesImages and MaxImageSide are the wrapped provider's answers too.
func (r *retrying) SeesImages(model string) bool { return SeesImages(r.inner, model) }
func (r *retrying) MaxImageSide() int            { return MaxImageSide(r.inner) }

func (r *retrying) Chat(ctx context.Context, req Request, onDelta func(Delta)) (Response, error) {
	for attempt := 1; ; attempt++ {
		delivered := false
		tap := func(d Delta) {
			delivered = true
			if onDelta != nil {
				onDelta(d)
			}
		}
		resp, err := r.inner.Chat(ctx, req, tap)
		if err == nil || delivered || attempt >= r.policy.MaxAttempts || !Retryable(err) {
			return resp, err
		}
		wait := r.delay(err, attempt)
		if r.policy.OnRetry != nil {
			r.policy.OnRetry(attempt, err, wait)
		}
		if serr := r.policy.Sleep(ctx, wait); serr != nil {
			// Report the provider failure, not just "context canceled": it is
			// the reason we were waiting.
			return Response{}, errors.Join(err, serr)
		}
	}
}

// delay is the provider's Retry-After when given, else exponential backoff
// with jitter; both capped at MaxDelay.
func (r *retrying) delay(err error, attempt int) time.Duration {
	var apiErr *APIError
	if errors.As(err, &apiErr) && apiErr.RetryAfter > 0 {
		return min(apiErr.RetryAfter, r.policy.MaxDelay)
	}
	d := r.policy.BaseDelay << (attempt - 1)
	if d <= 0 || d > r.policy.MaxDelay {
		d = r.policy.MaxDelay
	}
	// Equal jitter: half fixed, half random, so concurrent callers spread out
	// but the wait never collapses to zero.
	half := d / 2
	return half + rand.N(half+1)
}

// Retryable reports whether err is worth another attempt: rate limits,
// server errors, and broken streams. Auth and bad requests will fail the same
// way again; context cancellation is the caller's decision.
func Retryable(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	return errors.Is(err, ErrRateLimited) || errors.Is(err, ErrServer) || errors.Is(err, ErrStream)
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
