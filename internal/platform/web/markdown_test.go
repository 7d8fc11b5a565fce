package web

import (
	"fmt"
	"strings"
	"testing"

	"golang.org/x/net/html"

	"github.com/baton-agent/baton/internal/platform/safehtml/safehtmltest"
)

// allowed is every element and attribute the page may receive from a
// reply; anything else in rendered markdown is a hole.
var allowed = safehtmltest.AllowList{
	Elements: map[string][]string{
		"p": nil, "br": nil, "strong": nil, "em": nil, "del": nil, "hr": nil, "blockquote": nil,
		"h1": nil, "h2": nil, "h3": nil, "h4": nil, "h5": nil, "h6": nil,
		"ul": nil, "ol": {"start"}, "li": nil, "pre": nil, "code": {"class"},
		"table": nil, "thead": nil, "tbody": nil, "tr": nil, "th": {"align"}, "td": {"align"},
		"a":     {"href", "rel", "target", "title"},
		"input": {"checked", "disabled", "type"},
	},
	Schemes: []string{"http", "https", "mailto"},
	Check: func(n *html.Node) string {
		switch n.Data {
		case "a":
			if rel, target := safehtmltest.Attr(n, "rel"), safehtmltest.Attr(n, "target"); rel != "noopener noreferrer" || target != "_blank" {
				return fmt.Sprintf("a rel=%q target=%q", rel, target)
			}
		case "input":
			if safehtmltest.Attr(n, "type") != "checkbox" || !safehtmltest.HasAttr(n, "disabled") {
				return "an input that is not a disabled checkbox"
			}
		}
		return ""
	},
}

// unsafeParts says what in rendered HTML is not allowed, or "".
func unsafeParts(rendered string) string { return allowed.Unsafe(rendered) }

var hostile = safehtmltest.Hostile()

func TestMarkdownIsSafe(t *testing.T) {
	for _, md := range hostile {
		out := renderMarkdown(md)
		if why := unsafeParts(out); why != "" {
			t.Errorf("%q rendered with %s:\n%s", md, why, out)
		}
	}
	// Raw HTML is not dropped: it is shown as the text it is.
	if out := renderMarkdown("hi <b>x</b>"); !strings.Contains(out, "&lt;b&gt;x&lt;/b&gt;") {
		t.Errorf("raw HTML not shown as text: %s", out)
	}
	// A link that may not be a link keeps its words.
	if out := renderMarkdown("[click here](javascript:alert(1))"); strings.Contains(out, "<a") || !strings.Contains(out, "click here") {
		t.Errorf("unsafe link: %s", out)
	}
}

func TestMarkdownRendersWhatChatsUse(t *testing.T) {
	cases := []struct{ md, want string }{
		{"- one\n- two", "<ul>\n<li>one</li>\n<li>two</li>\n</ul>"},
		{"1. one\n2. two", "<ol>\n<li>one</li>"},
		{"## Plan", "<h2>Plan</h2>"},
		{"> quoted", "<blockquote>\n<p>quoted</p>\n</blockquote>"},
		{"| a | b |\n|---|--:|\n| 1 | 2 |", `<td align="right">2</td>`},
		{"see https://go.dev/doc", `<a href="https://go.dev/doc" rel="noopener noreferrer" target="_blank">https://go.dev/doc</a>`},
		{"[docs](https://go.dev \"Go\")", `<a href="https://go.dev" rel="noopener noreferrer" target="_blank" title="Go">docs</a>`},
		{"```go\nx := 1\n```", "<pre><code class=\"language-go\">x := 1\n</code></pre>"},
		{"**bold** _it_ ~~gone~~ `code`", "<strong>bold</strong> <em>it</em> <del>gone</del> <code>code</code>"},
		{"line one\nline two", "line one<br>\nline two"},
	}
	for _, c := range cases {
		if out := renderMarkdown(c.md); !strings.Contains(out, c.want) {
			t.Errorf("%q → %s\nwant it to contain %s", c.md, out, c.want)
		}
	}
}

// Aligned columns (/help) are shown preformatted, so they stay aligned;
// the same lines inside a code block, a list or alone are left alone.
func TestColumnsStayAligned(t *testing.T) {
	help := "You can type:\n\nGeneral:\n  /help [command]  show help\n  /new             start anew\n\nModel:\n  /model [name]    show or set\n\nHandoff:\n  /handoff <to>    move it\n  /sethome         land here\n"
	out := renderMarkdown(help)
	if n := strings.Count(out, `<pre><code class="language-columns">`); n != 3 {
		t.Fatalf("want three column blocks (one of one line), got %d:\n%s", n, out)
	}
	if !strings.Contains(out, `<code class="language-columns">/model [name]    show or set`) {
		t.Errorf("a category of one command lost its alignment:\n%s", out)
	}
	if !strings.Contains(out, "/help [command]  show help\n/new             start anew\n") {
		t.Errorf("columns lost their alignment:\n%s", out)
	}
	for _, md := range []string{
		"```\n  a  b\n  c  d\n```",        // already code
		"  only  one line",                // one line is no table
		"- a  b\n- c  d",                  // a list
		"text\n  with an indented line\n", // no gap
	} {
		if out := renderMarkdown(md); strings.Contains(out, "language-columns") {
			t.Errorf("%q taken for columns:\n%s", md, out)
		}
	}
}

// Whatever the agent writes renders to the allowed elements only.
func FuzzMarkdown(f *testing.F) {
	for _, s := range hostile {
		f.Add(s)
	}
	f.Add("# Head\n\n- a\n- b\n\n  x  y\n  z  w\n")
	f.Fuzz(func(t *testing.T, md string) {
		if why := unsafeParts(renderMarkdown(md)); why != "" {
			t.Fatalf("%q rendered with %s", md, why)
		}
	})
}
