package matrix

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"maunium.net/go/mautrix"

	"github.com/baton-agent/baton/internal/platform"
)

// apiError is a failed call, said in one line: the Matrix error code and
// message, or the HTTP status, or the network failure — never a page of
// HTML or a URL holding a sync token. It unwraps to the library's error,
// so errors.Is(err, mautrix.MForbidden) works.
type apiError struct {
	call string
	text string
	err  error
}

func (e *apiError) Error() string { return e.call + ": " + e.text }
func (e *apiError) Unwrap() error { return e.err }

// failure wraps a library error from call and gives it its class:
//
//   - 429 (M_LIMIT_EXCEEDED): RetryAfter the wait the server asks for
//     (retry_after_ms, or the Retry-After header);
//   - 401 M_UNKNOWN_TOKEN / M_MISSING_TOKEN: Refused;
//   - 404 M_UNRECOGNIZED (the server lacks the endpoint) when optional:
//     Unsupported;
//   - other 4xx: Permanent — the same request would be refused again;
//   - 5xx, a proxy's error page, the network: transient.
func failure(call string, err error, optional bool) error {
	if err == nil {
		return nil
	}
	var he mautrix.HTTPError
	if !errors.As(err, &he) {
		return &apiError{call: call, text: err.Error(), err: err}
	}
	status := 0
	if he.Response != nil {
		status = he.Response.StatusCode
	}
	e := &apiError{call: call, err: err}
	switch {
	case he.RespError != nil:
		e.text = fmt.Sprintf("%s (HTTP %d)", he.RespError.ErrCode, status)
		if he.RespError.Err != "" {
			e.text += ": " + he.RespError.Err
		}
	case status != 0:
		e.text = fmt.Sprintf("HTTP %d %s", status, http.StatusText(status))
	default:
		e.text = he.Message
		if he.WrappedError != nil {
			var ue *url.Error
			if errors.As(he.WrappedError, &ue) {
				e.text = ue.Op + " " + redactURL(ue.URL) + ": " + ue.Err.Error()
			} else {
				e.text = he.WrappedError.Error()
			}
		}
	}
	code := ""
	if he.RespError != nil {
		code = he.RespError.ErrCode
	}
	switch {
	case status == http.StatusTooManyRequests || code == mautrix.MLimitExceeded.ErrCode:
		return platform.RetryAfter(retryAfter(he), e)
	case code == mautrix.MUnknownToken.ErrCode || code == mautrix.MMissingToken.ErrCode || status == http.StatusUnauthorized:
		return platform.Refused(e)
	case optional && (code == mautrix.MUnrecognized.ErrCode || status == http.StatusNotFound && code == "" || status == http.StatusMethodNotAllowed):
		return platform.NotOffered(e) // the homeserver lacks the endpoint
	case status >= 400 && status < 500 && status != http.StatusRequestTimeout:
		return platform.Permanent(e)
	}
	return e
}

// retryAfter is the wait a 429 asks for: retry_after_ms in the body (the
// Matrix way), else the Retry-After header in seconds; 0 if neither.
func retryAfter(he mautrix.HTTPError) time.Duration {
	if he.RespError != nil {
		if ms, ok := he.RespError.ExtraData["retry_after_ms"].(float64); ok && ms > 0 {
			return time.Duration(ms) * time.Millisecond
		}
	}
	if he.Response != nil {
		if s, err := strconv.Atoi(he.Response.Header.Get("Retry-After")); err == nil && s > 0 {
			return time.Duration(s) * time.Second
		}
	}
	return 0
}

// redactURL keeps a URL's path and drops its query (sync tokens, filters).
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(url)"
	}
	u.RawQuery = ""
	return u.String()
}
