package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/baton-agent/baton/internal/agent"
	"github.com/baton-agent/baton/internal/command"
	"github.com/baton-agent/baton/internal/platform"
	"github.com/baton-agent/baton/internal/store"
)

// approvals are questions put to the person in a chat, waiting for
// /approve, /always or /deny typed in the same conversation.
// The agent's Approver is ask; the router hands it what people type
// (answer). It has its own lock.
type approvals struct {
	turns   *turns
	out     *outbox
	log     *slog.Logger
	cmds    *command.Registry
	timeout time.Duration

	mu      sync.Mutex
	waiting map[string]chan agent.Decision // address key → answer
	// answered remembers the platform ids of recent answers, so a resent
	// "/approve" (a page reconnecting) cannot approve a later question.
	answered map[string]bool
	order    []string
}

// recentAnswers bounds the remembered answer ids.
const recentAnswers = 256

// seen reports whether the answer with this id came before, and remembers it.
func (a *approvals) seen(id string) bool {
	if id == "" {
		return false
	}
	if a.answered == nil {
		a.answered = map[string]bool{}
	}
	if a.answered[id] {
		return true
	}
	a.answered[id] = true
	a.order = append(a.order, id)
	if len(a.order) > recentAnswers {
		delete(a.answered, a.order[0])
		a.order = a.order[1:]
	}
	return false
}

// ask is the gateway agent's Approver: it asks in the chat where the
// session's turn is running and waits for the answer.
func (a *approvals) ask(ctx context.Context, req agent.ApprovalRequest) (agent.Decision, error) {
	addr, ok := a.turns.where(req.SessionID)
	if !ok {
		a.log.Warn("approval needed by a turn the gateway does not know; denied", "session", req.SessionID, "tool", req.Tool)
		return agent.Deny, nil
	}
	a.log.Debug("asking approval", "session", req.SessionID, "tool", req.Tool, "at", addr.Key())
	ch := make(chan agent.Decision, 1)
	a.mu.Lock()
	if a.waiting == nil {
		a.waiting = map[string]chan agent.Decision{}
	}
	a.waiting[addr.Key()] = ch
	a.mu.Unlock()
	defer func() {
		a.mu.Lock()
		delete(a.waiting, addr.Key())
		a.mu.Unlock()
	}()
	subject := req.Subject
	if subject == "" {
		subject = string(req.Arguments)
	}
	// Each question is its own delivery: call ids come from the model and
	// repeat across turns ("call_1"), so they cannot key it.
	key := fmt.Sprintf("approval:%s:%s:%d", req.SessionID, req.CallID, time.Now().UnixNano())
	question := outgoing{key: key, text: platform.ApprovalQuestion(req.Tool, subject), kind: store.DeliveryApproval,
		data: store.DeliveryData{Tool: req.Tool, Subject: subject, Choices: platform.ApprovalAnswers(), Expires: time.Now().Add(a.timeout)}}
	if err := a.out.deliverAll(ctx, addr, nil, question); err != nil {
		if !questionWaits(err) {
			return agent.Deny, err
		}
		// Stored and sent again in the background (a web page shows it
		// when it opens): the answer may still come.
		a.log.Warn("approval question not delivered yet; waiting for the answer", "at", addr.Key(), "err", err)
	}
	timeout := time.NewTimer(a.timeout)
	defer timeout.Stop()
	select {
	case d := <-ch:
		return d, nil
	case <-timeout.C:
		// Nobody answered (a closed tab, a phone in a pocket): deny, so the
		// conversation is not held forever, and say so.
		note := outgoing{key: key + ":timeout", text: platform.ApprovalExpired(req.Tool, a.timeout),
			kind: store.DeliveryApprovalExpired, data: store.DeliveryData{Tool: req.Tool}}
		if err := a.out.deliverAll(ctx, addr, nil, note); err != nil {
			a.log.Warn("tell of an approval timeout", "err", err)
		}
		return agent.Deny, nil
	case <-ctx.Done():
		return agent.Deny, ctx.Err()
	}
}

// questionWaits reports whether a question whose delivery failed with err
// is stored and will still be sent: it was not lost, abandoned, or for a
// platform this gateway does not run.
func questionWaits(err error) bool {
	return !errors.Is(err, errNotRecorded) && !errors.Is(err, ErrNoAdapter) && !errors.Is(err, platform.ErrPermanent) &&
		!errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded)
}

// answer hands an /approve, /always or /deny to the turn waiting for it;
// it reports whether ev was such an answer.
func (a *approvals) answer(ev platform.Event) bool {
	inv, err := a.cmds.Parse(ev.Text, command.Chat)
	if err != nil {
		return false
	}
	var d agent.Decision
	switch inv.Command.Name {
	case "approve":
		d = agent.Once
	case "always":
		d = agent.AlwaysForSession
	case "deny":
		d = agent.Deny
	default:
		return false
	}
	a.mu.Lock()
	if a.seen(ev.At.Platform + ":" + ev.ID) {
		a.mu.Unlock()
		return true // a repeat of an answer already given: it answers nothing
	}
	ch, ok := a.waiting[ev.At.Key()]
	a.mu.Unlock()
	if !ok {
		return false
	}
	select {
	case ch <- d:
	default:
	}
	return true
}
