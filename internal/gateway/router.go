package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/baton-agent/baton/internal/agent"
	"github.com/baton-agent/baton/internal/command"
	"github.com/baton-agent/baton/internal/note"
	"github.com/baton-agent/baton/internal/platform"
	"github.com/baton-agent/baton/internal/retry"
	"github.com/baton-agent/baton/internal/store"
)

// router is the room that takes what arrives: who sent it (the owner, or
// a stranger given a pairing code), which session it is for, whether that
// session is held here, and one turn at a time per conversation, in the
// order people wrote. Commands typed in chats are its own. It owns the
// conversations' mailboxes and the per-person rate.
type router struct {
	st        store.Store
	log       *slog.Logger
	ag        *agent.Agent
	cmds      *command.Registry
	places    *platforms
	life      *lifecycle
	out       *outbox
	turns     *turns
	approvals *approvals
	worker    *handoffWorker
	notes     *note.Writer
	cfg       routerConfig

	boxes   mailboxes
	senders *senderRates // messages taken per person, for Config.Rate; own lock
}

// routerConfig is what the router takes of Config.
type routerConfig struct {
	ownerID     string
	owners      map[string]map[string]bool // platform → the owner's ids there
	trusted     []string
	personal    []string
	rate        Rate
	offerWithin time.Duration
	rerecord    retry.Policy
	maxFiles    int64 // bytes of files a session keeps
	transcriber Transcriber
	speaker     Speaker
	spoken      []string // platforms whose new sessions are spoken
}

func newRouter(cfg Config, cmds *command.Registry, places *platforms, life *lifecycle, out *outbox, turns *turns, approvals *approvals, worker *handoffWorker, notes *note.Writer) *router {
	r := &router{
		st: cfg.Store, log: cfg.Log, ag: cfg.Agent, cmds: cmds, places: places, life: life, out: out,
		turns: turns, approvals: approvals, worker: worker, notes: notes,
		cfg: routerConfig{ownerID: cfg.OwnerID, owners: map[string]map[string]bool{}, trusted: cfg.TrustedPlatforms,
			personal: cfg.PersonalPlatforms, rate: cfg.Rate, offerWithin: cfg.OfferWithin, rerecord: cfg.Rerecord,
			maxFiles: cfg.MaxSessionFiles, transcriber: cfg.Transcriber, speaker: cfg.Speaker,
			spoken: cfg.Spoken},
		senders: newSenderRates(),
		boxes:   mailboxes{limit: cfg.Turns},
	}
	for p, ids := range cfg.Owners {
		r.cfg.owners[p] = map[string]bool{}
		for _, id := range ids {
			r.cfg.owners[p][id] = true
		}
	}
	return r
}

// authorized reports whether the sender is the owner: on a trusted
// platform, by configuration, or by an identity linked to the owner (a
// pairing the owner approved).
func (r *router) authorized(ctx context.Context, ev platform.Event) (bool, error) {
	for _, p := range r.cfg.trusted {
		if p == ev.At.Platform {
			return true, nil
		}
	}
	if r.cfg.owners[ev.At.Platform][ev.SenderID] {
		return true, nil
	}
	if ev.SenderID == "" {
		return false, nil
	}
	id, err := r.st.LookupIdentity(ctx, ev.At.Platform, ev.SenderID)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return false, nil
	case err != nil:
		return false, err
	}
	return id.UserID == r.cfg.ownerID, nil
}

// sessionFor is the session bound to addr, or (fresh) a new one owned by
// the owner and bound there.
func (r *router) sessionFor(ctx context.Context, addr platform.Address) (sess store.Session, fresh bool, err error) {
	s, err := r.st.BoundSession(ctx, addr.Key())
	if err == nil {
		if !s.Open() {
			if err := r.st.ReopenSession(ctx, s.ID); err != nil {
				return s, false, err
			}
		}
		return s, false, nil
	}
	if !errors.Is(err, store.ErrNotFound) {
		return store.Session{}, false, err
	}
	sess, err = r.newSession(ctx, addr)
	return sess, err == nil, err
}

func (r *router) newSession(ctx context.Context, addr platform.Address) (store.Session, error) {
	s, err := r.st.CreateSession(ctx, store.Session{OwnerID: r.cfg.ownerID, Platform: addr.Platform, Holder: addr.Key(),
		Voice: r.cfg.speaker != nil && slices.Contains(r.cfg.spoken, addr.Platform)})
	if err != nil {
		return s, fmt.Errorf("create session: %w", err)
	}
	if _, err := r.st.Bind(ctx, addr.Key(), s.ID); err != nil {
		return s, fmt.Errorf("bind %s: %w", addr.Key(), err)
	}
	return s, nil
}

// boundSession is the session this chat is on; an error a person can read
// when there is none.
func (r *router) boundSession(ctx context.Context, addr platform.Address) (store.Session, error) {
	s, err := r.st.BoundSession(ctx, addr.Key())
	if errors.Is(err, store.ErrNotFound) {
		return store.Session{}, errors.New("This chat has no session yet: say something first.")
	}
	return s, err
}
