package matrixtest

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/platform/fakekit"
)

func TestMethod(t *testing.T) {
	cases := []struct {
		method, path, body, want string
	}{
		{"GET", "/_matrix/client/v3/sync", "", "sync"},
		{"GET", "/_matrix/client/v3/account/whoami", "", "whoami"},
		{"PUT", "/_matrix/client/v3/rooms/!r:x/send/m.room.message/1", `{"body":"hi"}`, "send"},
		{"PUT", "/_matrix/client/v3/rooms/!r:x/send/m.room.message/2", `{"m.relates_to":{"rel_type":"m.replace"}}`, "edit"},
		{"PUT", "/_matrix/client/v3/rooms/!r:x/typing/@b:x", `{}`, "typing"},
		{"POST", "/_matrix/client/v3/join/!r:x", `{}`, "join"},
		{"POST", "/_matrix/client/v3/rooms/!r:x/leave", `{}`, "leave"},
		{"GET", "/_matrix/client/versions", "", "/_matrix/client/versions"},
		{"POST", "/_matrix/media/v3/upload", "", "upload"},
		{"GET", "/_matrix/client/v1/media/download/localhost/abc", "", "download"},
		{"GET", "/_matrix/media/v3/download/localhost/abc/a.pdf", "", "download"},
		{"GET", "/_matrix/client/v1/media/config", "", "/_matrix/client/v1/media/config"},
	}
	for _, c := range cases {
		r := httptest.NewRequest(c.method, c.path, strings.NewReader(c.body))
		if got := Method(r); got != c.want {
			t.Errorf("%s %s = %q, want %q", c.method, c.path, got, c.want)
		}
		if c.body != "" {
			params, err := fakekit.ParseParams(r)
			if err != nil || params == nil {
				t.Errorf("%s: the body was not left readable: %v", c.path, err)
			}
		}
	}
}

func TestWriteError(t *testing.T) {
	w := httptest.NewRecorder()
	WriteError(w, nil, fakekit.Failure{Status: 429, RetryAfter: 1500 * time.Millisecond})
	var body map[string]any
	_ = json.Unmarshal(w.Body.Bytes(), &body)
	if w.Code != 429 || body["errcode"] != "M_LIMIT_EXCEEDED" || body["retry_after_ms"] != float64(1500) || w.Header().Get("Retry-After") != "2" {
		t.Errorf("429: %d %v %q", w.Code, body, w.Header().Get("Retry-After"))
	}
	w = httptest.NewRecorder()
	WriteError(w, nil, fakekit.Failure{Status: 404, Unsupported: true})
	if !strings.Contains(w.Body.String(), "M_UNRECOGNIZED") {
		t.Errorf("unsupported: %s", w.Body.String())
	}
	w = httptest.NewRecorder()
	WriteError(w, nil, fakekit.Failure{Status: http.StatusBadGateway})
	if w.Code != 502 || !strings.Contains(w.Body.String(), "<html>") {
		t.Errorf("502: %d %s", w.Code, w.Body.String())
	}
}
