package note_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/baton-agent/baton/internal/agent"
	"github.com/baton-agent/baton/internal/note"
	"github.com/baton-agent/baton/internal/store"
)

func calls(t *testing.T, cs ...[2]string) json.RawMessage {
	t.Helper()
	type call struct {
		ID        string          `json:"id"`
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	var out []call
	for i, c := range cs {
		out = append(out, call{ID: "c" + string(rune('0'+i)), Name: c[0], Arguments: json.RawMessage(c[1])})
	}
	b, err := json.Marshal(out)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// transcript is four turns: the oldest falls outside the last three.
func transcript(t *testing.T) []store.Message {
	return []store.Message{
		{Role: store.RoleUser, Content: "an old request about the garden"},
		{Role: store.RoleAssistant, Content: "Garden noted."},
		{Role: store.RoleUser, Content: "plan a trip to Lisbon"},
		{Role: store.RoleAssistant, Content: "Lisbon it is."},
		{Role: store.RoleUser, Kind: store.KindHandoff, Content: "[baton handoff] This conversation was just handed off."},
		{Role: store.RoleAssistant, Content: "Hello in the web chat."},
		{Role: store.RoleUser, Content: "find trains\nto Porto"},
		{Role: store.RoleAssistant, ToolCalls: calls(t, [2]string{"shell", `{"command":"grep -r Porto trips/"}`}, [2]string{"read_file", `{"path":"trips/lisbon.md"}`})},
		{Role: store.RoleTool, ToolCallID: "c0", ToolName: "shell", Content: "trips/lisbon.md: Porto 9:40"},
		{Role: store.RoleTool, ToolCallID: "c1", ToolName: "read_file", Content: "# Lisbon"},
		{Role: store.RoleAssistant, Content: "The 9:40 train goes to Porto."},
		{Role: store.RoleUser, Content: "book the 9:40 train"},
		{Role: store.RoleAssistant, ToolCalls: calls(t, [2]string{"shell", `{"command":"book --train 9:40"}`}, [2]string{"web_search", `{"query":"CP tickets"}`})},
		{Role: store.RoleTool, ToolCallID: "c0", ToolName: "shell", Content: "booked"},
	}
}

func TestFallbackFromTheLastTurns(t *testing.T) {
	n := note.Fallback(transcript(t), note.ReasonInvalid, nil)
	if n.Fallback != note.ReasonInvalid {
		t.Fatalf("fallback reason %q", n.Fallback)
	}
	if n.Task != "book the 9:40 train" {
		t.Errorf("task %q, want the last request", n.Task)
	}
	for _, want := range []string{"«plan a trip to Lisbon»", "«find trains to Porto»", "Last answer: The 9:40 train goes to Porto."} {
		if !strings.Contains(n.Progress, want) {
			t.Errorf("progress lacks %q: %q", want, n.Progress)
		}
	}
	if strings.Contains(n.Progress, "garden") {
		t.Errorf("progress reaches past the last turns: %q", n.Progress)
	}
	if got := strings.Join(n.Context.Commands, "|"); got != "grep -r Porto trips/|book --train 9:40" {
		t.Errorf("commands %q", got)
	}
	if got := strings.Join(n.Context.Files, "|"); got != "trips/lisbon.md" {
		t.Errorf("files %q", got)
	}
	if len(n.NextSteps) != 0 || len(n.OpenQuestions) != 0 {
		t.Errorf("baton made up next steps or questions: %+v", n)
	}
	md := n.Markdown()
	if !strings.HasSuffix(md, "_(written by baton from the last turns: the model's note was not valid)_") {
		t.Errorf("the note does not say it is a fallback:\n%s", md)
	}
	// A fallback note is itself a valid note.
	b, _ := json.Marshal(n)
	if _, err := note.Parse(string(b)); err != nil {
		t.Errorf("the fallback does not match the schema: %v\n%s", err, b)
	}
}

func TestFallbackNamesSubjectsByTool(t *testing.T) {
	reg, err := agent.NewRegistry(agent.Tool{
		Name: "web_search", Run: func(context.Context, json.RawMessage) (string, error) { return "", nil },
		Subject: func(args json.RawMessage) string {
			var a struct{ Query string }
			_ = json.Unmarshal(args, &a)
			return a.Query
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	n := note.Fallback(transcript(t), note.ReasonNoModel, reg)
	if got := strings.Join(n.Context.Values, "|"); got != "web_search: CP tickets" {
		t.Errorf("values %q", got)
	}
	if !strings.Contains(n.Markdown(), "the model did not answer") {
		t.Errorf("no reason shown:\n%s", n.Markdown())
	}
}

func TestFallbackBounded(t *testing.T) {
	long := strings.Repeat("ä", 1000)
	n := note.Fallback([]store.Message{{Role: store.RoleUser, Content: long}, {Role: store.RoleAssistant, Content: long + long}}, note.ReasonInvalid, nil)
	b, _ := json.Marshal(n)
	if _, err := note.Parse(string(b)); err != nil {
		t.Fatalf("a fallback of long turns does not match the schema: %v", err)
	}
	if !strings.HasPrefix(n.Progress, "Last answer: ää") {
		t.Fatalf("progress %q", n.Progress[:40])
	}
}

func TestFallbackOfNothing(t *testing.T) {
	n := note.Fallback([]store.Message{{Role: store.RoleUser, Kind: store.KindHandoff, Content: "[baton handoff] moved"}}, note.ReasonEmpty, nil)
	if n.Task == "" || n.Progress == "" || !strings.Contains(n.Markdown(), note.ReasonEmpty) {
		t.Fatalf("note of an empty conversation: %+v", n)
	}
}
