package llm

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// maxErrorMessage bounds how much of an error body ends up in an APIError, so
// an HTML error page from a proxy does not flood the terminal.
const maxErrorMessage = 500

// KindForStatus maps an HTTP error status to the sentinel callers branch on.
func KindForStatus(status int) error {
	switch {
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return ErrAuth
	case status == http.StatusTooManyRequests:
		return ErrRateLimited
	case status >= 500:
		return ErrServer
	default:
		return ErrBadRequest
	}
}

// StatusError builds the APIError for an HTTP error response: the kind from
// the status, the provider's message from the body, and Retry-After.
func StatusError(provider string, status int, header http.Header, body []byte) *APIError {
	msg := ErrorMessage(body)
	if msg == "" {
		msg = http.StatusText(status)
	}
	if msg == "" {
		msg = "no error message"
	}
	return &APIError{
		Provider:   provider,
		Status:     status,
		Message:    msg,
		RetryAfter: RetryAfter(header, time.Now()),
		Kind:       KindForStatus(status),
	}
}

// ErrorMessage pulls the human-readable message out of an error body in the
// shapes providers use: {"error":{"message":…}} (OpenAI, Anthropic),
// {"error":"…"} (Ollama, llama.cpp), {"message":…} or {"detail":…}; anything
// else is returned as trimmed text.
func ErrorMessage(body []byte) string {
	body = bytes.TrimSpace(body)
	if len(body) == 0 {
		return ""
	}
	var v struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
		Detail  json.RawMessage `json:"detail"`
	}
	if json.Unmarshal(body, &v) == nil {
		if len(v.Error) > 0 {
			var s string
			if json.Unmarshal(v.Error, &s) == nil && s != "" {
				return truncate(s)
			}
			var inner struct {
				Message string `json:"message"`
				Type    string `json:"type"`
			}
			if json.Unmarshal(v.Error, &inner) == nil && inner.Message != "" {
				return truncate(inner.Message)
			}
		}
		if v.Message != "" {
			return truncate(v.Message)
		}
		if len(v.Detail) > 0 {
			var s string
			if json.Unmarshal(v.Detail, &s) == nil && s != "" {
				return truncate(s)
			}
			return truncate(string(v.Detail))
		}
	}
	return truncate(string(body))
}

// RetryAfter reads how long the provider asked us to wait: retry-after-ms
// (OpenAI), then Retry-After as delay-seconds or an HTTP date. Zero when
// absent or unparsable.
func RetryAfter(header http.Header, now time.Time) time.Duration {
	if header == nil {
		return 0
	}
	if ms := strings.TrimSpace(header.Get("Retry-After-Ms")); ms != "" {
		if f, err := strconv.ParseFloat(ms, 64); err == nil && f > 0 {
			return time.Duration(f * float64(time.Millisecond))
		}
	}
	return ParseRetryAfter(header.Get("Retry-After"), now)
}

// ParseRetryAfter parses a Retry-After value (RFC 9110: delay-seconds or an
// HTTP date). Zero when empty, unparsable or in the past.
func ParseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if secs, err := strconv.ParseFloat(v, 64); err == nil {
		if secs <= 0 {
			return 0
		}
		return time.Duration(secs * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 {
			return d
		}
	}
	return 0
}

func truncate(s string) string {
	s = strings.TrimSpace(s)
	if len(s) <= maxErrorMessage {
		return s
	}
	cut := maxErrorMessage
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
