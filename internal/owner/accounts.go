package owner

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/baton-agent/baton/internal/store"
)

// One person, many accounts: the owner's account on each platform is an
// identity of the one owner user, either named in config.yaml
// (gateway.owners) or linked in the store (`baton link`, an approved
// pairing). Who may talk to baton, and who holds a session, is decided on
// the user, never on one platform account.

// Account is one of the owner's accounts.
type Account struct {
	Platform string
	ID       string // the platform's user id
	Source   string // "config.yaml", "linked" or "this computer"
}

// ErrLinkedElsewhere is returned by Link for an account that belongs to
// another user.
var ErrLinkedElsewhere = errors.New("that account belongs to someone else in this store")

// AccountStore is what Accounts and Link use of the store.
type AccountStore interface {
	IdentitiesForUser(ctx context.Context, userID string) ([]store.Identity, error)
	LookupIdentity(ctx context.Context, platform, platformUserID string) (store.Identity, error)
	LinkIdentity(ctx context.Context, id store.Identity) error
}

// Accounts lists the owner's accounts: those configured, then those
// linked in the store, sorted by platform.
func Accounts(ctx context.Context, st AccountStore, ownerID string, configured map[string][]string) ([]Account, error) {
	seen := map[string]bool{}
	var out []Account
	for p, ids := range configured {
		for _, id := range ids {
			if !seen[p+"/"+id] {
				seen[p+"/"+id] = true
				out = append(out, Account{Platform: p, ID: id, Source: "config.yaml"})
			}
		}
	}
	ids, err := st.IdentitiesForUser(ctx, ownerID)
	if err != nil {
		return nil, fmt.Errorf("list the owner's accounts: %w", err)
	}
	for _, id := range ids {
		if seen[id.Platform+"/"+id.PlatformUserID] {
			continue
		}
		seen[id.Platform+"/"+id.PlatformUserID] = true
		src := "linked"
		if id.Platform == Platform {
			src = "this computer"
		}
		out = append(out, Account{Platform: id.Platform, ID: id.PlatformUserID, Source: src})
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Platform != out[j].Platform {
			return out[i].Platform < out[j].Platform
		}
		return out[i].ID < out[j].ID
	})
	return out, nil
}

// Link makes the account (platform, id) one of the owner's. Linking one
// that is the owner's already is no error; one another user has is
// refused.
func Link(ctx context.Context, st AccountStore, ownerID, platform, id string) error {
	platform, id = strings.ToLower(strings.TrimSpace(platform)), strings.TrimSpace(id)
	if platform == "" || id == "" {
		return fmt.Errorf("link: give a platform and the account's id, e.g. `baton link telegram 123456789`: %w", store.ErrInvalid)
	}
	cur, err := st.LookupIdentity(ctx, platform, id)
	switch {
	case err == nil && cur.UserID == ownerID:
		return nil
	case err == nil:
		return fmt.Errorf("link %s %s: %w", platform, id, ErrLinkedElsewhere)
	case !errors.Is(err, store.ErrNotFound):
		return fmt.Errorf("link %s %s: %w", platform, id, err)
	}
	if err := st.LinkIdentity(ctx, store.Identity{Platform: platform, PlatformUserID: id, UserID: ownerID}); err != nil {
		return fmt.Errorf("link %s %s: %w", platform, id, err)
	}
	return nil
}

// Describe is the owner's accounts as lines for people.
func Describe(name string, accounts []Account) string {
	var b strings.Builder
	fmt.Fprintf(&b, "You are %s, baton's owner. Your accounts:\n", name)
	for _, a := range accounts {
		fmt.Fprintf(&b, "- %s %s (%s)\n", a.Platform, a.ID, a.Source)
	}
	if len(accounts) == 0 {
		b.WriteString("- none yet\n")
	}
	b.WriteString("Add one with `baton link <platform> <id>`, or approve its pairing code.")
	return b.String()
}
