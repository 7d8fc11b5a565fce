package llm_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/llm"
)

// scripted is a Provider answering from a list of errors, then success.
type scripted struct {
	errs  []error
	calls int
}

func (s *scripted) Name() string { return "scripted" }

func (s *scripted) Chat(ctx context.Context, _ llm.Request, onDelta func(llm.Delta)) (llm.Response, error) {
	s.calls++
	if len(s.errs) > 0 {
		err := s.errs[0]
		s.errs = s.errs[1:]
		return llm.Response{}, err
	}
	onDelta(llm.Delta{Text: "ok"})
	return llm.Response{Text: "ok"}, nil
}

func TestRetryAfterIsCapped(t *testing.T) {
	p := &scripted{errs: []error{&llm.APIError{Status: 429, RetryAfter: time.Hour, Kind: llm.ErrRateLimited}}}
	var s sleeps
	if _, err := llm.WithRetry(p, llm.RetryPolicy{MaxDelay: 5 * time.Second, Sleep: s.sleep}).Chat(context.Background(), llm.Request{}, func(llm.Delta) {}); err != nil {
		t.Fatal(err)
	}
	if got := s.got(); len(got) != 1 || got[0] != 5*time.Second {
		t.Errorf("sleeps = %v, want [5s]", got)
	}
}

func TestRetryStopsWhenContextEndsWhileWaiting(t *testing.T) {
	rateLimited := &llm.APIError{Status: 429, RetryAfter: 10 * time.Second, Kind: llm.ErrRateLimited}
	p := &scripted{errs: []error{rateLimited, rateLimited}}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(20 * time.Millisecond); cancel() }()
	start := time.Now()
	// No Sleep injected: the real timer must give way to the context.
	_, err := llm.WithRetry(p, llm.RetryPolicy{}).Chat(ctx, llm.Request{}, nil)
	if !errors.Is(err, context.Canceled) || !errors.Is(err, llm.ErrRateLimited) {
		t.Fatalf("err = %v, want both the rate limit and the cancellation", err)
	}
	if time.Since(start) > 5*time.Second || p.calls != 1 {
		t.Errorf("took %v over %d calls", time.Since(start), p.calls)
	}
}

func TestNotRetried(t *testing.T) {
	for _, err := range []error{
		&llm.APIError{Status: 400, Kind: llm.ErrBadRequest},
		&llm.APIError{Status: 403, Kind: llm.ErrAuth},
		context.Canceled,
		errors.New("some local failure"),
	} {
		p := &scripted{errs: []error{err}}
		var s sleeps
		if _, got := llm.WithRetry(p, llm.RetryPolicy{Sleep: s.sleep}).Chat(context.Background(), llm.Request{}, nil); !errors.Is(got, err) || p.calls != 1 {
			t.Errorf("%v: got %v after %d calls", err, got, p.calls)
		}
	}
}

func TestRetryableKinds(t *testing.T) {
	for err, want := range map[error]bool{
		nil:                                     false,
		&llm.APIError{Kind: llm.ErrRateLimited}: true,
		&llm.APIError{Kind: llm.ErrServer}:      true,
		&llm.APIError{Kind: llm.ErrStream}:      true,
		&llm.APIError{Kind: llm.ErrAuth}:        false,
		&llm.APIError{Kind: llm.ErrBadRequest}:  false,
		context.DeadlineExceeded:                false,
		errors.Join(&llm.APIError{Kind: llm.ErrServer}, context.Canceled): false,
	} {
		if got := llm.Retryable(err); got != want {
			t.Errorf("Retryable(%v) = %v, want %v", err, got, want)
		}
	}
}

func TestBackoffGrowsAndIsCapped(t *testing.T) {
	serverErr := &llm.APIError{Status: 502, Kind: llm.ErrServer}
	p := &scripted{errs: []error{serverErr, serverErr, serverErr, serverErr, serverErr}}
	var s sleeps
	_, err := llm.WithRetry(p, llm.RetryPolicy{MaxAttempts: 6, BaseDelay: time.Second, MaxDelay: 4 * time.Second, Sleep: s.sleep}).Chat(context.Background(), llm.Request{}, func(llm.Delta) {})
	if err != nil {
		t.Fatal(err)
	}
	caps := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 4 * time.Second, 4 * time.Second}
	got := s.got()
	if len(got) != len(caps) {
		t.Fatalf("sleeps = %v", got)
	}
	for i, d := range got {
		if d < caps[i]/2 || d > caps[i] {
			t.Errorf("sleep %d = %v, want in [%v, %v]", i, d, caps[i]/2, caps[i])
		}
	}
}
