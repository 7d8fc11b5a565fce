package gateway_test

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/agent"
	"github.com/baton-agent/baton/internal/config"
	"github.com/baton-agent/baton/internal/gateway"
	"github.com/baton-agent/baton/internal/llm/llmtest"
	"github.com/baton-agent/baton/internal/llm/provider"
	"github.com/baton-agent/baton/internal/platform"
	"github.com/baton-agent/baton/internal/store"
	"github.com/baton-agent/baton/internal/store/sqlite"
	"github.com/baton-agent/baton/internal/testutil"
)

// soloChat is a service that allows one reader (as a Telegram token's
// getUpdates): it counts the runs going at once, and keeps what it was
// sent.
type soloChat struct {
	mu      sync.Mutex
	running int
	most    int // the most runs ever going at once
	runs    int
	recv    platform.Receiver
	sent    []string
	changed chan struct{}
}

func newSoloChat() *soloChat { return &soloChat{changed: make(chan struct{}, 1)} }

func (c *soloChat) Name() string { return "solo" }

func (c *soloChat) Run(ctx context.Context, r platform.Receiver) error {
	c.mu.Lock()
	c.running++
	c.runs++
	c.most = max(c.most, c.running)
	c.recv = r
	c.mu.Unlock()
	c.poke()
	r.Live()
	<-ctx.Done()
	c.mu.Lock()
	c.running--
	c.mu.Unlock()
	c.poke()
	return nil
}

func (c *soloChat) Send(_ context.Context, _ platform.Address, text string) (string, error) {
	c.mu.Lock()
	c.sent = append(c.sent, text)
	n := len(c.sent)
	c.mu.Unlock()
	c.poke()
	return strings.Repeat("m", n), nil
}

func (c *soloChat) poke() {
	select {
	case c.changed <- struct{}{}:
	default:
	}
}

// state is (runs going now, runs ever started, most at once, sent).
func (c *soloChat) state() (running, runs, most int, sent []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.running, c.runs, c.most, append([]string(nil), c.sent...)
}

// await waits until cond holds of the chat.
func (c *soloChat) await(t *testing.T, what string, cond func(running, runs int, sent []string) bool) {
	t.Helper()
	ctx := testutil.Context(t, testutil.Patience)
	for {
		running, runs, _, sent := c.state()
		if cond(running, runs, sent) {
			return
		}
		select {
		case <-c.changed:
		case <-time.After(10 * time.Millisecond): // the store changes without telling the chat
		case <-ctx.Done():
			t.Fatalf("gave up waiting for %s: running %d, runs %d, sent %q", what, running, runs, sent)
		}
	}
}

// replicaLease is short, so the tests see a lease change hands soon;
// nothing asserts how soon.
const replicaLease = 300 * time.Millisecond

