package platform_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/platform"
	"github.com/baton-agent/baton/internal/retry"
	"github.com/baton-agent/baton/internal/testutil"
)

func TestClassify(t *testing.T) {
	base := errors.New("boom")
	for _, tc := range []struct {
		err  error
		want platform.Class
		wait time.Duration
	}{
		{base, platform.ClassTransient, 0},
		{platform.Permanent(base), platform.ClassPermanent, 0},
		{platform.Unsupported(base), platform.ClassUnsupported, 0},
		{platform.NotOffered(base), platform.ClassUnsupported, 0},
		{platform.Refused(base), platform.ClassRefused, 0},
		{platform.RetryAfter(3*time.Second, base), platform.ClassRetryAfter, 3 * time.Second},
		{fmt.Errorf("send: %w", platform.RetryAfter(time.Second, base)), platform.ClassRetryAfter, time.Second},
		{fmt.Errorf("wrapped: %w", platform.Permanent(base)), platform.ClassPermanent, 0},
	} {
		cl, wait := platform.Classify(tc.err)
		if cl != tc.want || wait != tc.wait {
			t.Errorf("Classify(%v) = %v %v, want %v %v", tc.err, cl, wait, tc.want, tc.wait)
		}
		if !errors.Is(tc.err, base) || !strings.Contains(tc.err.Error(), "boom") {
			t.Errorf("%v lost its cause", tc.err)
		}
	}
	if errors.Is(platform.Unsupported(base), platform.ErrNotOffered) || !errors.Is(platform.NotOffered(base), platform.ErrNotOffered) {
		t.Error("only NotOffered says a method is offered nowhere")
	}
	if platform.Permanent(base).Error() != "boom" {
		t.Errorf("a class changes the message: %q", platform.Permanent(base))
	}
}

func TestOneLine(t *testing.T) {
	page := errors.New("getMe: <html>\n<head><title>502 Bad Gateway</title></head>\n<body><h1>502 Bad Gateway</h1></body></html>")
	if got := platform.OneLine(page); got != "getMe: 502 Bad Gateway" {
		t.Errorf("OneLine(html page) = %q", got)
	}
	long := errors.New(strings.Repeat("word ", 100) + "\n\tend")
	got := platform.OneLine(long)
	if strings.ContainsAny(got, "\n\t") || len([]rune(got)) > 200 || !strings.HasSuffix(got, "…") {
		t.Errorf("OneLine(long) = %q", got)
	}
}

// script is an adapter whose runs end as the test says.
type script struct {
	mu   sync.Mutex
	runs int
	plan []func(ctx context.Context, r platform.Receiver) error
}

func (s *script) Name() string { return "script" }
func (s *script) Send(context.Context, platform.Address, string) (string, error) {
	return "", nil
}
func (s *script) Run(ctx context.Context, r platform.Receiver) error {
	s.mu.Lock()
	i := s.runs
	s.runs++
	s.mu.Unlock()
	if i < len(s.plan) {
		return s.plan[i](ctx, r)
	}
	<-ctx.Done()
	return nil
}

func TestSuperviseRestartsUntilRefused(t *testing.T) {
	a := &script{plan: []func(context.Context, platform.Receiver) error{
		func(context.Context, platform.Receiver) error { return errors.New("dial: connection refused") },
		func(context.Context, platform.Receiver) error { return nil }, // an end without a reason
		func(_ context.Context, r platform.Receiver) error { r.Live(); return errors.New("dropped") },
		func(context.Context, platform.Receiver) error { return platform.Refused(errors.New("bad token")) },
	}}
	var states []platform.Status
	platform.Supervise(context.Background(), a, platform.ReceiverFunc(nil), retry.Policy{First: time.Millisecond, Max: 2 * time.Millisecond},
		func(s platform.Status) { states = append(states, s) })
	var got []string
	for _, s := range states {
		got = append(got, string(s.State)+":"+s.Reason)
	}
	want := []string{
		"starting:", "down:dial: connection refused",
		"starting:", "down:the connection ended",
		"starting:", "live:", "down:dropped",
		"starting:", "refused:bad token",
	}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("states\n got %q\nwant %q", got, want)
	}
	for _, s := range states {
		if s.State == platform.StateDown && !s.NextTry.After(s.Since) {
			t.Errorf("down without a next try: %+v", s)
		}
	}
}

func TestSuperviseStopsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	a := &script{plan: []func(context.Context, platform.Receiver) error{
		func(context.Context, platform.Receiver) error { cancel(); return errors.New("late") },
	}}
	var last platform.Status
	platform.Supervise(ctx, a, platform.ReceiverFunc(nil), retry.Policy{First: time.Hour}, func(s platform.Status) { last = s })
	if last.State != platform.StateStopped {
		t.Fatalf("last state %v, want stopped", last.State)
	}
}

// probed is a script whose service can be asked cheaply whether it
// answers (platform.Prober): it does once up is closed.
type probed struct {
	script
	up     chan struct{}
	probes atomic.Int64
}

func (p *probed) Probe(context.Context) error {
	p.probes.Add(1)
	select {
	case <-p.up:
		return nil
	default:
		return errors.New("still down")
	}
}

// A platform that went down is restarted as soon as a cheap probe finds
// its service answering again, not at the end of a long backoff: with a
// restart due in an hour, it is live again moments after the service is.
func TestSuperviseRestartsOnceAProbeAnswers(t *testing.T) {
	a := &probed{up: make(chan struct{}), script: script{plan: []func(context.Context, platform.Receiver) error{
		func(context.Context, platform.Receiver) error { return errors.New("dial: connection refused") },
	}}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	states := make(chan platform.Status, 16)
	done := make(chan struct{})
	go func() {
		defer close(done)
		platform.Supervise(ctx, a, platform.ReceiverFunc(nil), retry.Policy{First: time.Hour, Max: time.Hour}, func(s platform.Status) { states <- s })
	}()
	defer func() { cancel(); <-done }()
	wait := func(want platform.State) platform.Status {
		t.Helper()
		for {
			s := testutil.Receive(t, states, string(want))
			if s.State == want {
				return s
			}
		}
	}
	wait(platform.StateDown)
	testutil.Eventually(t, testutil.Patience, func() bool { return a.probes.Load() >= 1 }, "a probe while down")
	close(a.up)
	wait(platform.StateStarting) // restarted: its run does not fail
	// Starting is said just before the run begins.
	testutil.Eventually(t, testutil.Patience, func() bool {
		a.mu.Lock()
		defer a.mu.Unlock()
		return a.runs == 2
	}, "the second run")
}

// The restart backoff is capped near half a minute: a long outage does not
// keep baton away for minutes after the service is back.
func TestDefaultRestartIsCappedNearHalfAMinute(t *testing.T) {
	b := platform.DefaultRestart().Backoff()
	var longest time.Duration
	for range 50 {
		longest = max(longest, b.NextBackOff())
	}
	if longest > 36*time.Second {
		t.Errorf("a restart waits up to %v, want at most 30s (+20%% jitter)", longest)
	}
}
