package llm_test

import (
	"strings"
	"testing"

	"github.com/baton-agent/baton/internal/llm"
)

func TestToolNamesRoundTrip(t *testing.T) {
	long := "server." + strings.Repeat("x", 80)
	tools := []llm.Tool{{Name: "shell"}, {Name: "github.list_issues"}, {Name: "github__list_issues"}, {Name: long}, {Name: "odd name/é"}}
	n := llm.NewToolNames(tools)
	seen := map[string]string{}
	for _, tl := range tools {
		w := n.Wire(tl.Name)
		if len(w) > 64 || strings.ContainsAny(w, ". /é") || w == "" {
			t.Errorf("%q goes as %q, which the APIs refuse", tl.Name, w)
		}
		if other, dup := seen[w]; dup {
			t.Errorf("%q and %q both go as %q", other, tl.Name, w)
		}
		seen[w] = tl.Name
		if back := n.Name(w); back != tl.Name {
			t.Errorf("%q came back as %q", w, back)
		}
	}
	if n.Wire("shell") != "shell" {
		t.Errorf("a name the APIs take changed: %q", n.Wire("shell"))
	}
	if got := n.Wire("github.list_issues"); got != "github__list_issues" {
		t.Errorf("github.list_issues goes as %q", got)
	}
	req := n.Encode(llm.Request{Tools: tools, Messages: []llm.Message{
		{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "1", Name: "github.list_issues"}, {ID: "2", Name: "gone.tool"}}},
		{Role: llm.RoleTool, ToolCallID: "1", ToolName: "github.list_issues"},
	}})
	if req.Messages[0].ToolCalls[0].Name != "github__list_issues" || req.Messages[0].ToolCalls[1].Name != "gone__tool" || req.Messages[1].ToolName != "github__list_issues" {
		t.Errorf("encoded messages %+v", req.Messages)
	}
	if tools[1].Name != "github.list_issues" {
		t.Error("Encode changed the caller's tools")
	}
	resp := n.Decode(llm.Response{ToolCalls: []llm.ToolCall{{Name: "github__list_issues"}, {Name: "made_up"}}})
	if resp.ToolCalls[0].Name != "github.list_issues" || resp.ToolCalls[1].Name != "made_up" {
		t.Errorf("decoded %+v", resp.ToolCalls)
	}
}
