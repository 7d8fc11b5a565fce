package owner_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/baton-agent/baton/internal/owner"
	"github.com/baton-agent/baton/internal/store"
	"github.com/baton-agent/baton/internal/store/sqlite"
)

func TestEnsure(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "state.db")
	s, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	a, err := owner.Ensure(ctx, s, "alice")
	if err != nil {
		t.Fatal(err)
	}
	if a.ID == "" || a.Name != "alice" {
		t.Fatalf("owner %+v", a)
	}
	again, err := owner.Ensure(ctx, s, "alice")
	if err != nil || again.ID != a.ID {
		t.Fatalf("second Ensure = %+v, %v; want the same user %s", again, err, a.ID)
	}
	id, err := s.LookupIdentity(ctx, owner.Platform, "alice")
	if err != nil || id.UserID != a.ID {
		t.Fatalf("identity %+v, %v", id, err)
	}
	// Another process (a second open of the file) finds the same owner.
	s2, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	other, err := owner.Ensure(ctx, s2, "alice")
	if err != nil || other.ID != a.ID {
		t.Fatalf("from a second handle: %+v, %v", other, err)
	}
	if _, err := owner.Ensure(ctx, s, ""); err == nil {
		t.Fatal("empty username accepted")
	}
	if owner.Username() == "" {
		t.Fatal("empty OS username")
	}
}

func TestAccountsAndLink(t *testing.T) {
	st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := t.Context()
	me, err := owner.Current(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	other, err := st.CreateUser(ctx, "someone else")
	if err != nil {
		t.Fatal(err)
	}
	if err := st.LinkIdentity(ctx, store.Identity{Platform: "discord", PlatformUserID: "99", UserID: other.ID}); err != nil {
		t.Fatal(err)
	}
	if err := owner.Link(ctx, st, me.ID, "Telegram", " 42 "); err != nil {
		t.Fatal(err)
	}
	if err := owner.Link(ctx, st, me.ID, "telegram", "42"); err != nil {
		t.Errorf("linking again: %v", err)
	}
	if err := owner.Link(ctx, st, me.ID, "discord", "99"); !errors.Is(err, owner.ErrLinkedElsewhere) {
		t.Errorf("linking someone else's account: %v", err)
	}
	if err := owner.Link(ctx, st, me.ID, "slack", ""); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("linking no id: %v", err)
	}
	accts, err := owner.Accounts(ctx, st, me.ID, map[string][]string{"telegram": {"42"}, "matrix": {"@me:example.org"}})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, a := range accts {
		got = append(got, a.Platform+" "+a.ID+" "+a.Source)
	}
	want := []string{"cli " + owner.Username() + " this computer", "matrix @me:example.org config.yaml", "telegram 42 config.yaml"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("accounts\n got %q\nwant %q", got, want)
	}
	if d := owner.Describe(me.Name, accts); !strings.Contains(d, "telegram 42") || !strings.Contains(d, "baton link") {
		t.Errorf("describe: %q", d)
	}
}

// missThenWait is a store handle of one process whose first start found no
// owner: before it creates one it calls missed, then waits for resume.
type missThenWait struct {
	*sqlite.Store
	missed func()
	resume <-chan struct{}
}

func (m missThenWait) CreateUser(ctx context.Context, name string) (store.User, error) {
	m.missed()
	<-m.resume
	return m.Store.CreateUser(ctx, name)
}

// TestEnsureFirstStartsAtOnce is the gateway and a terminal making their
// first start at once: both find no owner, then one creates and links its
// user and goes on serving it, then the other does the same. They must
// agree on one owner, the one the store keeps: a process serving an owner
// nobody else sees stores sessions nobody else lists.
func TestEnsureFirstStartsAtOnce(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "state.db")
	open := func() *sqlite.Store {
		s, err := sqlite.Open(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	gatewayStore, terminalStore := open(), open()
	gatewayMissed, terminalMissed, gatewayDone := make(chan struct{}), make(chan struct{}), make(chan struct{})
	var terminalOnce sync.Once
	terminalMiss := func() { terminalOnce.Do(func() { close(terminalMissed) }) }
	defer func() { terminalMiss(); <-gatewayDone }() // the gateway's Ensure ends whatever happens here
	type result struct {
		u   store.User
		err error
	}
	gateway := make(chan result, 1)
	go func() {
		defer close(gatewayDone)
		u, err := owner.Ensure(ctx, missThenWait{gatewayStore, func() { close(gatewayMissed) }, terminalMissed}, "alice")
		gateway <- result{u, err}
	}()
	<-gatewayMissed
	terminal, err := owner.Ensure(ctx, missThenWait{terminalStore, terminalMiss, gatewayDone}, "alice")
	if err != nil {
		t.Fatal(err)
	}
	g := <-gateway
	if g.err != nil {
		t.Fatal(g.err)
	}
	kept, err := owner.Ensure(ctx, open(), "alice")
	if err != nil {
		t.Fatal(err)
	}
	if g.u.ID != terminal.ID || kept.ID != g.u.ID {
		t.Fatalf("the gateway serves owner %s, the terminal %s, and the store keeps %s: want one owner", g.u.ID, terminal.ID, kept.ID)
	}
}
