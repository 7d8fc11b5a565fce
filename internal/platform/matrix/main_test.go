package matrix_test

import (
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/platform"
	"github.com/baton-agent/baton/internal/platform/matrix"
	"github.com/baton-agent/baton/internal/platform/matrix/matrixtest"
	"github.com/baton-agent/baton/internal/platform/platformtest"
	"github.com/baton-agent/baton/internal/testutil"
)

// homeserver is the package's one Dendrite; each test registers its own
// users and rooms on it.
var homeserver matrixtest.Shared

func TestMain(m *testing.M) { os.Exit(homeserver.Run(m)) }

// newMemory is the Memory a test adapter keeps its sync token in.
func newMemory() *platformtest.Memory { return platformtest.NewMemory() }

// since is the stored sync token, whatever account it is for.
func since(m *platformtest.Memory) string { return m.WithPrefix("since:") }

// world is one test's people and home room on the shared homeserver.
type world struct {
	*matrixtest.World
	hs   *matrixtest.Homeserver
	home platform.Address
}

func newWorld(t *testing.T) *world {
	t.Helper()
	hs := homeserver.Need(t)
	mw, err := hs.NewWorld(testutil.Context(t, 0))
	if err != nil {
		t.Fatal(err)
	}
	return &world{World: mw, hs: hs, home: platform.Address{Platform: matrix.Name, Kind: platform.Group, Chat: mw.Room}}
}

// adapter is the bot's adapter talking to url (the homeserver or a proxy
// in front of it), with mem as its store.
func (w *world) adapter(t *testing.T, url string, mem platform.Memory) *matrix.Adapter {
	t.Helper()
	logs := &testutil.SyncBuffer{}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("adapter log:\n%s", logs.String())
		}
	})
	a, err := matrix.New(matrix.Config{
		HomeserverURL: url, UserID: w.Bot.ID, AccessToken: w.Bot.Token,
		Owners: []string{w.Owner.ID}, Memory: mem, SyncTimeout: 2 * time.Second,
		Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	if err != nil {
		t.Fatal(err)
	}
	return a
}
