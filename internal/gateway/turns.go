package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/baton-agent/baton/internal/agent"
	"github.com/baton-agent/baton/internal/platform"
	"github.com/baton-agent/baton/internal/store"
)

const (
	typingEvery = 4 * time.Second
	// typingAfter is how long a turn runs before typing shows: an answer
	// ready by then (posted whole after firstPostWait) needs no indicator,
	// which would cost the service a call per reply.
	typingAfter = firstPostWait
)

// turns runs the agent's turns for the gateway, one at a time per
// session: typing shown, the answer streamed where the platform can, the
// person told once when the store cannot record it. The router runs the
// turns people's messages ask for, the handoff worker the greeting at a
// new place. It owns the session locks and, under its own lock, where
// each running turn answers (approvals are asked there) and which turns'
// people were told of store trouble.
type turns struct {
	ag       *agent.Agent
	st       store.Store
	log      *slog.Logger
	places   *platforms
	out      *outbox
	sessions keyedLocks // per session id

	mu          sync.Mutex
	at          map[string]platform.Address // session → where its running turn answers
	troubleTold map[string]bool             // turn keys whose person was told of store trouble
}

func newTurns(ag *agent.Agent, st store.Store, log *slog.Logger, places *platforms, out *outbox) *turns {
	return &turns{ag: ag, st: st, log: log, places: places, out: out,
		at: map[string]platform.Address{}, troubleTold: map[string]bool{}}
}

// run runs the agent with typing shown and the reply streamed where the
// platform can (its own Streamer, or edits), retrying while another turn
// holds the session. key is the outbox key the answer will be delivered
// under, which takes over the streamed messages.
func (t *turns) run(ctx context.Context, addr platform.Address, sessionID string, input store.Message, key string) (agent.Result, error) {
	a, _ := t.places.adapter(addr.Platform)
	done, err := t.working(ctx, addr, sessionID)
	if err != nil {
		return agent.Result{}, err
	}
	defer done()
	show := func(agent.Event) {}
	emit := func(ev agent.Event) {
		if ev.Kind == agent.EventStoreTrouble {
			t.log.Warn("the store could not record a turn; keeping it and trying again", "session", sessionID, "err", ev.Err)
			t.tellTrouble(ctx, addr, key, ev.Err)
			return
		}
		show(ev)
	}
	if s, ok := a.(platform.Streamer); ok {
		show = func(ev agent.Event) {
			if ev.Kind == agent.EventTextDelta {
				if err := s.Delta(ctx, addr, ev.Text); err != nil {
					t.log.Debug("stream delta", "err", err)
				}
			}
		}
	} else if es := streamEdits(ctx, t.places, t.out.streamed, a, addr, key, input.Role == ""); es != nil {
		show = es.event
		defer func() { t.out.streamed.note(key, es.finish()) }()
	}
	for wait := 100 * time.Millisecond; ; wait = min(2*wait, 2*time.Second) {
		res, err := t.ag.Run(ctx, sessionID, input, emit)
		if !errors.Is(err, agent.ErrBusy) {
			return res, err
		}
		t.log.Debug("session busy outside the gateway's turns; waiting", "session", sessionID, "at", addr.Key())
		// Something outside the gateway's turns holds the session (an
		// /undo or /compress, a terminal's turn a move is stopping, or
		// another replica's turn): wait for it rather than interleave. The input is in the inbox
		// meanwhile.
		select {
		case <-ctx.Done():
			return res, ctx.Err()
		case <-time.After(wait):
		}
	}
}

// working waits its turn in the session, then marks a turn of it as
// running at addr until done is called: the typing indicator shows there,
// and approvals the turn needs are asked there.
func (t *turns) working(ctx context.Context, addr platform.Address, sessionID string) (done func(), err error) {
	// Across processes sharing the store, the agent's turn guard keeps
	// one turn at a time (run waits while it says busy).
	unlock, err := t.sessions.lock(ctx, sessionID)
	if err != nil {
		return nil, err
	}
	a, _ := t.places.adapter(addr.Platform)
	stopTyping := t.typing(ctx, a, addr)
	t.mu.Lock()
	t.at[sessionID] = addr
	t.mu.Unlock()
	return func() {
		t.mu.Lock()
		delete(t.at, sessionID)
		t.mu.Unlock()
		stopTyping()
		unlock()
	}, nil
}

