package cli

import (
	"bytes"
	"encoding/json"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/app"
	"github.com/baton-agent/baton/internal/gateway/control"
	"github.com/baton-agent/baton/internal/testutil"
)

// dyingGateway answers status like a gateway with the web chat live, and
// on a handoff request (after recording it in the store, if record says
// so) closes the connection without answering: a gateway killed between
// writing the handoff and telling the terminal.
func dyingGateway(t *testing.T, a *app.App, record bool) {
	t.Helper()
	ln, err := net.Listen("unix", control.SocketPath(a.Home))
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/status", func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(control.Status{Platforms: []control.Platform{{Name: "web", Live: true, State: "live", Home: "web:dm:main"}}})
	})
	mux.HandleFunc("POST /v1/handoffs", func(w http.ResponseWriter, r *http.Request) {
		var req control.HandoffRequest
		_ = json.NewDecoder(r.Body).Decode(&req)
		if record {
			if _, err := a.Store.RequestHandoff(r.Context(), req.SessionID, req.From, req.To); err != nil {
				t.Errorf("record the handoff: %v", err)
			}
		}
		if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
			conn.Close()
		}
	})
	srv := &http.Server{Handler: mux}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
}

// The gateway recorded the handoff and died before answering: the
// terminal does not say it failed (a restarted gateway would then carry
// it out and the session would live in two places); it follows the
// handoff in the store to its end.
func TestHandoffRecordedBeforeTheGatewayDied(t *testing.T) {
	a := testApp(t, nil)
	ctx := t.Context()
	s, _ := a.NewSession(ctx)
	dyingGateway(t, a, true)
	h := &Handoffs{App: a, Poll: 5 * time.Millisecond, LostWait: time.Minute}
	var out testutil.SyncBuffer
	type result struct {
		detach bool
		err    error
	}
	done := make(chan result, 1)
	go func() {
		d, err := h.Handoff(ctx, s.ID, "web", &out, nil)
		done <- result{d, err}
	}()
	testutil.Eventually(t, 0, func() bool { return strings.Contains(out.String(), "after it was recorded") }, "the terminal to say the handoff was recorded")
	// The restarted gateway carries it out.
	hf, err := a.Store.HandoffState(ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, err := a.Store.ClaimHandoff(ctx, hf.ID, "gateway@restarted", time.Minute); err != nil || !ok {
		t.Fatalf("claim: %v %v", ok, err)
	}
	if _, err := a.Store.SetHandoffDestination(ctx, hf.ID, "gateway@restarted", "web:thread:main:abc"); err != nil {
		t.Fatal(err)
	}
	if ok, err := a.Store.CompleteHandoff(ctx, hf.ID, "gateway@restarted"); err != nil || !ok {
		t.Fatalf("complete: %v %v", ok, err)
	}
	r := testutil.Receive(t, done, "the terminal's verdict")
	if r.err != nil || !r.detach {
		t.Fatalf("detach=%v err=%v; want the terminal to follow the completed handoff\n%s", r.detach, r.err, out.String())
	}
	if !strings.Contains(out.String(), "continues in the web chat.") {
		t.Errorf("output %q", out.String())
	}
}

// The gateway died before recording anything: the person is told that,
// plainly, not "EOF".
func TestHandoffNotRecordedBeforeTheGatewayDied(t *testing.T) {
	a := testApp(t, nil)
	ctx := t.Context()
	s, _ := a.NewSession(ctx)
	dyingGateway(t, a, false)
	h := &Handoffs{App: a}
	var out bytes.Buffer
	detach, err := h.Handoff(ctx, s.ID, "web", &out, nil)
	if detach || err == nil {
		t.Fatalf("detach=%v err=%v", detach, err)
	}
	if !strings.Contains(err.Error(), "nothing was recorded") || !strings.Contains(err.Error(), "baton gateway") {
		t.Errorf("error %q does not say what happened and what to do", err)
	}
}
