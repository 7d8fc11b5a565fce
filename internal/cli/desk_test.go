package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/app"
	"github.com/baton-agent/baton/internal/config"
	"github.com/baton-agent/baton/internal/gateway/control"
	"github.com/baton-agent/baton/internal/store"
	"github.com/baton-agent/baton/internal/store/postgres"
	"github.com/baton-agent/baton/internal/store/postgres/pgtest"
	"github.com/baton-agent/baton/internal/testutil"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// deskApp is the terminal on a desk whose store is a Postgres database
// (url) it shares with a server; no gateway runs on the desk.
func deskApp(t *testing.T, url string) *app.App {
	t.Helper()
	home := t.TempDir()
	t.Setenv(config.HomeEnv, home)
	t.Setenv(app.StoreEnv, "")
	if err := os.WriteFile(home+"/config.yaml", []byte("model:\n  provider: offline\nstore: "+url+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	a, err := app.Open(t.Context(), home)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	return a
}

// serverStore is the server's own connection to the shared database.
func serverStore(t *testing.T, url string) *postgres.Store {
	t.Helper()
	st, err := postgres.Open(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// fakeServerGateway takes each handoff signalled to it, as a gateway on
// the server would, and ends it through end, sending its steps back as
// signals.
func fakeServerGateway(t *testing.T, st *postgres.Store, end func(ctx context.Context, h store.Handoff) control.Progress) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ch, err := st.Listen(ctx, control.TopicHandoffs)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		for range ch {
			pending, err := st.PendingHandoffs(ctx, "telegram")
			if err != nil {
				continue
			}
			for _, p := range pending {
				h, ok, err := st.ClaimHandoff(ctx, p.ID, "gateway@server", time.Minute)
				if err != nil || !ok {
					continue
				}
				_ = st.Notify(ctx, control.TopicProgress, control.ProgressPayload(control.Progress{HandoffID: h.ID, State: "running", Step: "claimed by the gateway"}))
				_ = st.Notify(ctx, control.TopicProgress, control.ProgressPayload(end(ctx, h)))
			}
		}
	}()
}

// With no gateway on the desk, /handoff records the handoff in the shared
// store and follows it over signals alone (the store is read once an
// hour here): the server's steps show, and its verdict — here a failure,
// with its reason — is what the terminal says.
func TestHandoffThroughTheStoreFollowsTheServer(t *testing.T) {
	url := pgtest.NewDatabase(t)
	a := deskApp(t, url)
	server := serverStore(t, url)
	fakeServerGateway(t, server, func(ctx context.Context, h store.Handoff) control.Progress {
		reason := "telegram has no home channel: type /sethome in the chat where handoffs should land"
		if ok, err := server.FailHandoff(ctx, h.ID, "gateway@server", reason); err != nil || !ok {
			t.Errorf("fail the handoff: %v %v", ok, err)
		}
		return control.Progress{HandoffID: h.ID, State: "failed", Step: "failed", Error: reason}
	})
	s, err := a.NewSession(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	h := &Handoffs{App: a, Poll: time.Hour, PickupWait: time.Hour, LostWait: time.Hour}
	var out testutil.SyncBuffer
	detach, err := h.Handoff(t.Context(), s.ID, "telegram", &out, nil)
	if detach || !errors.Is(err, ErrHandoffFailed) || !strings.Contains(err.Error(), "has no home channel") {
		t.Fatalf("detach %v, err %v\n%s", detach, err, out.String())
	}
	for _, want := range []string{"waits in the store for a gateway elsewhere to take it", "  claimed by the gateway\n"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the terminal did not say %q:\n%s", want, out.String())
		}
	}
}

// A handoff nobody takes: the terminal says what to check and where,
// and once it stops waiting withdraws it, so no gateway starting later
// moves the session behind the person's back.
func TestHandoffThroughTheStoreNobodyTakes(t *testing.T) {
	a := deskApp(t, pgtest.NewDatabase(t))
	s, err := a.NewSession(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	h := &Handoffs{App: a, Poll: time.Hour, PickupWait: time.Millisecond, LostWait: 20 * time.Millisecond}
	var out testutil.SyncBuffer
	detach, err := h.Handoff(t.Context(), s.ID, "telegram", &out, nil)
	if detach || err == nil || !strings.Contains(err.Error(), "withdrawn before any gateway took it") {
		t.Fatalf("detach %v, err %v\n%s", detach, err, out.String())
	}
	for _, want := range []string{
		"No gateway has taken it after",
		"the gateway runs there (`baton gateway status`), with this same store",
		"telegram is enabled and live in it, with a home channel",
		"No gateway took it within",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the terminal did not say %q:\n%s", want, out.String())
		}
	}
	hf, err := a.Store.HandoffState(t.Context(), s.ID)
	if err != nil || hf.State != store.HandoffFailed {
		t.Fatalf("the handoff nobody took is %+v (%v), want withdrawn", hf, err)
	}
}

// A terminal on the desk, idle at its prompt in no conversation, is told
// at once (the store is read once an hour here: by the signal) when a
// chat on the server hands a session off to the terminal, and takes it
// with /resume.
func TestIdleTerminalIsToldOfAHandoffFromAnotherMachine(t *testing.T) {
	url := pgtest.NewDatabase(t)
	a := deskApp(t, url)
	server := serverStore(t, url)
	typed, keys := io.Pipe()
	out := &syncBuffer{}
	r, err := New(Config{App: a, Out: out, Reader: NewScriptReader(typed, out), Interrupts: make(chan os.Signal), WatchEvery: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- r.Run(t.Context()) }()
	t.Cleanup(func() { keys.Close(); <-done })
	testutil.Eventually(t, testutil.Patience, func() bool { return strings.Contains(out.String(), prompt) }, "the prompt")

	// On the server: a Telegram chat's session, handed off to the terminal.
	s, err := server.CreateSession(t.Context(), store.Session{OwnerID: a.Owner.ID, Platform: "telegram", Holder: "telegram:dm:42"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := server.RequestHandoffTo(t.Context(), s.ID, "telegram", TerminalPlatform, ""); err != nil {
		t.Fatal(err)
	}
	if err := server.Notify(t.Context(), control.TopicTerminal, s.ID); err != nil {
		t.Fatal(err)
	}
	want := "Waiting for you here: session " + s.ID[:8] + ", handed off from Telegram. /resume " + s.ID[:8] + " continues it here."
	testutil.Eventually(t, testutil.Patience, func() bool { return strings.Contains(out.String(), want) }, "the terminal told in:\n"+out.String())
	fmt.Fprintln(keys, "/resume "+s.ID[:8])
	testutil.Eventually(t, testutil.Patience, func() bool {
		return strings.Contains(out.String(), "Brought session "+s.ID[:8]+" here from Telegram")
	}, "the session brought here in:\n"+out.String())
}
