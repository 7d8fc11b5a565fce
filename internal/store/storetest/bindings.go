package storetest

import (
	"testing"

	"github.com/baton-agent/baton/internal/store"
)

var bindingTests = map[string]func(*testing.T, store.Store){
	"BoundSession": func(t *testing.T, s store.Store) {
		a := newSession(t, s, "u", "")
		_, err := s.BoundSession(ctx(t), "telegram:chat:1")
		wantErr(t, err, store.ErrNotFound)
		must(s.Bind(ctx(t), "telegram:chat:1", a.ID))
		got := must(s.BoundSession(ctx(t), "telegram:chat:1"))
		eq(t, "session", got.ID, a.ID)
		eq(t, "owner", got.OwnerID, a.OwnerID)
		noErr(t, s.DeleteSession(ctx(t), a.ID))
		_, err = s.BoundSession(ctx(t), "telegram:chat:1")
		wantErr(t, err, store.ErrNotFound)
	},
	"BindRebindUnbind": func(t *testing.T, s store.Store) {
		a := newSession(t, s, "u", "")
		b := newSession(t, s, "u", "")
		prev := must(s.Bind(ctx(t), "telegram:topic:-100:42", a.ID))
		eq(t, "first bind has no previous", prev, "")
		eq(t, "lookup", must(s.LookupBinding(ctx(t), "telegram:topic:-100:42")).SessionID, a.ID)
		prev = must(s.Bind(ctx(t), "telegram:topic:-100:42", b.ID))
		eq(t, "rebind returns previous", prev, a.ID)
		eq(t, "lookup after rebind", must(s.LookupBinding(ctx(t), "telegram:topic:-100:42")).SessionID, b.ID)
		must(s.Bind(ctx(t), "web:thread:7", b.ID))
		eq(t, "bindings of b", len(must(s.BindingsForSession(ctx(t), b.ID))), 2)
		eq(t, "bindings of a", len(must(s.BindingsForSession(ctx(t), a.ID))), 0)
		noErr(t, s.Unbind(ctx(t), "web:thread:7"))
		_, err := s.LookupBinding(ctx(t), "web:thread:7")
		wantErr(t, err, store.ErrNotFound)
		wantErr(t, s.Unbind(ctx(t), "web:thread:7"), store.ErrNotFound)
	},
	"BindUnknownSession": func(t *testing.T, s store.Store) {
		_, err := s.Bind(ctx(t), "web:thread:1", "missing")
		wantErr(t, err, store.ErrNotFound)
		_, err = s.Bind(ctx(t), "", "missing")
		wantErr(t, err, store.ErrInvalid)
	},
}

var identityTests = map[string]func(*testing.T, store.Store){
	"UsersAndIdentities": func(t *testing.T, s store.Store) {
		u := must(s.CreateUser(ctx(t), "Ada"))
		eq(t, "get", must(s.GetUser(ctx(t), u.ID)).Name, "Ada")
		noErr(t, s.LinkIdentity(ctx(t), store.Identity{Platform: "telegram", PlatformUserID: "123", UserID: u.ID, DisplayName: "ada"}))
		noErr(t, s.LinkIdentity(ctx(t), store.Identity{Platform: "cli", PlatformUserID: "ada", UserID: u.ID}))
		id := must(s.LookupIdentity(ctx(t), "telegram", "123"))
		eq(t, "user", id.UserID, u.ID)
		eq(t, "display", id.DisplayName, "ada")
		eq(t, "identities", len(must(s.IdentitiesForUser(ctx(t), u.ID))), 2)
		// Relinking moves the identity to another user.
		v := must(s.CreateUser(ctx(t), "Bob"))
		noErr(t, s.LinkIdentity(ctx(t), store.Identity{Platform: "telegram", PlatformUserID: "123", UserID: v.ID}))
		eq(t, "moved", must(s.LookupIdentity(ctx(t), "telegram", "123")).UserID, v.ID)
		eq(t, "left", len(must(s.IdentitiesForUser(ctx(t), u.ID))), 1)
		_, err := s.LookupIdentity(ctx(t), "telegram", "999")
		wantErr(t, err, store.ErrNotFound)
		wantErr(t, s.LinkIdentity(ctx(t), store.Identity{Platform: "x", PlatformUserID: "1", UserID: "ghost"}), store.ErrNotFound)
		wantErr(t, s.LinkIdentity(ctx(t), store.Identity{Platform: "", PlatformUserID: "1", UserID: u.ID}), store.ErrInvalid)
		_, err = s.GetUser(ctx(t), "ghost")
		wantErr(t, err, store.ErrNotFound)
	},
	"ClaimIdentityFirstHolds": func(t *testing.T, s store.Store) {
		u := must(s.CreateUser(ctx(t), "Ada"))
		v := must(s.CreateUser(ctx(t), "Ada"))
		got := must(s.ClaimIdentity(ctx(t), store.Identity{Platform: "cli", PlatformUserID: "ada", UserID: u.ID, DisplayName: "ada"}))
		eq(t, "first claim", got.UserID, u.ID)
		eq(t, "display", got.DisplayName, "ada")
		// A second claim, as a process starting at the same time makes,
		// is told the link that holds and changes nothing.
		got = must(s.ClaimIdentity(ctx(t), store.Identity{Platform: "cli", PlatformUserID: "ada", UserID: v.ID, DisplayName: "other"}))
		eq(t, "second claim", got.UserID, u.ID)
		eq(t, "kept", must(s.LookupIdentity(ctx(t), "cli", "ada")).UserID, u.ID)
		eq(t, "kept display", must(s.LookupIdentity(ctx(t), "cli", "ada")).DisplayName, "ada")
		_, err := s.ClaimIdentity(ctx(t), store.Identity{Platform: "x", PlatformUserID: "1", UserID: "ghost"})
		wantErr(t, err, store.ErrNotFound)
		_, err = s.ClaimIdentity(ctx(t), store.Identity{Platform: "", PlatformUserID: "1", UserID: u.ID})
		wantErr(t, err, store.ErrInvalid)
	},
}
