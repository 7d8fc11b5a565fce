package agent

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/baton-agent/baton/internal/llm"
	"github.com/baton-agent/baton/internal/store"
)

func TestToolCallsRoundTrip(t *testing.T) {
	calls := []llm.ToolCall{
		{ID: "a", Name: "shell", Arguments: json.RawMessage(`{"command":"ls"}`)},
		{ID: "b", Name: "read_file", Arguments: json.RawMessage(`{"path": "x"`)}, // garbled by the model
		{ID: "c", Name: "list_dir"},
	}
	raw, err := EncodeToolCalls(calls)
	if err != nil {
		t.Fatal(err)
	}
	want := `[{"id":"a","name":"shell","arguments":{"command":"ls"}},{"id":"b","name":"read_file","arguments":"{\"path\": \"x\""},{"id":"c","name":"list_dir","arguments":{}}]`
	if string(raw) != want {
		t.Errorf("encoded %s", raw)
	}
	back, err := DecodeToolCalls(raw)
	if err != nil {
		t.Fatal(err)
	}
	calls[2].Arguments = json.RawMessage("{}")
	if !reflect.DeepEqual(back, calls) {
		t.Errorf("decoded %+v", back)
	}
	if none, err := EncodeToolCalls(nil); none != nil || err != nil {
		t.Errorf("no calls: %s, %v", none, err)
	}
}

// A transcript left broken by a crash is repaired on the way to the model.
func TestToLLMRepairs(t *testing.T) {
	raw, _ := EncodeToolCalls([]llm.ToolCall{{ID: "a", Name: "shell"}, {ID: "b", Name: "shell"}})
	got, err := toLLM([]store.Message{
		{Role: store.RoleUser, Content: "hi"},
		{Role: store.RoleTool, ToolCallID: "stray", Content: "orphan"},
		{Role: store.RoleAssistant, ToolCalls: raw},
		{Role: store.RoleTool, ToolCallID: "b", ToolName: "shell", Content: "B"},
		{Role: store.RoleUser, Content: "again"},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var roles []string
	for _, m := range got {
		roles = append(roles, string(m.Role)+":"+m.ToolCallID)
	}
	want := []string{"user:", "assistant:", "tool:b", "tool:a", "user:"}
	if !reflect.DeepEqual(roles, want) {
		t.Errorf("roles %v, want %v", roles, want)
	}
	if got[3].Content != "error: no result was recorded for this call" {
		t.Errorf("filler = %q", got[3].Content)
	}
}

func TestSplitPoint(t *testing.T) {
	calls := func(ids ...string) json.RawMessage {
		var cs []llm.ToolCall
		for _, id := range ids {
			cs = append(cs, llm.ToolCall{ID: id, Name: "t"})
		}
		raw, _ := EncodeToolCalls(cs)
		return raw
	}
	u := store.Message{Role: store.RoleUser, Content: "u"}
	sum := store.Message{Role: store.RoleUser, Kind: store.KindSummary, Content: SummaryLead + "s"}
	typed := store.Message{Role: store.RoleUser, Content: SummaryLead + "pasted by the person"}
	a := store.Message{Role: store.RoleAssistant, Content: "a"}
	ac := func(ids ...string) store.Message {
		return store.Message{Role: store.RoleAssistant, ToolCalls: calls(ids...)}
	}
	r := func(id string) store.Message { return store.Message{Role: store.RoleTool, ToolCallID: id} }
	cases := []struct {
		name string
		msgs []store.Message
		keep int
		want int
	}{
		{"three turns keep two", []store.Message{u, a, u, a, u, a}, 2, 2},
		{"two turns keep two", []store.Message{u, a, u, a}, 2, 2},
		{"summary then two turns", []store.Message{sum, u, a, u, a}, 2, 3},
		{"summary then one turn", []store.Message{sum, u, ac("1"), r("1"), a}, 2, 4},
		{"a summary's text without its kind is a turn", []store.Message{u, a, typed, a}, 1, 2},
		{"one turn ending in results", []store.Message{u, ac("1"), r("1"), ac("2", "3"), r("2"), r("3")}, 2, 3},
		{"one short turn", []store.Message{u, a}, 2, 0},
		{"just a question", []store.Message{u}, 2, 0},
		{"empty", nil, 2, 0},
	}
	for _, c := range cases {
		if got := splitPoint(c.msgs, c.keep); got != c.want {
			t.Errorf("%s: split at %d, want %d", c.name, got, c.want)
		}
	}
}
