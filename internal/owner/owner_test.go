package owner_test

import (
	"path/filepath"
	"testing"

	"github.com/baton-agent/baton/internal/owner"
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
