package cli

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/agent"
	"github.com/baton-agent/baton/internal/gateway"
	"github.com/baton-agent/baton/internal/gateway/control"
	"github.com/baton-agent/baton/internal/platform"
	"github.com/baton-agent/baton/internal/platform/web"
	"github.com/baton-agent/baton/internal/store"
	"github.com/baton-agent/baton/internal/testutil"
)

func TestChoose(t *testing.T) {
	for _, c := range []struct {
		in   string
		n    int
		want int
		ok   bool
	}{{"", 3, 0, true}, {"y", 3, 0, true}, {"YES", 1, 0, true}, {"2", 3, 1, true}, {"3", 3, 2, true},
		{"4", 3, 0, false}, {"0", 3, 0, false}, {"n", 3, 0, false}, {"later", 2, 0, false}} {
		got, ok := choose(c.in, c.n)
		if got != c.want || ok != c.ok {
			t.Errorf("choose(%q, %d) = %d, %v; want %d, %v", c.in, c.n, got, ok, c.want, c.ok)
		}
	}
}

// A handoff nobody has taken when the terminal stops waiting is withdrawn:
// it can no longer move the session later.
func TestSettleWithdrawsAnUntakenHandoff(t *testing.T) {
	app := testApp(t, nil)
	ctx := t.Context()
	s, _ := app.NewSession(ctx)
	h := &Handoffs{App: app}
	hf, err := app.Store.RequestHandoff(ctx, s.ID, "cli", "web")
	if err != nil {
		t.Fatal(err)
	}
	_, err = h.settle(ctx, hf.ID)
	if err == nil || !strings.Contains(err.Error(), "withdrawn") {
		t.Fatalf("settle of a pending handoff: %v", err)
	}
	if got, _ := app.Store.GetHandoff(ctx, hf.ID); got.State != store.HandoffFailed {
		t.Fatalf("state after withdrawal %s", got.State)
	}
	// One a gateway already tried (it may be bound and greeted at its
	// destination) is not withdrawn: it is "not confirmed".
	hfr, _ := app.Store.RequestHandoff(ctx, s.ID, "cli", "web")
	app.Store.ClaimHandoff(ctx, hfr.ID, "gateway@dead", time.Millisecond)
	app.Store.SetHandoffDestination(ctx, hfr.ID, "gateway@dead", "web:thread:main:x")
	if n, _, _ := app.Store.ReapHandoffs(ctx, time.Now().Add(time.Minute)); n != 1 {
		t.Fatal("the dead claim was not put back to pending")
	}
	if _, err = h.settle(ctx, hfr.ID); err == nil || !strings.Contains(err.Error(), "not confirmed") {
		t.Fatalf("settle of a retried handoff: %v", err)
	}
	if got, _ := app.Store.GetHandoff(ctx, hfr.ID); got.State != store.HandoffPending {
		t.Fatalf("a retried handoff was withdrawn: %s", got.State)
	}
	if _, ok, _ := app.Store.ClaimHandoff(ctx, hfr.ID, "gateway@live", time.Minute); ok {
		app.Store.FailHandoff(ctx, hfr.ID, "gateway@live", "test over")
	}

	// One a gateway is carrying out is "not confirmed", not failed.
	hf2, _ := app.Store.RequestHandoff(ctx, s.ID, "cli", "web")
	if _, ok, err := app.Store.ClaimHandoff(ctx, hf2.ID, "gateway@x", time.Minute); err != nil || !ok {
		t.Fatal(err)
	}
	_, err = h.settle(ctx, hf2.ID)
	if err == nil || !strings.Contains(err.Error(), "not confirmed") {
		t.Fatalf("settle of a running handoff: %v", err)
	}
	// One that completed meanwhile is reported as done.
	if ok, _ := app.Store.CompleteHandoff(ctx, hf2.ID, "gateway@x"); !ok {
		t.Fatal("complete")
	}
	p, err := h.settle(ctx, hf2.ID)
	if err != nil || p.State != "completed" {
		t.Fatalf("settle of a completed handoff: %+v %v", p, err)
	}
}

