package store

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
)

// Export is a session as a self-contained JSON document.
type Export struct {
	Session  Session   `json:"session"`
	Messages []Message `json:"messages"` // full history, superseded rows included
	Bindings []Binding `json:"bindings"`
	Handoff  Handoff   `json:"handoff"`
	// Files are the bytes the messages' attachments name, once per
	// content, so the document alone carries every file.
	Files []ExportFile `json:"files,omitempty"`
}

// ExportFile is one attachment's bytes in an export; JSON writes Data as
// base64.
type ExportFile struct {
	SHA256    string `json:"sha256"`
	MediaType string `json:"media_type"`
	Size      int64  `json:"size"`
	Data      []byte `json:"data"`
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
	files, err := exportFiles(ctx, s, msgs)
	if err != nil {
		return Export{}, fmt.Errorf("export session %s: %w", id, err)
	}
	return Export{Session: sess, Messages: msgs, Bindings: binds, Handoff: h, Files: files}, nil
}

// exportFiles reads the bytes every attachment of msgs names, once each.
func exportFiles(ctx context.Context, s Store, msgs []Message) ([]ExportFile, error) {
	var out []ExportFile
	seen := map[string]bool{}
	for _, m := range msgs {
		for _, a := range m.Attachments {
			if seen[a.SHA256] {
				continue
			}
			seen[a.SHA256] = true
			f, err := s.OpenFile(ctx, a.SHA256)
			if err != nil {
				return nil, fmt.Errorf("attachment %q: %w", a.Name, err)
			}
			data, err := io.ReadAll(f)
			f.Close()
			if err != nil {
				return nil, fmt.Errorf("attachment %q: %w", a.Name, err)
			}
			out = append(out, ExportFile{SHA256: a.SHA256, MediaType: a.MediaType, Size: int64(len(data)), Data: data})
		}
	}
	return out, nil
}

// MarshalExport renders an export as indented JSON.
func MarshalExport(e Export) ([]byte, error) {
	return json.MarshalIndent(e, "", "  ")
}
