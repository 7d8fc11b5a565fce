package fakekit

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/testutil"
)

// echo is a tiny service: /echo answers its parameters, /poll waits until
// something is put in the box.
type echo struct {
	kit   *Server
	mu    sync.Mutex
	box   []string
	polls int // long polls begun
}

func (e *echo) polling() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.polls > 0
}

func newEcho(t *testing.T) *echo {
	e := &echo{}
	mux := http.NewServeMux()
	mux.HandleFunc("/echo", func(w http.ResponseWriter, r *http.Request) {
		p, err := Params(r)
		if err != nil {
			WriteJSON(w, 400, map[string]any{"error": err.Error()})
			return
		}
		WriteJSON(w, 200, p)
	})
	mux.HandleFunc("/put", func(w http.ResponseWriter, r *http.Request) {
		p, _ := Params(r)
		e.mu.Lock()
		e.box = append(e.box, p["v"])
		e.mu.Unlock()
		e.kit.Changed()
		WriteJSON(w, 200, true)
	})
	mux.HandleFunc("/poll", func(w http.ResponseWriter, r *http.Request) {
		e.mu.Lock()
		e.polls++
		e.mu.Unlock()
		e.kit.Changed()
		for {
			wake := e.kit.Changes()
			e.mu.Lock()
			n := len(e.box)
			e.mu.Unlock()
			if n > 0 {
				WriteJSON(w, 200, n)
				return
			}
			select {
			case <-r.Context().Done():
				return
			case <-wake:
			}
		}
	})
	e.kit = New(t, Config{Method: func(r *http.Request) string { return strings.TrimPrefix(r.URL.Path, "/") }}, mux)
	return e
}

func get(t *testing.T, s *Server, path string) (int, string, http.Header) {
	t.Helper()
	resp, err := http.Get(s.URL() + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}

func TestParamsEveryWayAndCallsRecorded(t *testing.T) {
	e := newEcho(t)
	post := func(ctype, body string) map[string]string {
		resp, err := http.Post(e.kit.URL()+"/echo?q=1", ctype, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]string
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
			t.Fatal(err)
		}
		return out
	}
	if p := post("application/json", `{"a":"x","n":7}`); p["a"] != "x" || p["n"] != "7" || p["q"] != "1" {
		t.Errorf("json params = %v", p)
	}
	if p := post("application/x-www-form-urlencoded", url.Values{"a": {"y z"}}.Encode()); p["a"] != "y z" {
		t.Errorf("form params = %v", p)
	}
	calls := e.kit.Calls()
	if len(calls) != 2 || calls[0].Method != "echo" || calls[0].Status != 200 || calls[1].Params["a"] != "y z" {
		t.Fatalf("calls = %+v", calls)
	}
	if n := e.kit.CallCount("ECHO"); n != 2 {
		t.Errorf("CallCount ignores case badly: %d", n)
	}
}

func TestFailNextQueuesAndUnsupported(t *testing.T) {
	e := newEcho(t)
	e.kit.FailNext("echo", 429, 1500*time.Millisecond)
	e.kit.FailNext("Echo", 500, 0)
	e.kit.Unsupported("put")
	status, body, hdr := get(t, e.kit, "/echo")
	if status != 429 || hdr.Get("Retry-After") != "2" || !strings.Contains(body, "Too Many Requests") {
		t.Errorf("first: %d %q retry-after %q", status, body, hdr.Get("Retry-After"))
	}
	if status, _, _ := get(t, e.kit, "/echo"); status != 500 {
		t.Errorf("second: %d, want 500", status)
	}
	if status, _, _ := get(t, e.kit, "/echo"); status != 200 {
		t.Errorf("third: %d, want 200 once the queue is spent", status)
	}
	if status, body, _ := get(t, e.kit, "/put"); status != 404 || !strings.Contains(body, "not supported") {
		t.Errorf("unsupported: %d %q", status, body)
	}
	var got []int
	for _, c := range e.kit.Calls() {
		got = append(got, c.Status)
	}
	if len(got) != 4 || got[0] != 429 || got[1] != 500 || got[2] != 200 || got[3] != 404 {
		t.Errorf("statuses recorded = %v", got)
	}
}

