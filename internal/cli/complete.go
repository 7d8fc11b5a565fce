package cli

import (
	"context"
	"fmt"
	"strings"
	"time"
	"unicode"

	"github.com/baton-agent/baton/internal/command"
	"github.com/baton-agent/baton/internal/store"

	"github.com/baton-agent/baton/internal/plural"
)

// Candidate is one completion offered on Tab: what is inserted and a
// description shown beside it in the list.
type Candidate struct {
	Value       string
	Description string
}

// Completer offers the completions for the line typed before the cursor:
// the candidates, and the part of the line they replace (their common
// prefix so far).
type Completer func(before string) (prefix string, candidates []Candidate)

// completeTimeout bounds the store or gateway lookups behind one Tab.
const completeTimeout = 2 * time.Second

// complete is the REPL's Completer: command names in the first word of a
// slash line, then the platforms for /handoff and the sessions for
// /resume.
func (r *REPL) complete(before string) (string, []Candidate) {
	if !strings.HasPrefix(before, "/") {
		return "", nil
	}
	name, arg, hasArg := strings.Cut(before, " ")
	if !hasArg {
		return before, commandCandidates(r.reg, before)
	}
	c, ok := r.reg.Lookup(strings.TrimPrefix(name, "/"))
	if !ok {
		return "", nil
	}
	arg = strings.TrimLeftFunc(arg, unicode.IsSpace)
	ctx, cancel := context.WithTimeout(context.Background(), completeTimeout)
	defer cancel()
	var all []Candidate
	switch c.Name {
	case "handoff":
		if r.cfg.HandoffTargets != nil {
			for _, p := range r.cfg.HandoffTargets(ctx) {
				all = append(all, Candidate{Value: p})
			}
		}
	case "resume":
		all = r.sessionCandidates(ctx)
	case "help":
		for _, c := range commandCandidates(r.reg, "/") {
			all = append(all, Candidate{Value: strings.TrimPrefix(c.Value, "/"), Description: c.Description})
		}
	}
	var out []Candidate
	for _, c := range all {
		if strings.HasPrefix(strings.ToLower(c.Value), strings.ToLower(arg)) {
			out = append(out, c)
		}
	}
	return arg, out
}

// commandCandidates are the terminal's commands starting with prefix.
func commandCandidates(reg *command.Registry, prefix string) []Candidate {
	var out []Candidate
	for _, name := range reg.Complete(prefix, command.Terminal) {
		c, _ := reg.Lookup(name)
		out = append(out, Candidate{Value: name, Description: c.Description})
	}
	return out
}

// sessionCandidates are the sessions /resume can switch to, by title
// (or id when untitled), newest first; the current one is left out.
func (r *REPL) sessionCandidates(ctx context.Context) []Candidate {
	ss, err := r.app.Store.ListSessions(ctx, store.SessionFilter{OwnerID: r.app.Owner.ID, Limit: listLimit})
	if err != nil {
		return nil
	}
	now := time.Now()
	var out []Candidate
	for _, s := range ss {
		if s.ID == r.session.ID {
			continue
		}
		v, what := s.Title, short(s.ID)
		if v == "" {
			v, what = short(s.ID), "untitled"
		}
		out = append(out, Candidate{Value: v, Description: fmt.Sprintf("%s · %s · %s", what, plural.Count(s.MessageCount, "message", "messages"), ago(s.UpdatedAt, now))})
	}
	return out
}
