package gateway_test

import (
	"strings"
	"testing"
)

// A search holding a NUL byte, typed into the web chat, is answered, not
// failed with an SQL error.
func TestWebSearchWithNUL(t *testing.T) {
	r := newRig(t, rigOpts{})
	pg := r.openPage(t)
	pg.send(map[string]any{"type": "say", "key": "web:dm:main", "id": "s1", "text": "remember the number 0"})
	pg.await("the echo", func(f map[string]any) bool {
		return f["type"] == "message" && strings.Contains(f["text"].(string), "remember the number 0")
	})
	pg.send(map[string]any{"type": "say", "key": "web:dm:main", "id": "s2", "text": "/search 0\x00"})
	f := pg.await("the search's answer", func(f map[string]any) bool {
		text, _ := f["text"].(string)
		return f["type"] == "message" && (strings.Contains(text, "Search failed") || strings.Contains(text, "remember the [number]") || strings.Contains(text, "[0]") || strings.Contains(text, "Nothing found"))
	})
	if text := f["text"].(string); strings.Contains(text, "Search failed") || !strings.Contains(text, "[0]") {
		t.Errorf("search answered %q", text)
	}
}
