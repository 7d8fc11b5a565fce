// Package storetest is the conformance suite every store.Store must pass.
// An implementation's test calls Run with a constructor for fresh, empty
// stores.
package storetest

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/baton-agent/baton/internal/store"
)

// Factory returns a new, empty store; Run closes it when the test ends.
type Factory func(t *testing.T) store.Store

// Run runs every conformance test against stores made by newStore.
func Run(t *testing.T, newStore Factory) {
	groups := []struct {
		name  string
		tests map[string]func(*testing.T, store.Store)
	}{
		{"Sessions", sessionTests},
		{"Messages", messageTests},
		{"Search", searchTests},
		{"Bindings", bindingTests},
		{"Identities", identityTests},
		{"Handoffs", handoffTests},
		{"Inbox", inboxTests},
		{"Outbox", outboxTests},
		{"Homes", homeTests},
		{"Pairings", pairingTests},
		{"PlatformStates", platformStateTests},
		{"Holders", holderTests},
		{"Notes", noteTests},
		{"Files", fileTests},
		{"Honest", honestTests},
		{"Replicas", replicaTests},
	}
	for _, g := range groups {
		t.Run(g.name, func(t *testing.T) {
			for name, fn := range g.tests {
				t.Run(name, func(t *testing.T) {
					s := newStore(t)
					t.Cleanup(func() { s.Close() })
					defer guard(t)
					fn(t, s)
				})
			}
		})
	}
}

func ctx(t *testing.T) context.Context { return t.Context() }

// failure carries an unexpected error from must to Run's recover, so test
// bodies can write must(s.Call(…)) for calls with several results.
type failure struct{ err error }

func must[T any](v T, err error) T {
	if err != nil {
		panic(failure{err})
	}
	return v
}

func must2[A, B any](a A, b B, err error) (A, B) {
	if err != nil {
		panic(failure{err})
	}
	return a, b
}

// guard turns a must failure into a test failure with the place it happened.
func guard(t *testing.T) {
	if r := recover(); r != nil {
		f, ok := r.(failure)
		if !ok {
			panic(r)
		}
		t.Fatalf("unexpected error: %v\n%s", f.err, debug.Stack())
	}
}

func noErr(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func wantErr(t *testing.T, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("error = %v, want %v", err, target)
	}
}

func newSession(t *testing.T, s store.Store, owner, title string) store.Session {
	t.Helper()
	return must(s.CreateSession(ctx(t), store.Session{OwnerID: owner, Title: title, Platform: "cli", Model: "m"}))
}

func appendText(t *testing.T, s store.Store, sid string, role store.Role, text string) store.Message {
	t.Helper()
	ms := must(s.AppendMessages(ctx(t), sid, store.Message{Role: role, Content: text}))
	return ms[0]
}

func contents(ms []store.Message) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = string(m.Role) + ":" + m.Content
	}
	return out
}

func eq[T comparable](t *testing.T, what string, got, want T) {
	t.Helper()
	if got != want {
		t.Fatalf("%s = %v, want %v", what, got, want)
	}
}

func eqSlice(t *testing.T, what string, got, want []string) {
	t.Helper()
	if strings.Join(got, "\x00") != strings.Join(want, "\x00") || len(got) != len(want) {
		t.Fatalf("%s =\n  %q\nwant\n  %q", what, got, want)
	}
}

func ids(ss []store.Session) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = s.ID
	}
	return out
}

func handoffSessions(hs []store.Handoff) []string {
	out := make([]string, len(hs))
	for i, h := range hs {
		out[i] = h.SessionID
	}
	return out
}

func nth(i int) string { return fmt.Sprintf("s%02d", i) }