func TestWaitWakesOnChange(t *testing.T) {
	e := newEcho(t)
	done := make(chan error, 1)
	go func() {
		done <- e.kit.Wait(testutil.Context(t, 0), func() bool { return e.kit.CallCount("echo") == 1 })
	}()
	get(t, e.kit, "/echo")
	if err := testutil.Receive(t, done, "Wait to return"); err != nil {
		t.Fatalf("Wait = %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := e.kit.Wait(ctx, func() bool { return false }); err == nil {
		t.Fatal("Wait returned nil although its condition never held")
	}
}

func TestDownModes(t *testing.T) {
	e := newEcho(t)
	// A long poll in flight is cut when the service goes down.
	polled := make(chan error, 1)
	go func() {
		resp, err := http.Get(e.kit.URL() + "/poll")
		if err == nil {
			resp.Body.Close()
		}
		polled <- err
	}()
	if err := e.kit.Wait(testutil.Context(t, 0), e.polling); err != nil {
		t.Fatalf("the long poll never started: %v", err)
	}
	e.kit.Down()
	if err := testutil.Receive(t, polled, "the long poll to end"); err == nil {
		t.Error("a long poll survived the service going down")
	}
	status, body, _ := get(t, e.kit, "/echo")
	if status != 502 || !strings.Contains(body, "<title>502 Bad Gateway</title>") {
		t.Errorf("down: %d %q", status, body)
	}
	e.kit.DownWith(Hangup)
	if resp, err := http.Get(e.kit.URL() + "/echo"); err == nil {
		resp.Body.Close()
		t.Errorf("hangup mode answered %d", resp.StatusCode)
	}
	e.kit.Up()
	if status, _, _ := get(t, e.kit, "/echo"); status != 200 || e.kit.IsDown() {
		t.Errorf("up again: %d", status)
	}
	var statuses []int
	for _, c := range e.kit.Calls() {
		if c.Method == "echo" {
			statuses = append(statuses, c.Status)
		}
	}
	if len(statuses) != 3 || statuses[0] != 502 || statuses[1] != 0 || statuses[2] != 200 {
		t.Errorf("echo statuses = %v, want [502 0 200]", statuses)
	}
}

func TestHold(t *testing.T) {
	s := New(t, Config{}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		WriteJSON(w, http.StatusOK, map[string]any{"ok": true})
	}))
	release := s.Hold("/slow")
	answered := make(chan int, 1)
	go func() {
		resp, err := http.Get(s.URL() + "/slow")
		if err != nil {
			answered <- 0
			return
		}
		resp.Body.Close()
		answered <- resp.StatusCode
	}()
	ctx := testutil.Context(t, 0)
	if err := s.Wait(ctx, func() bool { return s.Held("/SLOW") == 1 }); err != nil {
		t.Fatal("the request never waited at the hold")
	}
	// Other methods pass meanwhile.
	resp, err := http.Get(s.URL() + "/fast")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if n := s.CallCount("/slow"); n != 0 {
		t.Errorf("the held request was recorded as answered: %d", n)
	}
	release()
	if got := testutil.Receive(t, answered, "the released answer"); got != http.StatusOK {
		t.Errorf("released request answered %d", got)
	}
	if s.Held("/slow") != 0 || s.CallCount("/slow") != 1 {
		t.Errorf("after release: held %d, calls %d", s.Held("/slow"), s.CallCount("/slow"))
	}
}

// A lost answer: the service does the work, the client hears nothing.
func TestLoseNext(t *testing.T) {
	e := newEcho(t)
	e.kit.LoseNext("PUT")
	resp, err := http.Get(e.kit.URL() + "/put?v=a")
	if err == nil {
		resp.Body.Close()
		t.Fatalf("the lost call was answered %d", resp.StatusCode)
	}
	e.mu.Lock()
	box := append([]string(nil), e.box...)
	e.mu.Unlock()
	if len(box) != 1 || box[0] != "a" {
		t.Errorf("the service did not carry out the lost call: %q", box)
	}
	if calls := e.kit.Calls(); len(calls) != 1 || calls[0].Status != 0 {
		t.Errorf("calls %+v, want one unanswered", calls)
	}
	// Only the next one is lost.
	if status, _, _ := get(t, e.kit, "/put?v=b"); status != http.StatusOK {
		t.Errorf("the call after answered %d", status)
	}
}
