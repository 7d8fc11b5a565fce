package llmtest

import (
	"fmt"
	"time"
)

// OpenAI chat-completions wire format.

func openaiFinish(r Reply) string {
	if len(r.ToolCalls) > 0 {
		return "tool_calls"
	}
	return "stop"
}

func openaiUsage(u Usage) map[string]any {
	return map[string]any{"prompt_tokens": u.Input, "completion_tokens": u.Output, "total_tokens": u.Input + u.Output}
}

func openaiToolCalls(r Reply) []any {
	out := make([]any, 0, len(r.ToolCalls))
	for _, c := range r.ToolCalls {
		out = append(out, map[string]any{
			"id": c.ID, "type": "function",
			"function": map[string]any{"name": c.Name, "arguments": c.Args},
		})
	}
	return out
}

// openaiCompletion is the non-streamed answer.
func openaiCompletion(req Request, r Reply, seq int) map[string]any {
	msg := map[string]any{"role": "assistant", "content": r.Text}
	if len(r.ToolCalls) > 0 {
		msg["tool_calls"] = openaiToolCalls(r)
		if r.Text == "" {
			msg["content"] = nil
		}
	}
	return map[string]any{
		"id": fmt.Sprintf("chatcmpl-%d", seq), "object": "chat.completion",
		"created": time.Now().Unix(), "model": req.Model(),
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": openaiFinish(r)}},
		"usage":   openaiUsage(r.Usage),
	}
}

// streamOpenAI writes the chunk sequence a real server sends: a role chunk,
// text chunks, tool-call chunks (name first, then arguments in pieces), a
// finish chunk, the usage chunk if asked for, and [DONE].
func streamOpenAI(sw *sseWriter, req Request, r Reply, seq int) {
	id := fmt.Sprintf("chatcmpl-%d", seq)
	created := time.Now().Unix()
	chunk := func(delta map[string]any, finish any) map[string]any {
		return map[string]any{
			"id": id, "object": "chat.completion.chunk", "created": created, "model": req.Model(),
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}},
		}
	}
	if !sw.send("", chunk(map[string]any{"role": "assistant", "content": ""}, nil)) {
		return
	}
	for _, w := range words(r.Text) {
		if !sw.sendText("", chunk(map[string]any{"content": w}, nil)) {
			return
		}
	}
	if sw.cutting() {
		return
	}
	for i, c := range r.ToolCalls {
		head := map[string]any{"index": i, "id": c.ID, "type": "function", "function": map[string]any{"name": c.Name, "arguments": ""}}
		if !sw.send("", chunk(map[string]any{"tool_calls": []any{head}}, nil)) {
			return
		}
		for _, part := range halves(c.Args) {
			d := map[string]any{"index": i, "function": map[string]any{"arguments": part}}
			if !sw.send("", chunk(map[string]any{"tool_calls": []any{d}}, nil)) {
				return
			}
		}
	}
	if !sw.send("", chunk(map[string]any{}, openaiFinish(r))) {
		return
	}
	if opts, _ := req.Body["stream_options"].(map[string]any); opts["include_usage"] == true {
		u := map[string]any{
			"id": id, "object": "chat.completion.chunk", "created": created, "model": req.Model(),
			"choices": []any{}, "usage": openaiUsage(r.Usage),
		}
		if !sw.send("", u) {
			return
		}
	}
	sw.send("", "[DONE]")
}
