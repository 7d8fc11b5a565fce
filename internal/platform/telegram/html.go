package telegram

import (
	"strings"
	"sync"

	"github.com/yuin/goldmark/renderer/html"
	"github.com/yuin/goldmark/util"

	"github.com/baton-agent/baton/internal/platform/styled"
)

// renderHTML turns a markdown reply into the small HTML dialect Telegram's
// parse_mode HTML accepts: b, i, s, code, pre (with a language class), a
// and blockquote. Everything else becomes text: headings bold, list items
// bullets, rules a dash line. Raw HTML in the markdown is shown escaped,
// never passed through, so a reply can never inject markup Telegram
// rejects. Only &, <, > (and " inside attributes) are escaped, which is all
// Telegram asks.
func renderHTML(md string) string { return htmlDialect().Render(md).Plain }

// Dialect is Telegram's HTML as the kit's markdown walker writes it.
func Dialect() *styled.Dialect { return htmlDialect() }

// htmlDialect is built once, when first needed; it is never changed.
var htmlDialect = sync.OnceValue(func() *styled.Dialect {
	return &styled.Dialect{
		Marks: styled.Marks{
			styled.Bold:      {"<b>", "</b>"},
			styled.Italic:    {"<i>", "</i>"},
			styled.Strike:    {"<s>", "</s>"},
			styled.Monospace: {"<code>", "</code>"},
		},
		Escape: func(w util.BufWriter, v []byte) { _, _ = w.Write(util.EscapeHTML(v)) },
		// goldmark's own writer resolves escapes and entities, then
		// escapes HTML.
		Text: html.NewWriter().Write,
		CodeBlock: func(lang []byte) (string, string) {
			if len(lang) > 0 && isLanguage(string(lang)) {
				return `<pre><code class="language-` + string(lang) + `">`, "</code></pre>"
			}
			return "<pre>", "</pre>"
		},
		Indent: "  ",
		Quote:  styled.Quote{Open: "<blockquote>", Sep: "\n\n", Close: "</blockquote>"},
		// An anchor only when Telegram will take the URL: a relative or
		// javascript: href makes Telegram refuse the whole message.
		Link: func(_ styled.LinkKind, dest []byte, _ string) (string, string, bool) {
			if !linkable(string(dest)) {
				return "", "", true
			}
			return `<a href="` + string(util.EscapeHTML(dest)) + `">`, "</a>", true
		},
		BareImageShowsURL: true,
		TrimSpace:         true,
	}
})

func linkable(u string) bool {
	l := strings.ToLower(u)
	for _, p := range []string{"http://", "https://", "tg://", "mailto:"} {
		if strings.HasPrefix(l, p) && len(l) > len(p) {
			return !strings.ContainsAny(u, " \n\t")
		}
	}
	return false
}

// isLanguage keeps the class attribute to plain language names.
func isLanguage(s string) bool {
	for _, c := range s {
		if !(c == '-' || c == '+' || c == '#' || c == '_' || c == '.' ||
			'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			return false
		}
	}
	return true
}
