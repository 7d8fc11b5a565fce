package agent

import (
	"context"
	"fmt"

	"github.com/baton-agent/baton/internal/store"
)

// Undo removes the last user turn (the person's last message and
// everything after it) from the live transcript and returns what was
// removed; the store's history keeps it. A compression summary is never
// undone: ErrNothingToUndo.
func (a *Agent) Undo(ctx context.Context, sessionID string) ([]store.Message, error) {
	unlock, err := a.lock(sessionID)
	if err != nil {
		return nil, fmt.Errorf("undo in session %s: %w", sessionID, err)
	}
	defer unlock()
	msgs, i, err := a.lastUserTurn(ctx, sessionID)
	if err != nil {
		return nil, fmt.Errorf("undo in session %s: %w", sessionID, err)
	}
	if _, err := a.replace(ctx, sessionID, msgs[:i]); err != nil {
		return nil, fmt.Errorf("undo in session %s: %w", sessionID, err)
	}
	return msgs[i:], nil
}

// Retry drops everything after the person's last message and runs the
// turn again from it, as Run does with no new input.
func (a *Agent) Retry(ctx context.Context, sessionID string, emit func(Event)) (Result, error) {
	if emit == nil {
		emit = func(Event) {}
	}
	unlock, err := a.lock(sessionID)
	if err != nil {
		return Result{}, a.failed(sessionID, emit, err)
	}
	defer unlock()
	msgs, i, err := a.lastUserTurn(ctx, sessionID)
	if err != nil {
		return Result{}, a.failed(sessionID, emit, fmt.Errorf("retry: %w", err))
	}
	if i+1 < len(msgs) {
		if _, err := a.replace(ctx, sessionID, msgs[:i+1]); err != nil {
			return Result{}, a.failed(sessionID, emit, fmt.Errorf("retry: %w", err))
		}
	}
	return a.run(ctx, sessionID, store.Message{Platform: msgs[i].Platform}, emit)
}

// lastUserTurn loads the transcript and finds the person's last message.
func (a *Agent) lastUserTurn(ctx context.Context, sessionID string) ([]store.Message, int, error) {
	msgs, err := a.Store.Transcript(ctx, sessionID)
	if err != nil {
		return nil, 0, err
	}
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == store.RoleUser && !IsSummary(msgs[i]) {
			return msgs, i, nil
		}
	}
	return nil, 0, ErrNothingToUndo
}
