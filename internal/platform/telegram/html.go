package telegram

import (
	"bufio"
	"bytes"
	"strconv"
	"strings"

	"github.com/yuin/goldmark/ast"
	extast "github.com/yuin/goldmark/extension/ast"
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
func renderHTML(md string) string {
	src := []byte(md)
	doc := styled.Parse(src)
	r := &htmlRenderer{src: src, w: html.NewWriter()}
	r.blocks(doc, "\n\n", 0)
	return strings.TrimSpace(r.b.String())
}

type htmlRenderer struct {
	src []byte
	w   html.Writer
	b   strings.Builder
	bw  *bufio.Writer // into b, for w; flushed after each use
}

// blocks renders the block children of n separated by sep; depth is the
// list nesting level, for indenting nested bullets.
func (r *htmlRenderer) blocks(n ast.Node, sep string, depth int) {
	first := true
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		if !first {
			r.b.WriteString(sep)
		}
		first = false
		r.block(c, depth)
	}
}

func (r *htmlRenderer) block(n ast.Node, depth int) {
	switch n := n.(type) {
	case *ast.Paragraph, *ast.TextBlock:
		r.inlines(n)
	case *ast.Heading:
		r.b.WriteString("<b>")
		r.inlines(n)
		r.b.WriteString("</b>")
	case *ast.ThematicBreak:
		r.b.WriteString("———")
	case *ast.FencedCodeBlock:
		lang := string(n.Language(r.src))
		if lang != "" && isLanguage(lang) {
			r.b.WriteString(`<pre><code class="language-` + lang + `">`)
			r.lines(n)
			r.b.WriteString("</code></pre>")
		} else {
			r.b.WriteString("<pre>")
			r.lines(n)
			r.b.WriteString("</pre>")
		}
	case *ast.CodeBlock:
		r.b.WriteString("<pre>")
		r.lines(n)
		r.b.WriteString("</pre>")
	case *ast.HTMLBlock:
		r.lines(n)
		if n.HasClosure() {
			r.b.WriteString("\n")
			r.escape(n.ClosureLine.Value(r.src))
		}
	case *ast.Blockquote:
		r.b.WriteString("<blockquote>")
		r.blocks(n, "\n\n", depth)
		r.b.WriteString("</blockquote>")
	case *ast.List:
		num := n.Start
		first := true
		for item := n.FirstChild(); item != nil; item = item.NextSibling() {
			if !first {
				r.b.WriteString("\n")
			}
			first = false
			r.b.WriteString(strings.Repeat("  ", depth))
			if n.IsOrdered() {
				r.b.WriteString(strconv.Itoa(num) + string(n.Marker) + " ")
				num++
			} else {
				r.b.WriteString("• ")
			}
			r.blocks(item, "\n", depth+1)
		}
	default:
		// Unknown blocks (extensions) still show their text.
		if n.HasChildren() {
			r.blocks(n, "\n", depth)
		} else {
			r.lines(n)
		}
	}
}

// lines writes a block's raw lines, escaped, without the final newline.
func (r *htmlRenderer) lines(n ast.Node) {
	var buf bytes.Buffer
	l := n.Lines()
	for i := 0; i < l.Len(); i++ {
		seg := l.At(i)
		buf.Write(seg.Value(r.src))
	}
	r.escape(bytes.TrimRight(buf.Bytes(), "\n"))
}

func (r *htmlRenderer) inlines(n ast.Node) {
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		r.inline(c)
	}
}

func (r *htmlRenderer) inline(n ast.Node) {
	switch n := n.(type) {
	case *ast.Text:
		r.text(n.Segment.Value(r.src))
		if n.HardLineBreak() || n.SoftLineBreak() {
			r.b.WriteString("\n")
		}
	case *ast.String:
		if n.IsCode() || n.IsRaw() {
			r.escape(n.Value)
		} else {
			r.text(n.Value)
		}
	case *ast.CodeSpan:
		r.b.WriteString("<code>")
		for c := n.FirstChild(); c != nil; c = c.NextSibling() {
			switch t := c.(type) {
			case *ast.Text:
				r.escape(t.Segment.Value(r.src))
			case *ast.String:
				r.escape(t.Value)
			}
		}
		r.b.WriteString("</code>")
	case *ast.Emphasis:
		tag := "i"
		if n.Level >= 2 {
			tag = "b"
		}
		r.b.WriteString("<" + tag + ">")
		r.inlines(n)
		r.b.WriteString("</" + tag + ">")
	case *extast.Strikethrough:
		r.b.WriteString("<s>")
		r.inlines(n)
		r.b.WriteString("</s>")
	case *ast.Link:
		r.link(n.Destination, func() { r.inlines(n) })
	case *ast.Image:
		r.link(n.Destination, func() {
			if n.HasChildren() {
				r.inlines(n)
			} else {
				r.escape(n.Destination)
			}
		})
	case *ast.AutoLink:
		url := n.URL(r.src)
		if n.AutoLinkType == ast.AutoLinkEmail && !bytes.HasPrefix(bytes.ToLower(url), []byte("mailto:")) {
			url = append([]byte("mailto:"), url...)
		}
		r.link(url, func() { r.escape(n.Label(r.src)) })
	case *ast.RawHTML:
		segs := n.Segments
		for i := 0; i < segs.Len(); i++ {
			seg := segs.At(i)
			r.escape(seg.Value(r.src))
		}
	default:
		if n.HasChildren() {
			r.inlines(n)
		}
	}
}

// link writes an anchor when Telegram will take the URL, and just the
// label otherwise: a relative or javascript: href makes Telegram refuse
// the whole message.
func (r *htmlRenderer) link(dest []byte, label func()) {
	if !linkable(string(dest)) {
		label()
		return
	}
	r.b.WriteString(`<a href="`)
	r.escape(dest)
	r.b.WriteString(`">`)
	label()
	r.b.WriteString("</a>")
}

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

// text writes markdown text: backslash escapes and entity references
// resolved, then HTML-escaped (goldmark's own writer does both).
func (r *htmlRenderer) text(v []byte) {
	if r.bw == nil {
		r.bw = bufio.NewWriterSize(&r.b, 256) // one per reply, not per run of text
	}
	r.w.Write(r.bw, v)
	_ = r.bw.Flush()
}

// escape writes v literally, HTML-escaped.
func (r *htmlRenderer) escape(v []byte) {
	r.b.Write(util.EscapeHTML(v))
}
