package gateway_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/gateway/control"
	"github.com/baton-agent/baton/internal/store"
	"github.com/baton-agent/baton/internal/store/postgres"
	"github.com/baton-agent/baton/internal/store/postgres/pgtest"
)

// BenchmarkHandoffPickupOverSignals is BenchmarkHandoffPickup for the
// desk and the server: the gateway's store is a Postgres database, and
// the terminal reaches it only through that database, on a connection of
// its own (as from another machine): it records the handoff and signals
// it (NOTIFY), then follows its progress over LISTEN. The gateway reads
// the store for work once an hour, so only the signal wakes it. Each
// iteration is 200 handoffs of separate sessions; it reports p50 and p99
// of the pickup — from the request to the terminal hearing that a
// gateway claimed it — and of the first send, as the page sees it (the
// figure BenchmarkHandoffPickup reports over the socket).
func BenchmarkHandoffPickupOverSignals(b *testing.B) {
	url := pgtest.NewDatabase(b)
	r := newRig(b, rigOpts{storeURL: url, pollEvery: time.Hour, quiet: true})
	ctx := context.Background()
	desk, err := postgres.Open(ctx, url)
	if err != nil {
		b.Fatal(err)
	}
	defer desk.Close()
	lctx, stop := context.WithCancel(ctx)
	defer stop()
	progress, err := desk.Listen(lctx, control.TopicProgress)
	if err != nil {
		b.Fatal(err)
	}
	// until waits for handoff id to reach state, as the terminal hears it.
	until := func(id int64, state string) {
		timeout := time.After(15 * time.Second)
		for {
			select {
			case s := <-progress:
				if p, err := control.ParseProgress(s.Payload); err == nil && p.HandoffID == id && p.State == state {
					return
				}
			case <-timeout:
				b.Fatalf("handoff %d never %s", id, state)
			}
		}
	}
	pg := r.openPage(b)
	const n = 200
	for b.Loop() {
		picked := make([]time.Duration, 0, n)
		first := make([]time.Duration, 0, n)
		for range n {
			sess := r.terminalSession(b)
			start := time.Now()
			h, err := desk.RequestHandoffTo(ctx, sess.ID, "cli", "web", "")
			if err != nil {
				b.Fatal(err)
			}
			if err := desk.Notify(ctx, control.TopicHandoffs, control.HandoffPayload(h.ID)); err != nil {
				b.Fatal(err)
			}
			until(h.ID, string(store.HandoffRunning))
			picked = append(picked, time.Since(start))
			pg.await("first send", typ("message"))
			first = append(first, time.Since(start))
			until(h.ID, string(store.HandoffCompleted))
		}
		slices.Sort(picked)
		slices.Sort(first)
		b.ReportMetric(ms(picked[n/2]), "pickup-p50-ms")
		b.ReportMetric(ms(picked[n*99/100]), "pickup-p99-ms")
		b.ReportMetric(ms(first[n/2]), "first-send-p50-ms")
		b.ReportMetric(ms(first[n*99/100]), "first-send-p99-ms")
	}
}

// A handoff recorded in a shared store by a process on another machine
// is taken when it is signalled: the gateway reads the store for work
// only once an hour here, and the first message still reaches the page;
// its progress comes back to that process as signals, and a handoff to
// the terminal is announced to terminals.
func TestHandoffSignalledThroughTheStore(t *testing.T) {
	url := pgtest.NewDatabase(t)
	r := newRig(t, rigOpts{storeURL: url, pollEvery: time.Hour})
	desk, err := postgres.Open(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer desk.Close()
	signals, err := desk.Listen(t.Context(), control.TopicProgress, control.TopicTerminal)
	if err != nil {
		t.Fatal(err)
	}
	pg := r.openPage(t)
	sess := r.terminalSession(t)
	h, err := desk.RequestHandoffTo(t.Context(), sess.ID, "cli", "web", "")
	if err != nil {
		t.Fatal(err)
	}
	if err := desk.Notify(t.Context(), control.TopicHandoffs, control.HandoffPayload(h.ID)); err != nil {
		t.Fatal(err)
	}
	pg.await("the first message", typ("message"))
	var steps []string
	dest := ""
	for done := false; !done; {
		select {
		case s := <-signals:
			p, err := control.ParseProgress(s.Payload)
			if err != nil || p.HandoffID != h.ID {
				continue
			}
			steps = append(steps, p.Step)
			done, dest = p.Terminal(), p.Destination
		case <-time.After(15 * time.Second):
			t.Fatalf("the handoff's progress stopped at %q", steps)
		}
	}
	if steps[0] != "claimed by the gateway" || steps[len(steps)-1] != "completed" {
		t.Fatalf("progress heard: %q", steps)
	}

	// /handoff cli from the page: terminals anywhere hear of it.
	pg.send(map[string]any{"type": "say", "key": dest, "text": "/handoff cli", "id": "p1"})
	for {
		select {
		case s := <-signals:
			if s.Topic == control.TopicTerminal {
				if s.Payload != sess.ID {
					t.Fatalf("a handoff to the terminal announced for %q, want %q", s.Payload, sess.ID)
				}
				return
			}
		case <-time.After(15 * time.Second):
			t.Fatal("no handoff to the terminal announced")
		}
	}
}
