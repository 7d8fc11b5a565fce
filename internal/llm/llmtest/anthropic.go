package llmtest

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Anthropic messages wire format.

func anthropicStop(r Reply) string {
	if len(r.ToolCalls) > 0 {
		return "tool_use"
	}
	return "end_turn"
}

// toolInput decodes call arguments for a tool_use block's input object.
func toolInput(c Call) any {
	var v any
	if json.Unmarshal([]byte(c.Args), &v) != nil {
		return map[string]any{}
	}
	return v
}

// anthropicMessage is the non-streamed answer.
func anthropicMessage(req Request, r Reply, seq int) map[string]any {
	content := []any{}
	if r.Text != "" {
		content = append(content, map[string]any{"type": "text", "text": r.Text})
	}
	for _, c := range r.ToolCalls {
		content = append(content, map[string]any{"type": "tool_use", "id": c.ID, "name": c.Name, "input": toolInput(c)})
	}
	return map[string]any{
		"id": fmt.Sprintf("msg_%d", seq), "type": "message", "role": "assistant", "model": req.Model(),
		"content": content, "stop_reason": anthropicStop(r), "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": r.Usage.Input, "output_tokens": r.Usage.Output},
	}
}

// streamAnthropic writes message_start, one content block per text / tool
// call (tool input as input_json_delta pieces), message_delta with the stop
// reason and usage, and message_stop.
func streamAnthropic(sw *sseWriter, req Request, r Reply, seq int) {
	start := map[string]any{"type": "message_start", "message": map[string]any{
		"id": fmt.Sprintf("msg_%d", seq), "type": "message", "role": "assistant", "model": req.Model(),
		"content": []any{}, "stop_reason": nil, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": r.Usage.Input, "output_tokens": 1},
	}}
	if !sw.send("message_start", start) || !sw.send("ping", map[string]any{"type": "ping"}) {
		return
	}
	index := 0
	if r.Text != "" || sw.cutting() {
		block := map[string]any{"type": "content_block_start", "index": index, "content_block": map[string]any{"type": "text", "text": ""}}
		if !sw.send("content_block_start", block) {
			return
		}
		for _, w := range words(r.Text) {
			d := map[string]any{"type": "content_block_delta", "index": index, "delta": map[string]any{"type": "text_delta", "text": w}}
			if !sw.sendText("content_block_delta", d) {
				return
			}
		}
		if sw.cutting() {
			return
		}
		if !sw.send("content_block_stop", map[string]any{"type": "content_block_stop", "index": index}) {
			return
		}
		index++
	}
	for _, c := range r.ToolCalls {
		block := map[string]any{"type": "content_block_start", "index": index, "content_block": map[string]any{
			"type": "tool_use", "id": c.ID, "name": c.Name, "input": map[string]any{},
		}}
		if !sw.send("content_block_start", block) {
			return
		}
		for _, part := range halves(compact(c.Args)) {
			d := map[string]any{"type": "content_block_delta", "index": index, "delta": map[string]any{"type": "input_json_delta", "partial_json": part}}
			if !sw.send("content_block_delta", d) {
				return
			}
		}
		if !sw.send("content_block_stop", map[string]any{"type": "content_block_stop", "index": index}) {
			return
		}
		index++
	}
	delta := map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": anthropicStop(r), "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": r.Usage.Output},
	}
	if !sw.send("message_delta", delta) {
		return
	}
	sw.send("message_stop", map[string]any{"type": "message_stop"})
}

func compact(s string) string {
	var b bytes.Buffer
	if json.Compact(&b, []byte(s)) != nil {
		return s
	}
	return b.String()
}
