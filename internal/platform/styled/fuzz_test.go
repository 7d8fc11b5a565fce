package styled

import (
	"testing"
	"unicode/utf8"
)

// Rendering any markdown never panics, keeps valid text valid, and every
// span lies inside the text in order.
func FuzzRender(f *testing.F) {
	for _, s := range []string{"**bold** _it_ ~~gone~~ `code`", "# Head\n\n- a\n- b", "```\nblock\n```", "emoji 😀 **bold 😀**", ""} {
		f.Add(s)
	}
	marks := Marks{Bold: {"*", "*"}, Italic: {"_", "_"}, Strike: {"~", "~"}, Monospace: {"`", "`"}, Block: {"```", "```"}}
	f.Fuzz(func(t *testing.T, md string) {
		for _, m := range []Marks{nil, marks} {
			out := Render(md, m)
			if utf8.ValidString(md) && !utf8.ValidString(out.Plain) {
				t.Fatalf("valid markdown %q rendered as invalid UTF-8", md)
			}
			last := 0
			for _, s := range out.Spans {
				if s.Start < 0 || s.End < s.Start || s.Start < last || s.End > len(out.Plain) {
					t.Fatalf("span %+v outside %q (or out of order)", s, out.Plain)
				}
				last = s.Start
			}
		}
	})
}
