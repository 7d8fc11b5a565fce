package owner_test

import (
	"errors"
	"path/filepath"
	"strings"
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
