package matrix

import (
	"strings"
	"testing"

	xhtml "golang.org/x/net/html"

	"github.com/baton-agent/baton/internal/platform/safehtml/safehtmltest"
)

func TestRenderHTML(t *testing.T) {
	cases := []struct {
		md, want string // want "" means plain text only
	}{
		{"just words & more", ""},
		{"**bold** and _it_", "<p><strong>bold</strong> and <em>it</em></p>"},
		{"~~gone~~", "<p><del>gone</del></p>"},
		{"line one\nline two", "<p>line one<br>\nline two</p>"},
		{"a <script>x</script> tag", ""}, // shown as the text it is
		{"a <b>tag</b> in **bold**", "<p>a &lt;b&gt;tag&lt;/b&gt; in <strong>bold</strong></p>"},
		{"<div>\nblock\n</div>", "<p>&lt;div&gt;<br>\nblock<br>\n&lt;/div&gt;</p>"},
		{"```go\nfmt.Println(\"<hi>\")\n```", "<pre><code class=\"language-go\">fmt.Println(&quot;&lt;hi&gt;&quot;)\n</code></pre>"},
		{"see https://example.org", `<p>see <a href="https://example.org">https://example.org</a></p>`},
		{"- one\n- two", "<ul>\n<li>one</li>\n<li>two</li>\n</ul>"},
	}
	for _, c := range cases {
		got, ok := renderHTML(c.md)
		if c.want == "" {
			if ok {
				t.Errorf("%q rendered %q, want plain text only", c.md, got)
			}
			continue
		}
		if !ok || got != c.want {
			t.Errorf("%q rendered %q (%v), want %q", c.md, got, ok, c.want)
		}
	}
}

func TestStripReplyFallback(t *testing.T) {
	cases := map[string]string{
		"> <@a:x> earlier\n> more\n\nmy answer": "my answer",
		"> not a fallback":                      "",
		"plain":                                 "plain",
		"> quote\nno blank line":                "no blank line",
	}
	for in, want := range cases {
		if got := stripReplyFallback(in); got != want {
			t.Errorf("stripReplyFallback(%q) = %q, want %q", in, got, want)
		}
	}
	if !strings.HasPrefix(stripReplyFallback("x > y"), "x") {
		t.Error("a body not starting with a quote changed")
	}
}

// matrixAllowed is what Matrix's spec lets a formatted body hold
// (m.room.message, org.matrix.custom.html); clients drop the rest.
var matrixAllowed = safehtmltest.AllowList{
	Elements: map[string][]string{
		"font": {"data-mx-bg-color", "data-mx-color", "color"}, "del": nil,
		"h1": nil, "h2": nil, "h3": nil, "h4": nil, "h5": nil, "h6": nil,
		"blockquote": nil, "p": nil, "a": {"target", "href"}, "ul": nil, "ol": {"start"},
		"sup": nil, "sub": nil, "li": nil, "b": nil, "i": nil, "u": nil, "strong": nil, "em": nil,
		"s": nil, "code": {"class"}, "hr": nil, "br": nil, "div": {"data-mx-maths"},
		"table": nil, "thead": nil, "tbody": nil, "tr": nil, "th": nil, "td": nil, "caption": nil,
		"pre": nil, "span": {"data-mx-bg-color", "data-mx-color", "data-mx-spoiler", "data-mx-maths"},
		"img": {"width", "height", "alt", "title", "src"}, "details": nil, "summary": nil,
	},
	Schemes: []string{"http", "https", "ftp", "mailto", "magnet"},
	Check: func(n *xhtml.Node) string {
		switch n.Data {
		case "img":
			if src := safehtmltest.Attr(n, "src"); !strings.HasPrefix(src, "mxc://") {
				return "img src=" + src
			}
		case "code":
			if c := safehtmltest.Attr(n, "class"); c != "" && !strings.HasPrefix(c, "language-") {
				return "code class=" + c
			}
		}
		return ""
	},
}

func TestRenderHTMLIsSafe(t *testing.T) {
	for _, md := range append(safehtmltest.Hostile(), "![pic](https://example.org/p.png \"t\")", "[t](https://example.org \"title\")", "| a | b |\n|:--|--:|\n| 1 | 2 |") {
		out, _ := renderHTML(md)
		if why := matrixAllowed.Unsafe(out); why != "" {
			t.Errorf("%q rendered with %s:\n%s", md, why, out)
		}
	}
}
