package matrix_test

import (
	"context"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/platform"
	"github.com/baton-agent/baton/internal/platform/matrix"
	"github.com/baton-agent/baton/internal/platform/matrix/matrixtest"
	"github.com/baton-agent/baton/internal/testutil"
)

// homeserver is the package's one Dendrite; each test registers its own
// users and rooms on it.
var homeserver matrixtest.Shared

func TestMain(m *testing.M) { os.Exit(homeserver.Run(m)) }

// memory is a platform.Memory kept in a map, as the store would keep it.
type memory struct {
	mu sync.Mutex
	m  map[string]string
}

func newMemory() *memory { return &memory{m: map[string]string{}} }

func (m *memory) Get(_ context.Context, k string) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.m[k], nil
}

func (m *memory) Set(_ context.Context, k, v string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if v == "" {
		delete(m.m, k)
	} else {
		m.m[k] = v
	}
	return nil
}

// since is the stored sync token, whatever account it is for.
func (m *memory) since() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	for k, v := range m.m {
		if len(k) > 6 && k[:6] == "since:" {
			return v
		}
	}
	return ""
}

// world is one test's people and room on the shared homeserver: an
// owner, the bot, a stranger, and a room the owner made, which the other
// two joined.
type world struct {
	hs                   *matrixtest.Homeserver
	owner, bot, stranger *matrixtest.User
	room                 string
	home                 platform.Address
}

func newWorld(t *testing.T) *world {
	t.Helper()
	hs := homeserver.Need(t)
	ctx := testutil.Context(t, 0)
	w := &world{hs: hs}
	var err error
	if w.owner, err = hs.Register(ctx, "owner"); err != nil {
		t.Fatal(err)
	}
	if w.bot, err = hs.Register(ctx, "bot"); err != nil {
		t.Fatal(err)
	}
	if w.stranger, err = hs.Register(ctx, "stranger"); err != nil {
		t.Fatal(err)
	}
	if w.room, err = w.owner.CreateRoom(ctx, "baton home", w.bot.ID, w.stranger.ID); err != nil {
		t.Fatal(err)
	}
	for _, u := range []*matrixtest.User{w.stranger, w.bot} {
		if err := u.Join(ctx, w.room); err != nil {
			t.Fatal(err)
		}
	}
	w.home = platform.Address{Platform: matrix.Name, Kind: platform.Group, Chat: w.room}
	return w
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
		HomeserverURL: url, UserID: w.bot.ID, AccessToken: w.bot.Token,
		Owners: []string{w.owner.ID}, Memory: mem, SyncTimeout: 2 * time.Second,
		Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	if err != nil {
		t.Fatal(err)
	}
	return a
}
