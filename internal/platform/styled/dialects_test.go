package styled_test

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/baton-agent/baton/internal/platform/slack"
	"github.com/baton-agent/baton/internal/platform/styled"
	"github.com/baton-agent/baton/internal/platform/telegram"
	"github.com/baton-agent/baton/internal/platform/whatsapp"
)

var update = flag.Bool("update", false, "rewrite testdata/dialects.golden from the renderers")

// samples is one set of replies every dialect renders: each part of
// markdown the walker knows, and what each service's escaping is for.
var samples = []string{
	"",
	"plain words & <simple> \"quotes\"",
	"# Title\n\ntext under it\n\n## Second *it*",
	"**bold** *it* _it_ ***both*** ~~gone~~ `a<b && c`",
	"**bold with `code` and [a link](https://example.com)**",
	"```go\nif a < b {\n\tfmt.Println(\"<hi>\")\n}\n```",
	"```\nno language\n```",
	"```js\" onload=\"x\nx\n```",
	"    indented code\n    second line",
	"<div>\nblock & more\n</div>",
	"<!-- comment -->\n\nafter",
	"raw <b>html</b> <script>alert(1)</script> stays text",
	"> said\n> twice\n\n> again",
	"> first paragraph\n>\n> second *one*\n> > nested",
	"> - a quoted item\n> - another",
	"- one\n- two\n  - nested\n    - deeper\n- three",
	"3. three\n4. four\n\n1) paren\n2) style",
	"- item with\n  two lines\n\n- loose item\n\n  second paragraph",
	"see [the docs](https://example.com/x?a=1&b=\"2\") and [titled](https://go.dev \"Go\")",
	"[rel](/relative) [js](javascript:alert(1)) [mail](mailto:me@example.com) [bad mail](mailto:)",
	"[https://example.com](https://example.com) and [](https://empty.example)",
	"[**bold label**](https://example.com/b) [pipe](https://example.com/a|b)",
	"![alt text](https://example.com/p.png) ![](https://example.com/bare.png) ![x](/local.png)",
	"<https://go.dev> <me@example.com> <mailto:you@example.com>",
	"escaped \\*stars\\* \\<tag\\> &amp; &copy; &#x41; &#0; &bogus;",
	"a  \nhard break\\\nand soft\nbreak",
	"a\n\n---\n\nb\n\n***",
	"emoji 😀 **bold 😀** `😀`",
	"a <!channel> & <@U1> > b <#C1|general>",
	"| a | b |\n|---|---|\n| 1 | 2 |",
	"  leading spaces and trailing  \n\n",
	"tab\there\t",
	"ends with no-break space\u00a0",
	"***\n\n- [ ] task\n- [x] done",
	"1. **Plan**\n   ```sh\n   make\n   ```\n2. > quoted in a list",
}

// The chat services' dialects of the one markdown walker, each given the
// same replies: what each makes of them is kept in one file, so a change
// to the walker shows what it does to every service at once.
func TestDialects(t *testing.T) {
	dialects := []struct {
		name   string
		render func(string) string
	}{
		{"plain (Signal, iMessage)", func(md string) string {
			out := styled.Render(md, nil)
			var spans []string
			for _, s := range out.Spans {
				spans = append(spans, fmt.Sprintf("%s[%d:%d]", s.Style, s.Start, s.End))
			}
			return out.Plain + "\n~ spans: " + strings.Join(spans, " ")
		}},
		{"whatsapp", whatsapp.Render},
		{"telegram", func(md string) string { return telegram.Dialect().Render(md).Plain }},
		{"slack", func(md string) string { return slack.Dialect().Render(md).Plain }},
	}
	var b strings.Builder
	for _, md := range samples {
		fmt.Fprintf(&b, "=== %q\n", md)
		for _, d := range dialects {
			out := d.render(md)
			if !utf8.ValidString(out) {
				t.Errorf("%s: %q rendered as invalid UTF-8", d.name, md)
			}
			fmt.Fprintf(&b, "--- %s\n%s\n", d.name, out)
		}
	}
	const golden = "testdata/dialects.golden"
	if *update {
		if err := os.WriteFile(golden, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -update to write it)", err)
	}
	if got := b.String(); got != string(want) {
		gl, wl := strings.Split(got, "\n"), strings.Split(string(want), "\n")
		for i := range max(len(gl), len(wl)) {
			g, w := "", ""
			if i < len(gl) {
				g = gl[i]
			}
			if i < len(wl) {
				w = wl[i]
			}
			if g != w {
				t.Fatalf("rendering differs from %s at line %d:\n got %q\nwant %q", golden, i+1, g, w)
			}
		}
	}
}
