package matrixtest

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/baton-agent/baton/internal/platform/fakekit"
)

// Proxy stands between an adapter and the homeserver, passing everything
// on, with the kit's failures on demand: FailNext(method, …), LoseNext
// (method: passed on, the answer lost), Unsupported(method), Down and Up. Methods are named after the API call: "sync",
// "send" (a message), "edit" (a message replacing another), "typing",
// "whoami", "join", "leave", "messages", "upload" (a file to the media
// repository), "download" (a file's bytes, authenticated or not);
// anything else by its path.
type Proxy struct {
	*fakekit.Server
}

// NewProxy starts a proxy to hs on a free loopback port, closed when tb
// ends.
func NewProxy(tb testing.TB, hs *Homeserver) *Proxy {
	tb.Helper()
	target, err := url.Parse(hs.URL())
	if err != nil {
		tb.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.ErrorHandler = func(w http.ResponseWriter, _ *http.Request, err error) {
		w.WriteHeader(http.StatusBadGateway)
		_, _ = io.WriteString(w, badGateway)
	}
	return &Proxy{fakekit.New(tb, fakekit.Config{Method: Method, Failure: WriteError}, rp)}
}

const badGateway = "<html><head><title>502 Bad Gateway</title></head><body><h1>502 Bad Gateway</h1></body></html>\n"

// Method names a client-server API request (see Proxy).
func Method(r *http.Request) string {
	if m, ok := strings.CutPrefix(r.URL.Path, "/_matrix/media/"); ok {
		if _, rest, _ := strings.Cut(m, "/"); strings.HasPrefix(rest, "upload") || strings.HasPrefix(rest, "download/") {
			return strings.SplitN(rest, "/", 2)[0]
		}
		return r.URL.Path
	}
	p := strings.TrimPrefix(r.URL.Path, "/_matrix/client/")
	parts := strings.Split(p, "/")
	if len(parts) > 1 {
		parts = parts[1:] // the version: v3, r0
	}
	switch {
	case len(parts) >= 2 && parts[0] == "media" && parts[1] == "download":
		return "download"
	case len(parts) == 1 && parts[0] == "sync":
		return "sync"
	case len(parts) == 2 && parts[0] == "account" && parts[1] == "whoami":
		return "whoami"
	case len(parts) >= 1 && parts[0] == "join":
		return "join"
	case len(parts) >= 3 && parts[0] == "rooms":
		switch parts[2] {
		case "send":
			if isEdit(r) {
				return "edit"
			}
			return "send"
		case "typing", "join", "leave", "messages", "invite":
			return parts[2]
		}
	}
	return r.URL.Path
}

// isEdit peeks at a send's body for an m.replace relation, leaving the
// body readable.
func isEdit(r *http.Request) bool {
	if r.Body == nil {
		return false
	}
	b, err := io.ReadAll(r.Body)
	r.Body.Close()
	r.Body = io.NopCloser(bytes.NewReader(b))
	return err == nil && bytes.Contains(b, []byte(`"m.replace"`))
}

// WriteError answers a failure the way a homeserver does: a Matrix error
// (errcode, error; retry_after_ms for a 429), or for 502–504 the HTML
// page of a proxy in front of a dead server.
func WriteError(w http.ResponseWriter, r *http.Request, f fakekit.Failure) {
	if f.Status >= 502 && f.Status <= 504 {
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(f.Status)
		_, _ = io.WriteString(w, strings.ReplaceAll(badGateway, "502 Bad Gateway", fmt.Sprintf("%d %s", f.Status, http.StatusText(f.Status))))
		return
	}
	body := map[string]any{"errcode": "M_UNKNOWN", "error": http.StatusText(f.Status)}
	switch {
	case f.Unsupported:
		body["errcode"], body["error"] = "M_UNRECOGNIZED", "Unrecognized request"
	case f.Status == http.StatusTooManyRequests:
		body["errcode"], body["error"] = "M_LIMIT_EXCEEDED", "Too many requests"
		if f.RetryAfter > 0 {
			body["retry_after_ms"] = f.RetryAfter.Milliseconds()
			w.Header().Set("Retry-After", strconv.Itoa(int((f.RetryAfter.Seconds() + 0.999))))
		}
	case f.Status == http.StatusForbidden:
		body["errcode"], body["error"] = "M_FORBIDDEN", "You are not allowed to send messages here"
	case f.Status == http.StatusUnauthorized:
		body["errcode"], body["error"] = "M_UNKNOWN_TOKEN", "Unknown access token"
	case f.Status == http.StatusBadRequest:
		body["errcode"] = "M_BAD_JSON"
	case f.Status == http.StatusNotFound:
		body["errcode"] = "M_NOT_FOUND"
	case f.Status == http.StatusRequestEntityTooLarge:
		body["errcode"] = "M_TOO_LARGE"
	}
	fakekit.WriteJSON(w, f.Status, body)
}
