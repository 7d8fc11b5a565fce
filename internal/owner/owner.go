// Package owner finds baton's owner: the one person a baton install works
// for. The terminal is where the owner is known for certain (whoever runs
// baton as this OS user), so the owner's user record is tied to the
// identity ("cli", OS username); the gateway finds the same user the same
// way and links chat identities to it.
package owner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/user"

	"github.com/baton-agent/baton/internal/store"
)

// Platform is the identity platform of the terminal.
const Platform = "cli"

// Store is the part of store.Store that Ensure uses.
type Store interface {
	CreateUser(ctx context.Context, name string) (store.User, error)
	GetUser(ctx context.Context, id string) (store.User, error)
	ClaimIdentity(ctx context.Context, id store.Identity) (store.Identity, error)
	LookupIdentity(ctx context.Context, platform, platformUserID string) (store.Identity, error)
}

var _ Store = store.Store(nil)

// Username is the OS user running baton: the terminal identity's id.
func Username() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	if n := os.Getenv("USER"); n != "" {
		return n
	}
	return "owner"
}

// Ensure returns the user linked to the terminal identity ("cli",
// username), creating the user and the link on first run.
func Ensure(ctx context.Context, s Store, username string) (store.User, error) {
	if username == "" {
		return store.User{}, errors.New("find owner: empty username")
	}
	if u, err := lookup(ctx, s, username); err == nil || !errors.Is(err, store.ErrNotFound) {
		return u, err
	}
	u, err := s.CreateUser(ctx, username)
	if err != nil {
		return store.User{}, fmt.Errorf("create owner %s: %w", username, err)
	}
	// Claimed, not linked: when two processes make their first start at
	// once (the gateway and a terminal), the first link holds and both
	// take its user. Relinking (last wins) let the first one serve, for
	// its whole run, an owner nobody else saw. The loser's user stays
	// behind, with nothing of it.
	id, err := s.ClaimIdentity(ctx, store.Identity{Platform: Platform, PlatformUserID: username, UserID: u.ID, DisplayName: username})
	if err != nil {
		return store.User{}, fmt.Errorf("link owner %s: %w", username, err)
	}
	if id.UserID == u.ID {
		return u, nil
	}
	owner, err := s.GetUser(ctx, id.UserID)
	if err != nil {
		return store.User{}, fmt.Errorf("find owner %s: %w", username, err)
	}
	return owner, nil
}

// Current is Ensure for the OS user running this process; the gateway
// calls it to know whose sessions it serves.
func Current(ctx context.Context, s Store) (store.User, error) {
	return Ensure(ctx, s, Username())
}

func lookup(ctx context.Context, s Store, username string) (store.User, error) {
	id, err := s.LookupIdentity(ctx, Platform, username)
	if err != nil {
		return store.User{}, fmt.Errorf("find owner %s: %w", username, err)
	}
	u, err := s.GetUser(ctx, id.UserID)
	if err != nil {
		return store.User{}, fmt.Errorf("find owner %s: %w", username, err)
	}
	return u, nil
}
