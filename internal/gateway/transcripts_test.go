package gateway_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/baton-agent/baton/internal/gateway"
	"github.com/baton-agent/baton/internal/store"
	"github.com/baton-agent/baton/internal/transcript"
)

func TestTranscriptLines(t *testing.T) {
	msgs := []store.Message{
		{Role: store.RoleUser, Content: "list files"},
		{Role: store.RoleAssistant, Content: "", ToolCalls: json.RawMessage(`[{"id":"c1","name":"shell","arguments":{"command":"ls \u003e out"}}]`)},
		{Role: store.RoleTool, ToolName: "shell", ToolCallID: "c1", Content: strings.Repeat("é", 3000)},
		{Role: store.RoleAssistant, Content: "Two files."},
		{Role: store.RoleUser, Kind: store.KindHandoff, Content: gateway.HandoffLead + " This conversation was just handed off from the terminal to the web chat. Greet them."},
		{Role: store.RoleUser, Kind: store.KindSummary, Content: "Summary: two files."},
		{Role: store.RoleUser, Content: gateway.HandoffLead + " typed by the person, not a handoff"},
	}
	lines := gateway.TranscriptLines(msgs)
	if len(lines) != 7 {
		t.Fatalf("lines %+v", lines)
	}
	if lines[1].Role != "tool" || lines[1].Text != `→ shell {"command":"ls > out"}` {
		t.Errorf("tool call line %+v", lines[1])
	}
	if c, r := lines[1], lines[2]; c.Call != "call" || c.Detail != `{"command":"ls > out"}` || c.CallID != "c1" ||
		r.Call != "result" || !strings.HasPrefix(r.Detail, "é") || r.CallID != "c1" {
		t.Errorf("tool lines not told apart for a page: %+v / %.40q %s %s", c, r.Detail, r.Call, r.CallID)
	}
	if !strings.HasPrefix(lines[2].Text, "← shell: é") || !strings.HasSuffix(lines[2].Text, " …") || len(lines[2].Text) > transcript.ResultShown+40 {
		t.Errorf("tool result line not cut: %d bytes", len(lines[2].Text))
	}
	if !strings.Contains(lines[2].Text, "é") || strings.ContainsRune(lines[2].Text, '\uFFFD') {
		t.Errorf("tool result cut inside a character")
	}
	if lines[3].Role != "assistant" || lines[4].Role != "note" {
		t.Errorf("roles %s %s", lines[3].Role, lines[4].Role)
	}
	if lines[4].Text != "↪ This conversation was just handed off from the terminal to the web chat" {
		t.Errorf("handoff note %q", lines[4].Text)
	}
	if lines[5].Role != "note" || lines[5].Text != "Summary: two files." {
		t.Errorf("summary line %+v", lines[5])
	}
	// Only the kind makes a note: the same words typed by a person are theirs.
	if lines[6].Role != "user" {
		t.Errorf("typed lead shown as %+v", lines[6])
	}
}
