package termmd

import (
	"strings"
	"testing"
	"unicode"

	"github.com/charmbracelet/x/ansi"
)

// Rendering any markdown at any width never panics; every line but code
// and a table that cannot be narrowed enough fits the width; nothing but
// the renderer's own SGR escapes reaches the terminal, and none at all
// without colour; no line ends in spaces.
func FuzzRender(f *testing.F) {
	for _, s := range []string{
		sample, "", "**bold *both***", "- a\n  - b\n    - c", "> > > deep", "日本語日本語日本語日本語日本語",
		"| a | b |\n|---|---|\n| 1 |", "```\n\tcode\n```", "a\x1b[2Jb\r\n\u009b31m", "[x](y) <z@w.org> ![i](j)",
		"1. a\n\n   b\n\n2. c", "<div>\n*x*\n</div>", "-\n-\n-", "***bold italic***\n\n---",
	} {
		f.Add(s, uint8(40))
	}
	f.Fuzz(func(t *testing.T, md string, w uint8) {
		width := int(w)
		for _, color := range []bool{false, true} {
			for _, l := range render(md, width, Options{Color: color}) {
				if got := ansi.StringWidth(l.text); !l.fixed && got > max(width, MinWidth) {
					t.Fatalf("line %d wide at width %d: %q", got, width, l.text)
				}
				if !color && strings.ContainsRune(l.text, '\x1b') {
					t.Fatalf("escape without colour: %q", l.text)
				}
				if strings.ContainsFunc(ansi.Strip(l.text), unicode.IsControl) {
					t.Fatalf("control character or stray escape reaches the terminal: %q", l.text)
				}
				if strings.HasSuffix(l.text, " ") {
					t.Fatalf("trailing space: %q", l.text)
				}
			}
		}
	})
}
