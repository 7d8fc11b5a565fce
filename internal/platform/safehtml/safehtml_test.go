package safehtml

import (
	"strings"
	"testing"
)

// The options are the only differences between the readers: each one
// written when asked for, and left out otherwise.
func TestOptions(t *testing.T) {
	page := New(Options{TaskLists: true, TableAlign: true, LinkAttrs: ` target="_blank"`, LinkTitles: true})
	bare := New(Options{})
	cases := []struct{ md, withOption, without string }{
		{"- [x] done", `<input checked="" disabled="" type="checkbox"`, "<li>[x] done</li>"},
		{"| a |\n|--:|\n| 1 |", `<td align="right">1</td>`, "<td>1</td>"},
		{"[docs](https://go.dev \"Go\")", `<a href="https://go.dev" target="_blank" title="Go">docs</a>`, `<a href="https://go.dev">docs</a>`},
		{"![pic](https://go.dev/p.png)", `<a href="https://go.dev/p.png" target="_blank">pic</a>`, `<a href="https://go.dev/p.png">pic</a>`},
	}
	for _, c := range cases {
		if out, err := page.Render(c.md); err != nil || !strings.Contains(out, c.withOption) {
			t.Errorf("%q with the options: %s (%v), want it to contain %s", c.md, out, err, c.withOption)
		}
		if out, err := bare.Render(c.md); err != nil || !strings.Contains(out, c.without) {
			t.Errorf("%q without options: %s (%v), want it to contain %s", c.md, out, err, c.without)
		}
	}
}
