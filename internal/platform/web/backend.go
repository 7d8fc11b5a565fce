package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/baton-agent/baton/internal/store"
)

// Store is the part of the store the page reads.
type Store interface {
	ListSessions(ctx context.Context, f store.SessionFilter) ([]store.Session, error)
	BindingsForSession(ctx context.Context, sessionID string) ([]store.Binding, error)
	LookupBinding(ctx context.Context, key string) (store.Binding, error)
	Transcript(ctx context.Context, sessionID string) ([]store.Message, error)
}

// StoreBackend serves the page from the store: the owner's sessions that
// have a web conversation, and their transcripts.
type StoreBackend struct {
	Store   Store
	OwnerID string
}

// toolShown caps a tool result in the page; the store keeps it whole.
const toolShown = 2000

// HandoffPrefix marks the synthetic message a handoff adds; the page shows
// it as a note, not as something the person said.
const HandoffPrefix = "[baton handoff]"

// summaryPrefix marks a compression summary.
const summaryPrefix = "[Summary of the earlier conversation"

// Conversations lists web conversations, most recently active first.
func (b StoreBackend) Conversations(ctx context.Context) ([]Conversation, error) {
	ss, err := b.Store.ListSessions(ctx, store.SessionFilter{OwnerID: b.OwnerID, Limit: 50})
	if err != nil {
		return nil, fmt.Errorf("list conversations: %w", err)
	}
	out := []Conversation{{Key: Home.Key(), Title: "Home"}}
	for _, s := range ss {
		bs, err := b.Store.BindingsForSession(ctx, s.ID)
		if err != nil {
			return nil, fmt.Errorf("list conversations: %w", err)
		}
		for _, bd := range bs {
			if !strings.HasPrefix(bd.Key, Name+":") {
				continue
			}
			if bd.Key == Home.Key() {
				out[0].Updated = s.UpdatedAt
				continue
			}
			title := s.Title
			if title == "" {
				title = "Conversation " + short(s.ID)
			}
			out = append(out, Conversation{Key: bd.Key, Title: title, Updated: s.UpdatedAt})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Updated.After(out[j].Updated) })
	return out, nil
}

// History is the transcript of the session bound to key; none yet is empty.
func (b StoreBackend) History(ctx context.Context, key string) ([]Line, error) {
	bd, err := b.Store.LookupBinding(ctx, key)
	if errors.Is(err, store.ErrNotFound) {
		return []Line{}, nil
	} else if err != nil {
		return nil, fmt.Errorf("history of %s: %w", key, err)
	}
	msgs, err := b.Store.Transcript(ctx, bd.SessionID)
	if err != nil {
		return nil, fmt.Errorf("history of %s: %w", key, err)
	}
	return Lines(msgs), nil
}

// Lines turns a transcript into what the page shows.
func Lines(msgs []store.Message) []Line {
	out := make([]Line, 0, len(msgs))
	for _, m := range msgs {
		switch m.Role {
		case store.RoleUser:
			switch {
			case strings.HasPrefix(m.Content, HandoffPrefix):
				// Its first sentence says where from; the rest is for the model.
				note, _, _ := strings.Cut(strings.TrimSpace(strings.TrimPrefix(m.Content, HandoffPrefix)), ". ")
				out = append(out, Line{Role: "note", Text: "↪ " + strings.TrimSuffix(note, "."), Time: m.CreatedAt})
			case strings.HasPrefix(m.Content, summaryPrefix):
				out = append(out, Line{Role: "note", Text: m.Content, Time: m.CreatedAt})
			default:
				out = append(out, Line{Role: "user", Text: m.Content, Time: m.CreatedAt})
			}
		case store.RoleAssistant:
			if m.Content != "" {
				out = append(out, Line{Role: "assistant", Text: m.Content, Time: m.CreatedAt})
			}
			var calls []struct {
				Name      string          `json:"name"`
				Arguments json.RawMessage `json:"arguments"`
			}
			if len(m.ToolCalls) > 0 && json.Unmarshal(m.ToolCalls, &calls) == nil {
				for _, c := range calls {
					out = append(out, Line{Role: "tool", Tool: c.Name, Text: "→ " + c.Name + " " + readableJSON(c.Arguments), Time: m.CreatedAt})
				}
			}
		case store.RoleTool:
			text := m.Content
			if len(text) > toolShown {
				text = strings.ToValidUTF8(text[:toolShown], "") + " …"
			}
			out = append(out, Line{Role: "tool", Tool: m.ToolName, Text: "← " + m.ToolName + ": " + text, Time: m.CreatedAt})
		}
	}
	return out
}

// readableJSON is raw without the \u003c-style escapes JSON encoders add
// for HTML safety: the page shows it as text, so "a > b" can stay as typed.
func readableJSON(raw json.RawMessage) string {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return string(raw)
	}
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if enc.Encode(v) != nil {
		return string(raw)
	}
	return strings.TrimSpace(b.String())
}

func short(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}
