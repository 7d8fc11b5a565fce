package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/baton-agent/baton/internal/platform"
	"github.com/baton-agent/baton/internal/store"
)

// TranscriptStore is the part of the store Transcripts reads.
type TranscriptStore interface {
	ListSessions(ctx context.Context, f store.SessionFilter) ([]store.Session, error)
	BindingsForSession(ctx context.Context, sessionID string) ([]store.Binding, error)
	LookupBinding(ctx context.Context, key string) (store.Binding, error)
	Transcript(ctx context.Context, sessionID string) ([]store.Message, error)
}

// Transcripts offers platforms the owner's conversations from the store
// (platform.Transcripts): the web page's side bar and history.
type Transcripts struct {
	Store   TranscriptStore
	OwnerID string
}

var _ platform.Transcripts = Transcripts{}

// conversationsListed caps how many recent sessions Conversations looks at.
const conversationsListed = 50

// Conversations lists the places on platform bound to one of the owner's
// recent sessions, most recently active first (the store's order).
func (t Transcripts) Conversations(ctx context.Context, p string) ([]platform.Conversation, error) {
	ss, err := t.Store.ListSessions(ctx, store.SessionFilter{OwnerID: t.OwnerID, Limit: conversationsListed})
	if err != nil {
		return nil, fmt.Errorf("list conversations: %w", err)
	}
	out := []platform.Conversation{}
	for _, s := range ss {
		bs, err := t.Store.BindingsForSession(ctx, s.ID)
		if err != nil {
			return nil, fmt.Errorf("list conversations: %w", err)
		}
		for _, bd := range bs {
			if !strings.HasPrefix(bd.Key, p+":") {
				continue
			}
			title := s.Title
			if title == "" {
				title = "Conversation " + shortID(s.ID)
			}
			out = append(out, platform.Conversation{Key: bd.Key, Title: title, Updated: s.UpdatedAt})
		}
	}
	return out, nil
}

// View is the transcript of the session bound to key, as people see it;
// none yet is empty.
func (t Transcripts) View(ctx context.Context, key string) ([]platform.Line, error) {
	bd, err := t.Store.LookupBinding(ctx, key)
	if errors.Is(err, store.ErrNotFound) {
		return []platform.Line{}, nil
	} else if err != nil {
		return nil, fmt.Errorf("history of %s: %w", key, err)
	}
	msgs, err := t.Store.Transcript(ctx, bd.SessionID)
	if err != nil {
		return nil, fmt.Errorf("history of %s: %w", key, err)
	}
	return TranscriptLines(msgs), nil
}

// ToolShown caps a tool result in a shown transcript; the store keeps it
// whole.
const ToolShown = 2000

// summaryPrefix marks a compression summary.
const summaryPrefix = "[Summary of the earlier conversation"

// TranscriptLines turns a stored transcript into what people see: a
// handoff's synthetic message and a compression summary become notes, tool
// calls and results one line each (results cut to ToolShown bytes).
func TranscriptLines(msgs []store.Message) []platform.Line {
	out := make([]platform.Line, 0, len(msgs))
	for _, m := range msgs {
		switch m.Role {
		case store.RoleUser:
			switch {
			case strings.HasPrefix(m.Content, HandedOffPrefix):
				// Its first sentence says where from; the rest is for the model.
				note, _, _ := strings.Cut(strings.TrimSpace(strings.TrimPrefix(m.Content, HandedOffPrefix)), ". ")
				out = append(out, platform.Line{Role: "note", Text: "↪ " + strings.TrimSuffix(note, "."), Time: m.CreatedAt})
			case strings.HasPrefix(m.Content, summaryPrefix):
				out = append(out, platform.Line{Role: "note", Text: m.Content, Time: m.CreatedAt})
			default:
				out = append(out, platform.Line{Role: "user", Text: m.Content, Time: m.CreatedAt})
			}
		case store.RoleAssistant:
			if m.Content != "" {
				out = append(out, platform.Line{Role: "assistant", Text: m.Content, Time: m.CreatedAt})
			}
			var calls []struct {
				Name      string          `json:"name"`
				Arguments json.RawMessage `json:"arguments"`
			}
			if len(m.ToolCalls) > 0 && json.Unmarshal(m.ToolCalls, &calls) == nil {
				for _, c := range calls {
					out = append(out, platform.Line{Role: "tool", Tool: c.Name, Text: "→ " + c.Name + " " + readableJSON(c.Arguments), Time: m.CreatedAt})
				}
			}
		case store.RoleTool:
			text := m.Content
			if len(text) > ToolShown {
				text = strings.ToValidUTF8(text[:ToolShown], "") + " …"
			}
			out = append(out, platform.Line{Role: "tool", Tool: m.ToolName, Text: "← " + m.ToolName + ": " + text, Time: m.CreatedAt})
		}
	}
	return out
}

// readableJSON is raw without the \u003c-style escapes JSON encoders add
// for HTML safety: it is shown as text, so "a > b" can stay as typed.
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