// where is the place a running turn of the session answers at.
func (t *turns) where(sessionID string) (platform.Address, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	addr, ok := t.at[sessionID]
	return addr, ok
}

// typing shows the typing indicator every few seconds until stopped,
// from typingAfter on.
func (t *turns) typing(ctx context.Context, a platform.Adapter, addr platform.Address) (stop func()) {
	ty, ok := a.(platform.Typer)
	if !ok || t.places.knownUnsupported(capTyping, addr) {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		select {
		case <-ctx.Done():
			return
		case <-time.After(typingAfter):
		}
		tick := time.NewTicker(typingEvery)
		defer tick.Stop()
		for {
			if err := ty.Typing(ctx, addr); err != nil {
				if errors.Is(err, platform.ErrUnsupported) {
					t.places.noteUnsupported(capTyping, addr, err)
					return // no typing here; the turn goes on
				}
				if ctx.Err() != nil {
					return
				}
				t.log.Debug("typing indicator", "platform", addr.Platform, "err", err) // tried again at the next tick
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return func() { cancel(); <-done }
}

// storeTrouble tells a person why their message waits.
func storeTrouble(err error) string {
	why := "the store is busy"
	if strings.Contains(err.Error(), "disk is full") {
		why = "the disk is full"
	}
	return "baton could not save this conversation just now (" + why + "); it will keep trying. Your message is kept and will be answered as soon as it can be saved."
}

// tellTrouble tells the person at addr, once per turn key, that the store
// could not record their turn.
func (t *turns) tellTrouble(ctx context.Context, addr platform.Address, key string, err error) {
	t.mu.Lock()
	told := t.troubleTold[key]
	t.troubleTold[key] = true
	t.mu.Unlock()
	if !told {
		t.out.sendNow(ctx, addr, "⚠️ "+storeTrouble(err))
	}
}

// forgetTrouble ends what tellTrouble remembers of a turn key.
func (t *turns) forgetTrouble(key string) {
	t.mu.Lock()
	delete(t.troubleTold, key)
	t.mu.Unlock()
}

// prior is what an earlier run left of a turn whose input is stored.
type prior struct {
	found     bool
	sessionID string
	answer    string // the turn's final answer; "" if it did not finish
	movedOn   bool   // later input followed it: leave it be
	// files are those the turn's tools gave to send (stored with their
	// results), sent with the answer.
	files []agent.OutFile
}

// prior finds the input stored under a platform message id and what
// followed it in its session.
func (t *turns) prior(ctx context.Context, platformName, msgID string) (prior, error) {
	m, err := t.st.FindPlatformMessage(ctx, platformName, msgID)
	if errors.Is(err, store.ErrNotFound) {
		return prior{}, nil
	} else if err != nil {
		return prior{}, err
	}
	p := prior{found: true, sessionID: m.SessionID}
	msgs, err := t.st.Transcript(ctx, m.SessionID)
	if err != nil {
		return p, fmt.Errorf("load transcript: %w", err)
	}
	for _, later := range msgs {
		if later.Seq <= m.Seq {
			continue
		}
		switch {
		case later.Role == store.RoleUser:
			p.movedOn = true
			return p, nil
		case later.Role == store.RoleAssistant && len(later.ToolCalls) == 0 && later.Content != "" &&
			!strings.HasSuffix(later.Content, agent.InterruptedMarker):
			p.answer = later.Content
		case later.Role == store.RoleTool:
			for _, a := range later.Attachments {
				p.files = append(p.files, agent.OutFile{Attachment: a})
			}
		}
	}
	return p, nil
}

// turnError is a failed turn's error as a person should read it.
func turnError(err error) string {
	switch {
	case errors.Is(err, context.Canceled):
		return "The turn was stopped; what was said so far is kept."
	case errors.Is(err, agent.ErrMaxSteps):
		return "I stopped after too many steps without an answer. Say \"continue\" to let me go on."
	}
	return "The model call failed: " + err.Error() + "\nEverything said so far is kept; send your message again or /retry."
}
