package llmtest

import (
	"fmt"
	"regexp"
)

// toolName is the pattern both APIs hold a tool's name to (OpenAI's
// bound of 64 characters is the shorter).
var toolName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// badToolName is the API's complaint about the first tool name in the
// request it would refuse — a tool offered or a call in the history —
// or "".
func badToolName(req Request) string {
	str := func(m any, k string) (string, bool) {
		mm, _ := m.(map[string]any)
		s, ok := mm[k].(string)
		return s, ok
	}
	list := func(m any, k string) []any {
		mm, _ := m.(map[string]any)
		l, _ := mm[k].([]any)
		return l
	}
	check := func(where, name string) string {
		if toolName.MatchString(name) {
			return ""
		}
		return fmt.Sprintf("%s: string %q does not match pattern '^[a-zA-Z0-9_-]{1,64}$'", where, name)
	}
	for i, t := range list(req.Body, "tools") {
		name, ok := str(t, "name") // Anthropic
		if fn, isFn := t.(map[string]any)["function"]; isFn {
			name, ok = str(fn, "name") // OpenAI
		}
		if !ok {
			continue
		}
		if msg := check(fmt.Sprintf("tools[%d].name", i), name); msg != "" {
			return msg
		}
	}
	for i, m := range req.Messages() {
		for j, c := range list(m, "tool_calls") { // OpenAI
			mm, _ := c.(map[string]any)
			name, _ := str(mm["function"], "name")
			if msg := check(fmt.Sprintf("messages[%d].tool_calls[%d].function.name", i, j), name); msg != "" {
				return msg
			}
		}
		for j, b := range list(m, "content") { // Anthropic
			if typ, _ := str(b, "type"); typ != "tool_use" {
				continue
			}
			name, _ := str(b, "name")
			if msg := check(fmt.Sprintf("messages.%d.content.%d.name", i, j), name); msg != "" {
				return msg
			}
		}
	}
	return ""
}