func TestStartupPicksUpWaitingHandoff(t *testing.T) {
	app := testApp(t, nil)
	ctx := t.Context()
	h := &Handoffs{App: app}
	var ids []string
	for _, title := range []string{"first trip", "second trip"} {
		s, _ := app.NewSession(ctx)
		app.Store.SetTitle(ctx, s.ID, title)
		if _, err := app.Store.RequestHandoff(ctx, s.ID, "telegram", TerminalPlatform); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, s.ID)
	}
	var out bytes.Buffer
	// "n" stays: nothing is picked up.
	got, err := h.Startup(ctx, &out, "", func(string) (string, error) { return "n", nil })
	if err != nil || got != "" {
		t.Fatalf("declined: %q %v", got, err)
	}
	if w, _ := h.Waiting(ctx); len(w) != 2 {
		t.Fatalf("declining took a handoff: %d left", len(w))
	}
	for _, want := range []string{"1. \"first trip\", handed off from Telegram", "2. \"second trip\""} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("list lacks %q:\n%s", want, out.String())
		}
	}
	// "2" picks the second; it is no longer waiting.
	got, err = h.Startup(ctx, io.Discard, "", func(string) (string, error) { return "2", nil })
	if err != nil || got != ids[1] {
		t.Fatalf("picked %q %v, want %s", got, err, ids[1])
	}
	if st, _ := app.Store.HandoffState(ctx, ids[1]); st.State != store.HandoffCompleted {
		t.Errorf("picked handoff %s", st.State)
	}
	// Enter takes the first (and only remaining).
	got, _ = h.Startup(ctx, io.Discard, "", func(string) (string, error) { return "", nil })
	if got != ids[0] {
		t.Fatalf("Enter picked %q, want %s", got, ids[0])
	}
	if w, _ := h.Waiting(ctx); len(w) != 0 {
		t.Errorf("%d still waiting", len(w))
	}
}

// The terminal's refusals, against a real gateway with only the web chat
// and no home channel.
func TestHandoffRefusalsFromTheTerminal(t *testing.T) {
	app := testApp(t, nil)
	ctx := t.Context()
	s, _ := app.NewSession(ctx)
	h := &Handoffs{App: app}

	_, err := h.Handoff(ctx, s.ID, "web", io.Discard, nil)
	if !errors.Is(err, control.ErrNoGateway) && (err == nil || !strings.Contains(err.Error(), "baton gateway")) {
		t.Fatalf("no gateway: %v", err)
	}
	// A name that is no place is told as such, before any gateway is
	// asked for or offered.
	if _, err := h.Handoff(ctx, s.ID, "nowhere", io.Discard, func(string) (string, error) {
		t.Fatal("offered a gateway for an unknown place")
		return "", nil
	}); !errors.Is(err, ErrUnknownPlace) || !strings.Contains(err.Error(), "whatsapp") {
		t.Fatalf("/handoff nowhere without a gateway: %v", err)
	}
	declined := false
	h.StartGateway = func(context.Context) error { t.Fatal("started a gateway after a no"); return nil }
	_, err = h.Handoff(ctx, s.ID, "web", io.Discard, func(string) (string, error) { declined = true; return "n", nil })
	if !declined || err == nil || !strings.Contains(err.Error(), "start one with `baton gateway`") {
		t.Fatalf("declined start: asked %v, %v", declined, err)
	}

	w, err := web.New(web.Config{Listen: "127.0.0.1:0", Token: strings.Repeat("t", 32), Transcripts: gateway.Transcripts{Store: app.Store, OwnerID: app.Owner.ID}})
	if err != nil {
		t.Fatal(err)
	}
	gw, err := gateway.New(gateway.Config{Store: app.Store, Agent: &agent.Agent{Provider: app.Provider, Store: app.Store},
		Adapters: []platform.Adapter{w}, OwnerID: app.Owner.ID, TrustedPlatforms: []string{"web"},
		Socket: control.SocketPath(app.Home), Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	gctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- gw.Run(gctx) }()
	t.Cleanup(func() { cancel(); <-done })
	testutil.Eventually(t, 0, func() bool {
		st, err := control.NewClient(control.SocketPath(app.Home)).Status(ctx)
		if err != nil {
			return false
		}
		p, ok := st.Platform("web")
		return ok && p.Live
	}, "the gateway's web chat to be live")
	for platformName, want := range map[string]string{
		"telegram": "Telegram is not set up in the gateway (set up there: web)",
		"nowhere":  `unknown place "nowhere": the places are cli (the terminal), web, telegram,`,
		"web":      "web has no home channel: type /sethome",
		"cli":      "already in the terminal",
		"":         "usage: /handoff <platform>",
	} {
		detach, err := h.Handoff(ctx, s.ID, platformName, io.Discard, nil)
		if detach || err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("/handoff %q: detach=%v, %v; want %q", platformName, detach, err, want)
		}
	}
	if st, _ := app.Store.HandoffState(ctx, s.ID); st.State != store.HandoffNone {
		t.Errorf("a refused handoff left state %s", st.State)
	}
}

// Starting a gateway from /handoff names its log by its real path.
func TestStartingTheGatewayNamesItsLog(t *testing.T) {
	app := testApp(t, nil)
	ctx := t.Context()
	s, _ := app.NewSession(ctx)
	log := filepath.Join(app.Home, "gateway.log")
	failed := errors.New("not in this test")
	h := &Handoffs{App: app, GatewayLog: log, StartGateway: func(context.Context) error { return failed }}
	var out bytes.Buffer
	_, err := h.Handoff(ctx, s.ID, "web", &out, func(string) (string, error) { return "y", nil })
	if !errors.Is(err, failed) || !strings.Contains(out.String(), "(its log: "+log+")") || strings.Contains(out.String(), "$BATON_HOME") {
		t.Fatalf("%v; said:\n%s", err, out.String())
	}
}
