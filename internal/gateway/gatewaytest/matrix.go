package gatewaytest

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/platform"
	"github.com/baton-agent/baton/internal/platform/matrix"
	"github.com/baton-agent/baton/internal/platform/matrix/matrixtest"
	"github.com/baton-agent/baton/internal/testutil"
)

// Matrix is a real homeserver (hs, shared by a package's tests; each
// scenario registers its own people and home room) reached through a
// proxy that can fail calls: a handoff opens a thread under a root event.
func Matrix(hs *matrixtest.Shared) Harness { return matrixHarness{hs: hs} }

type matrixHarness struct{ hs *matrixtest.Shared }

func (matrixHarness) Caps() Caps {
	return Caps{Threads: true, Refuses: true, ThreadRoot: true, Drops: true, CatchesUp: true}
}

func (h matrixHarness) Start(t testing.TB) Service {
	t.Helper()
	hs := h.hs.Need(t)
	w, err := hs.NewWorld(testutil.Context(t, 0))
	if err != nil {
		t.Fatal(err)
	}
	return &matrixService{world: w, proxy: matrixtest.NewProxy(t, hs), t: t}
}

type matrixService struct {
	world *matrixtest.World
	proxy *matrixtest.Proxy
	t     testing.TB
}

func (s *matrixService) adapters(mem platform.Memory) []platform.Adapter {
	return s.adaptersWith(mem, s.world.Bot.Token)
}

func (s *matrixService) adaptersWith(mem platform.Memory, token string) []platform.Adapter {
	a, err := matrix.New(matrix.Config{
		HomeserverURL: s.proxy.URL(), UserID: s.world.Bot.ID, AccessToken: token,
		Owners: []string{s.world.Owner.ID}, SyncTimeout: 2 * time.Second, Memory: mem, Logger: quiet(),
	})
	if err != nil {
		s.t.Fatal(err)
	}
	return []platform.Adapter{a}
}

// Setup: the home is written as the README shows it, the room id with its
// ':', and read as the daemon reads gateway.homes.
func (s *matrixService) Setup() Setup {
	written := "matrix:group:" + s.world.Room
	home, err := platform.ParseWritten(written, matrix.Spec().CheckAddress)
	if err != nil {
		s.t.Fatalf("the home as written, %s: %v", written, err)
	}
	return Setup{
		Platform: matrix.Name, Display: "Matrix",
		Adapters:      s.adapters,
		Owners:        []string{s.world.Owner.ID},
		Home:          home,
		RefusalReason: "M_FORBIDDEN",
	}
}

func (s *matrixService) Say(t testing.TB, at platform.Address, who Person, text string) {
	t.Helper()
	u := s.world.Owner
	if who == Stranger {
		u = s.world.Stranger
	}
	ctx := testutil.Context(t, 0)
	var err error
	if at.Thread != "" {
		_, err = u.SayInThread(ctx, at.Chat, at.Thread, "", text)
	} else {
		_, err = u.Say(ctx, at.Chat, text)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// Shown is the bot's messages in the home room as the owner's client
// shows them (edits applied); nothing while the homeserver does not
// answer.
func (s *matrixService) Shown() []Shown {
	msgs, err := s.world.Owner.Messages(context.Background(), s.world.Room)
	if err != nil {
		return nil
	}
	var out []Shown
	for _, m := range msgs {
		if m.Sender == s.world.Bot.ID {
			out = append(out, Shown{At: platform.Address{Platform: matrix.Name, Chat: s.world.Room, Thread: m.Thread}, Text: m.Body})
		}
	}
	return out
}

func (s *matrixService) Command(line string) string { return line }
func (s *matrixService) Mention(text string) string { return text }

// RefuseThreads: the homeserver refuses the thread's root, the first
// event the handoff sends.
func (s *matrixService) RefuseThreads() { s.proxy.FailNext("send", 403, 0) }

func (s *matrixService) Edits() int { return s.proxy.CallCount("edit") }

// ThreadName is the body of the thread's root event.
func (s *matrixService) ThreadName(at platform.Address) string {
	msgs, _ := s.world.Owner.Messages(context.Background(), s.world.Room)
	for _, m := range msgs {
		if m.EventID == at.Thread {
			return m.Body
		}
	}
	return ""
}

func (s *matrixService) TypingShownAt(platform.Address) bool { return s.proxy.CallCount("typing") > 0 }

// LoseNextPost loses the answer to the next event sent (a handoff's thread
// root): it is sent again under the same transaction id.
func (s *matrixService) LoseNextPost() { s.proxy.LoseNext("send") }

func (s *matrixService) RefusedCredentials() (func(platform.Memory) []platform.Adapter, string) {
	const wrong = "syt_refused_access_token"
	return func(mem platform.Memory) []platform.Adapter { return s.adaptersWith(mem, wrong) }, wrong
}

// DropDuringHandoff cuts every connection to the homeserver once the
// thread's root is sent, and brings it back once the adapter met the cut;
// the adapter must come back by itself: a sync answered after the cut.
// (Whether it asks who it is again depends on whether its own sync retry
// came before the homeserver was back, or after.)
func (s *matrixService) DropDuringHandoff(t testing.TB) func(testing.TB) {
	return func(t testing.TB) {
		t.Helper()
		testutil.Eventually(t, testutil.Patience, func() bool { return s.proxy.CallCount("send") >= 1 }, "the thread's root sent")
		calls := len(s.proxy.Calls())
		s.proxy.DownWith(0)
		testutil.Eventually(t, testutil.Patience, func() bool { return len(s.proxy.Calls()) > calls }, "the adapter to meet the cut")
		up := time.Now()
		s.proxy.Up()
		testutil.Eventually(t, testutil.Patience, func() bool {
			for _, c := range s.proxy.Calls() {
				if c.Method == "sync" && c.Start.After(up) && c.Status == http.StatusOK {
					return true
				}
			}
			return false
		}, "the adapter back after the cut")
	}
}

// Closed: no sync request is left open.
func (s *matrixService) Closed() bool {
	for _, c := range s.proxy.Calls() {
		if c.Method == "sync" && c.End.IsZero() {
			return false
		}
	}
	return true
}

// Forget: the homeserver keeps the room's history, so nothing is left to
// forget; after checks that the new adapter's first sync went on from the
// token the last run stored in the gateway's store, not from scratch.
func (s *matrixService) Forget(testing.TB) func(testing.TB) {
	before := len(s.proxy.Calls())
	return func(t testing.TB) {
		t.Helper()
		for _, c := range s.proxy.Calls()[before:] {
			if c.Method == "sync" {
				if c.Params["since"] == "" {
					t.Errorf("the restarted adapter synced from scratch, not from the stored token")
				}
				return
			}
		}
		t.Errorf("the restarted adapter never synced")
	}
}
