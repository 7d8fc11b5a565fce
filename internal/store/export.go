package store

import (
	"context"
	"encoding/json"
	"fmt"
)

// Export is a session as a self-contained JSON document.
type Export struct {
	Session  Session   `json:"session"`
	Messages []Message `json:"messages"` // full history, superseded rows included
	Bindings []Binding `json:"bindings"`
	Handoff  Handoff   `json:"handoff"`
}

// ExportSession gathers everything stored about one session.
func ExportSession(ctx context.Context, s Store, id string) (Export, error) {
	sess, err := s.GetSession(ctx, id)
	if err != nil {
		return Export{}, fmt.Errorf("export session %s: %w", id, err)
	}
	msgs, err := s.History(ctx, id)
	if err != nil {
		return Export{}, fmt.Errorf("export session %s: %w", id, err)
	}
	binds, err := s.BindingsForSession(ctx, id)
	if err != nil {
		return Export{}, fmt.Errorf("export session %s: %w", id, err)
	}
	h, err := s.HandoffState(ctx, id)
	if err != nil {
		return Export{}, fmt.Errorf("export session %s: %w", id, err)
	}
	return Export{Session: sess, Messages: msgs, Bindings: binds, Handoff: h}, nil
}

// MarshalExport renders an export as indented JSON.
func MarshalExport(e Export) ([]byte, error) {
	return json.MarshalIndent(e, "", "  ")
}
