package retry_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/retry"
)

var quick = retry.Policy{First: time.Millisecond, Max: 4 * time.Millisecond}

func TestDoRetriesUntilSuccess(t *testing.T) {
	n := 0
	var waits []time.Duration
	err := retry.Do(context.Background(), quick, func(context.Context) error {
		n++
		if n < 4 {
			return errors.New("flaky")
		}
		return nil
	}, func(err error, d time.Duration) {
		if err == nil || err.Error() != "flaky" {
			t.Errorf("notified of %v, want the operation's own error", err)
		}
		waits = append(waits, d)
	})
	if err != nil || n != 4 || len(waits) != 3 {
		t.Fatalf("err %v after %d tries, %d waits", err, n, len(waits))
	}
	for _, d := range waits {
		if d <= 0 || d > 4*time.Millisecond*12/10 {
			t.Errorf("wait %v outside (0, Max+jitter]", d)
		}
	}
}

func TestDoStopsAtTriesAndReturnsTheLastError(t *testing.T) {
	n := 0
	last := errors.New("third")
	err := retry.Do(context.Background(), retry.Policy{First: time.Millisecond, Tries: 3}, func(context.Context) error {
		n++
		if n == 3 {
			return last
		}
		return errors.New("earlier")
	}, nil)
	if n != 3 || err != last {
		t.Fatalf("%d tries, err %v; want 3 and the last error itself", n, err)
	}
}

func TestStopEndsAtOnceUnmarked(t *testing.T) {
	n := 0
	cause := errors.New("refused")
	err := retry.Do(context.Background(), quick, func(context.Context) error { n++; return retry.Stop(cause) }, nil)
	if n != 1 || err != cause {
		t.Fatalf("%d tries, err %#v; want 1 and the cause unmarked", n, err)
	}
}

func TestAfterWaitsAsAskedEvenPastMax(t *testing.T) {
	n := 0
	var waited time.Duration
	err := retry.Do(context.Background(), quick, func(context.Context) error {
		n++
		if n == 1 {
			return retry.After(30*time.Millisecond, errors.New("429"))
		}
		return nil
	}, func(_ error, d time.Duration) { waited = d })
	if err != nil || waited != 30*time.Millisecond {
		t.Fatalf("err %v, waited %v; want the 30ms asked for", err, waited)
	}
}

func TestWithinBoundsTheSeries(t *testing.T) {
	n := 0
	err := retry.Do(context.Background(), retry.Policy{First: 20 * time.Millisecond, Max: 20 * time.Millisecond, Within: 50 * time.Millisecond},
		func(context.Context) error { n++; return errors.New("down") }, nil)
	if err == nil || n > 4 {
		t.Fatalf("err %v after %d tries; want a failure within ~3 tries", err, n)
	}
}

func TestContextEndSaysTheLastFailure(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	n := 0
	err := retry.Do(ctx, quick, func(context.Context) error {
		n++
		if n == 2 {
			cancel()
		}
		return errors.New("still down")
	}, nil)
	if !errors.Is(err, context.Canceled) || !errors.Is(err, err) || err.Error() != "context canceled; last failure: still down" {
		t.Fatalf("err = %v", err)
	}
}