// startReplica runs a gateway sharing st as replica id, with the chat
// (which allows one reader); stop ends it as SIGTERM would.
func startReplica(t *testing.T, st store.Store, owner store.User, p *agent.Agent, id string, chat *soloChat) (stop func()) {
	t.Helper()
	gw, err := gateway.New(gateway.Config{
		Store: st, Agent: p, OwnerID: owner.ID, Adapters: []platform.Adapter{chat},
		TrustedPlatforms: []string{"solo"}, Shared: true, Claimer: id, Lease: replicaLease,
		OfferWithin: -1, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- gw.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("replica %s: %v", id, err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

func replicaStore(t *testing.T) (store.Store, store.User, *agent.Agent) {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	owner, err := st.CreateUser(context.Background(), "owner")
	if err != nil {
		t.Fatal(err)
	}
	model := llmtest.Start(t)
	model.SetDefault(llmtest.EchoReply)
	p, err := provider.New(config.ModelConfig{Provider: config.ProviderOpenAI, BaseURL: model.URL, APIKey: "k", Name: "m"}, provider.Options{NoRetry: true})
	if err != nil {
		t.Fatal(err)
	}
	return st, owner, &agent.Agent{Provider: p, Store: st, Model: "m"}
}

// A replica runs a one-reader platform only while it holds its lead: the
// lead taken by another (after this one's lapsed) stops its run at the
// next heartbeat, and it runs again once the lead is free.
func TestReplicaRunsAOneReaderPlatformOnlyWhileItLeads(t *testing.T) {
	st, owner, ag := replicaStore(t)
	chat := newSoloChat()
	startReplica(t, st, owner, ag, "a", chat)
	chat.await(t, "the leader's run", func(running, _ int, _ []string) bool { return running == 1 })

	// Another replica holds the lead now, as if a's had lapsed.
	if err := st.ReleaseLease(t.Context(), "lead:solo", "a"); err != nil {
		t.Fatal(err)
	}
	if _, err := st.TakeLease(t.Context(), "lead:solo", "b", time.Hour); err != nil {
		t.Fatal(err)
	}
	chat.await(t, "the run to stop", func(running, _ int, _ []string) bool { return running == 0 })
	if err := st.ReleaseLease(t.Context(), "lead:solo", "b"); err != nil {
		t.Fatal(err)
	}
	chat.await(t, "the run again", func(running, runs int, _ []string) bool { return running == 1 && runs == 2 })
	if _, _, most, _ := chat.state(); most != 1 {
		t.Errorf("%d runs at once", most)
	}
}

// Two replicas with one chat each on the same account: one reads it at a
// time; when the leader stops, the other reads it.
func TestOneReplicaReadsAtATime(t *testing.T) {
	st, owner, ag := replicaStore(t)
	chat := newSoloChat() // one account, seen by both
	stopA := startReplica(t, st, owner, ag, "a", chat)
	chat.await(t, "a run", func(running, _ int, _ []string) bool { return running == 1 })
	startReplica(t, st, owner, ag, "b", chat)
	stopA()
	chat.await(t, "b's run", func(running, runs int, _ []string) bool { return running == 1 && runs == 2 })
	if _, _, most, _ := chat.state(); most != 1 {
		t.Errorf("%d runs of one account at once", most)
	}
	leases, err := st.Leases(t.Context())
	if err != nil || len(leases) != 1 || leases[0].Holder != "b" {
		t.Errorf("leases %+v (%v), want b leading solo", leases, err)
	}
}

// A message a dead replica heard and never answered (its claim lapsed)
// is taken over by a live one, answered once, and its turn run once.
func TestReplicaTakesOverWhatADeadOneHeld(t *testing.T) {
	st, owner, ag := replicaStore(t)
	// The live replica's comes first in the conversation: taken, it
	// would be answered first.
	held := store.Inbound{Platform: "solo", PlatformMsgID: "1", AddressKey: "solo:dm:1", SenderID: "1", Text: "still held",
		ClaimedBy: "alive", ClaimedUntil: time.Now().Add(time.Hour)}
	if _, _, err := st.AddInbound(t.Context(), held); err != nil {
		t.Fatal(err)
	}
	in := held
	in.PlatformMsgID, in.Text, in.ClaimedBy, in.ClaimedUntil = "2", "left behind", "dead", time.Now().Add(-time.Second)
	if _, _, err := st.AddInbound(t.Context(), in); err != nil {
		t.Fatal(err)
	}
	chat := newSoloChat()
	startReplica(t, st, owner, ag, "a", chat)
	chat.await(t, "the answer", func(_, _ int, sent []string) bool { return len(sent) == 1 })
	if _, _, _, sent := chat.state(); sent[0] != "echo: left behind" {
		t.Errorf("sent %q", sent)
	}
	s, err := st.BoundSession(t.Context(), "solo:dm:1")
	if err != nil {
		t.Fatal(err)
	}
	msgs, err := st.Transcript(t.Context(), s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 2 {
		t.Errorf("transcript %+v, want one turn", msgs)
	}
	pending, err := st.PendingInbound(t.Context(), 0, 0)
	if err != nil || len(pending) != 1 || pending[0].Text != "still held" {
		t.Errorf("pending %+v (%v): the live replica's message is its own", pending, err)
	}
}
