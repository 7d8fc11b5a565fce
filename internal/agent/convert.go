package agent

import (
	"encoding/json"
	"fmt"

	"github.com/baton-agent/baton/internal/llm"
	"github.com/baton-agent/baton/internal/store"
)

// storedCall is the JSON shape of one tool call in store.Message.ToolCalls:
//
//	[{"id":"call_1","name":"read_file","arguments":{"path":"go.mod"}}]
//
// arguments is the object the model sent; arguments that were not valid
// JSON are kept as a JSON string holding the raw text.
type storedCall struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// EncodeToolCalls is the stored form of calls; nil for none.
func EncodeToolCalls(calls []llm.ToolCall) (json.RawMessage, error) {
	if len(calls) == 0 {
		return nil, nil
	}
	out := make([]storedCall, len(calls))
	for i, c := range calls {
		args := c.Arguments
		switch {
		case len(args) == 0:
			args = json.RawMessage("{}")
		case !json.Valid(args):
			quoted, err := json.Marshal(string(args))
			if err != nil {
				return nil, fmt.Errorf("encode tool call %s: %w", c.Name, err)
			}
			args = quoted
		}
		out[i] = storedCall{ID: c.ID, Name: c.Name, Arguments: args}
	}
	b, err := json.Marshal(out)
	if err != nil {
		return nil, fmt.Errorf("encode tool calls: %w", err)
	}
	return b, nil
}

// DecodeToolCalls reads the stored form back.
func DecodeToolCalls(raw json.RawMessage) ([]llm.ToolCall, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var stored []storedCall
	if err := json.Unmarshal(raw, &stored); err != nil {
		return nil, fmt.Errorf("decode tool calls: %w", err)
	}
	out := make([]llm.ToolCall, len(stored))
	for i, c := range stored {
		args := c.Arguments
		var text string
		if json.Unmarshal(args, &text) == nil {
			args = json.RawMessage(text) // garbled arguments, kept verbatim
		}
		if len(args) == 0 || string(args) == "null" {
			args = json.RawMessage("{}")
		}
		out[i] = llm.ToolCall{ID: c.ID, Name: c.Name, Arguments: args}
	}
	return out, nil
}

// toLLM converts a stored transcript to what a provider takes, repairing
// what a crash or an old bug could leave behind so the call is accepted:
// every tool call gets an answer right after its assistant message
// ("error: no result was recorded"), and results answering no call are
// dropped. The store is not changed. files, if not nil, gives the parts a
// message carries beside its text (its attachments): a person's, or a
// tool result's that the tool gave the model.
func toLLM(msgs []store.Message, files func(store.Message) []llm.Part) ([]llm.Message, error) {
	out := make([]llm.Message, 0, len(msgs))
	var open []llm.ToolCall // calls of the latest assistant message still unanswered
	closeOpen := func() {
		for _, c := range open {
			out = append(out, llm.Message{Role: llm.RoleTool, ToolCallID: c.ID, ToolName: c.Name, Content: "error: no result was recorded for this call"})
		}
		open = nil
	}
	for _, m := range msgs {
		switch m.Role {
		case store.RoleTool:
			i := indexCall(open, m.ToolCallID)
			if i < 0 {
				continue
			}
			open = append(open[:i], open[i+1:]...)
			lm := llm.Message{Role: llm.RoleTool, Content: m.Content, ToolCallID: m.ToolCallID, ToolName: m.ToolName}
			if files != nil && len(m.Attachments) > 0 {
				lm.Parts = files(m) // a tool's pictures (an MCP server's), for the model
			}
			out = append(out, lm)
		case store.RoleAssistant:
			closeOpen()
			calls, err := DecodeToolCalls(m.ToolCalls)
			if err != nil {
				return nil, fmt.Errorf("message %d: %w", m.Seq, err)
			}
			out = append(out, llm.Message{Role: llm.RoleAssistant, Content: m.Content, ToolCalls: calls})
			open = append([]llm.ToolCall(nil), calls...)
		case store.RoleUser, store.RoleSystem:
			closeOpen()
			lm := llm.Message{Role: llm.Role(m.Role), Content: m.Content}
			if files != nil && len(m.Attachments) > 0 {
				lm.Parts = files(m)
			}
			out = append(out, lm)
		default:
			return nil, fmt.Errorf("message %d: unknown role %q", m.Seq, m.Role)
		}
	}
	closeOpen()
	return out, nil
}

func indexCall(calls []llm.ToolCall, id string) int {
	for i, c := range calls {
		if c.ID == id {
			return i
		}
	}
	return -1
}
