package openai

import (
	"encoding/json"
	"strings"

	"github.com/baton-agent/baton/internal/llm"
)

// toolCalls assembles streamed tool-call fragments. Fragments are keyed by
// their index; a fragment carrying a new id at an index already in use starts
// a new call, because some servers number every call 0.
type toolCalls struct {
	calls   []*partialCall
	byIndex map[int]int
}

type partialCall struct {
	id, name string
	args     strings.Builder
}

func (t *toolCalls) add(index int, id, name, args string) {
	if t.byIndex == nil {
		t.byIndex = map[int]int{}
	}
	pos, ok := t.byIndex[index]
	if !ok || (id != "" && t.calls[pos].id != "" && t.calls[pos].id != id) {
		t.calls = append(t.calls, &partialCall{})
		pos = len(t.calls) - 1
		t.byIndex[index] = pos
	}
	c := t.calls[pos]
	if id != "" {
		c.id = id
	}
	// The name normally comes whole in the first fragment; append only if a
	// server splits it, never duplicate a repeated whole name.
	if name != "" && name != c.name {
		c.name += name
	}
	c.args.WriteString(args)
}

func (t *toolCalls) result() []llm.ToolCall {
	if len(t.calls) == 0 {
		return nil
	}
	out := make([]llm.ToolCall, 0, len(t.calls))
	for _, c := range t.calls {
		args := strings.TrimSpace(c.args.String())
		if args == "" {
			args = "{}"
		}
		out = append(out, llm.ToolCall{ID: c.id, Name: c.name, Arguments: json.RawMessage(args)})
	}
	return out
}
