package matrix

import (
	"strings"
	"testing"
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
