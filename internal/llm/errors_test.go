package llm_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/llm"
)

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	for in, want := range map[string]time.Duration{
		"":                              0,
		"3":                             3 * time.Second,
		" 1.5 ":                         1500 * time.Millisecond,
		"-1":                            0,
		"soon":                          0,
		"Thu, 02 Jan 2025 03:04:35 GMT": 30 * time.Second,
		"Thu, 02 Jan 2025 03:00:00 GMT": 0, // in the past
	} {
		if got := llm.ParseRetryAfter(in, now); got != want {
			t.Errorf("ParseRetryAfter(%q) = %v, want %v", in, got, want)
		}
	}
	h := http.Header{"Retry-After": {"9"}, "Retry-After-Ms": {"250"}}
	if got := llm.RetryAfter(h, now); got != 250*time.Millisecond {
		t.Errorf("RetryAfter prefers retry-after-ms: got %v", got)
	}
}

func TestErrorMessageShapes(t *testing.T) {
	for body, want := range map[string]string{
		`{"error":{"message":"Incorrect API key","type":"invalid_request_error"}}`:    "Incorrect API key",
		`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`: "Overloaded",
		`{"error":"model \"x\" not found"}`:                                           `model "x" not found`,
		`{"message":"nope"}`:                                                          "nope",
		`{"detail":"Not Found"}`:                                                      "Not Found",
		"  Bad Gateway\n":                                                             "Bad Gateway",
		"":                                                                            "",
	} {
		if got := llm.ErrorMessage([]byte(body)); got != want {
			t.Errorf("ErrorMessage(%q) = %q, want %q", body, got, want)
		}
	}
	long := llm.ErrorMessage([]byte(strings.Repeat("é", 1000)))
	if len(long) > 520 || !strings.HasSuffix(long, "…") {
		t.Errorf("long body not truncated cleanly: %d bytes", len(long))
	}
}

func TestStatusError(t *testing.T) {
	for status, kind := range map[int]error{
		401: llm.ErrAuth, 403: llm.ErrAuth, 429: llm.ErrRateLimited,
		500: llm.ErrServer, 529: llm.ErrServer, 400: llm.ErrBadRequest, 404: llm.ErrBadRequest, 422: llm.ErrBadRequest,
	} {
		e := llm.StatusError("p", status, http.Header{"Retry-After": {"4"}}, nil)
		if !errors.Is(e, kind) || e.Status != status || e.RetryAfter != 4*time.Second || e.Message == "" {
			t.Errorf("%d: %#v", status, e)
		}
	}
	if got := llm.StatusError("openai", 401, nil, []byte(`{"error":{"message":"bad key"}}`)).Error(); got != "openai: HTTP 401: bad key" {
		t.Errorf("Error() = %q", got)
	}
}
