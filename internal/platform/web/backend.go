package web

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/baton-agent/baton/internal/store"
	"github.com/baton-agent/baton/internal/transcript"
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

// Lines turns a transcript into what the page shows: transcript.View
// decides what each message is; the page marks tool calls →, results ←
// and handoffs ↪.
func Lines(msgs []store.Message) []Line {
	view := transcript.View(msgs)
	out := make([]Line, 0, len(view))
	for _, l := range view {
		line := Line{Role: string(l.Role), Text: l.Text, Time: l.Time}
		switch l.Role {
		case transcript.ToolCall:
			line.Role, line.Tool, line.Text = "tool", l.Tool, "→ "+l.Tool+" "+l.Args
		case transcript.ToolResult:
			line.Role, line.Tool, line.Text = "tool", l.Tool, "← "+l.Tool+": "+l.Text
		case transcript.Note:
			if l.Kind == store.KindHandoff {
				line.Text = "↪ " + l.Text
			}
		}
		out = append(out, line)
	}
	return out
}

func short(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}
