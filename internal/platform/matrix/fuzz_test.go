package matrix

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// Rendering any markdown to Matrix HTML never panics, keeps valid text
// valid, and never lets raw HTML from the reply through as markup.
func FuzzRenderHTML(f *testing.F) {
	for _, s := range []string{"**bold** and `code`", "- a\n- b", "<script>alert(1)</script>", "[x](javascript:alert(1))", "```\n<b>\n```", "plain", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, md string) {
		out, _ := renderHTML(md)
		if utf8.ValidString(md) && !utf8.ValidString(out) {
			t.Fatalf("valid markdown %q rendered as invalid UTF-8", md)
		}
		if strings.Contains(strings.ToLower(out), "<script") {
			t.Fatalf("markdown %q let a script tag through: %q", md, out)
		}
	})
}
