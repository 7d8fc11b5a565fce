package slack

import (
	"bytes"
	"strconv"
	"strings"

	"github.com/yuin/goldmark/ast"
	extast "github.com/yuin/goldmark/extension/ast"
	"github.com/yuin/goldmark/util"

	"github.com/baton-agent/baton/internal/platform/styled"
)

// renderMrkdwn turns a markdown reply into Slack's mrkdwn: *bold*,
// _italic_, ~strike~, `code`, ``` blocks ```, <url|links> and > quotes.
// What mrkdwn lacks becomes text: headings bold, list items bullets (or
// their numbers), rules a dash line. &, < and > are escaped everywhere,
// as Slack asks, so a reply can never mention @channel or forge a link.
func renderMrkdwn(md string) string {
	src := []byte(md)
	doc := styled.Parse(src)
	r := &mrkdwnRenderer{src: src}
	r.blocks(doc, "\n\n", 0)
	return strings.TrimSpace(r.b.String())
}

// escapeMrkdwn escapes the three characters Slack's markup gives meaning.
func escapeMrkdwn(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

type mrkdwnRenderer struct {
	src []byte
	b   strings.Builder
}

// blocks renders the block children of n separated by sep; depth is the
// list nesting level, for indenting nested items.
func (r *mrkdwnRenderer) blocks(n ast.Node, sep string, depth int) {
	first := true
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		if !first {
			r.b.WriteString(sep)
		}
		first = false
		r.block(c, depth)
	}
}

func (r *mrkdwnRenderer) block(n ast.Node, depth int) {
	switch n := n.(type) {
	case *ast.Paragraph, *ast.TextBlock:
		r.inlines(n)
	case *ast.Heading:
		r.b.WriteString("*")
		r.inlines(n)
		r.b.WriteString("*")
	case *ast.ThematicBreak:
		r.b.WriteString("———")
	case *ast.FencedCodeBlock, *ast.CodeBlock:
		// Slack shows a language name after ``` as code text: left out.
		r.b.WriteString("```\n")
		r.lines(n)
		r.b.WriteString("\n```")
	case *ast.HTMLBlock:
		r.lines(n)
		if n.HasClosure() {
			r.b.WriteString("\n")
			r.escape(n.ClosureLine.Value(r.src))
		}
	case *ast.Blockquote:
		var inner mrkdwnRenderer
		inner.src = r.src
		inner.blocks(n, "\n\n", depth)
		for i, line := range strings.Split(strings.TrimRight(inner.b.String(), "\n"), "\n") {
			if i > 0 {
				r.b.WriteString("\n")
			}
			r.b.WriteString("> " + line)
		}
	case *ast.List:
		num := n.Start
		first := true
		for item := n.FirstChild(); item != nil; item = item.NextSibling() {
			if !first {
				r.b.WriteString("\n")
			}
			first = false
			r.b.WriteString(strings.Repeat("    ", depth))
			if n.IsOrdered() {
				r.b.WriteString(strconv.Itoa(num) + ". ")
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
func (r *mrkdwnRenderer) lines(n ast.Node) {
	var buf bytes.Buffer
	l := n.Lines()
	for i := 0; i < l.Len(); i++ {
		seg := l.At(i)
		buf.Write(seg.Value(r.src))
	}
	r.escape(bytes.TrimRight(buf.Bytes(), "\n"))
}

func (r *mrkdwnRenderer) inlines(n ast.Node) {
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		r.inline(c)
	}
}

func (r *mrkdwnRenderer) inline(n ast.Node) {
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
		r.b.WriteString("`")
		for c := n.FirstChild(); c != nil; c = c.NextSibling() {
			switch t := c.(type) {
			case *ast.Text:
				r.escape(t.Segment.Value(r.src))
			case *ast.String:
				r.escape(t.Value)
			}
		}
		r.b.WriteString("`")
	case *ast.Emphasis:
		mark := "_"
		if n.Level >= 2 {
			mark = "*"
		}
		r.b.WriteString(mark)
		r.inlines(n)
		r.b.WriteString(mark)
	case *extast.Strikethrough:
		r.b.WriteString("~")
		r.inlines(n)
		r.b.WriteString("~")
	case *ast.Link:
		r.link(n.Destination, func(l *mrkdwnRenderer) { l.inlines(n) })
	case *ast.Image:
		r.link(n.Destination, func(l *mrkdwnRenderer) {
			if n.HasChildren() {
				l.inlines(n)
			} else {
				l.escape(n.Destination)
			}
		})
	case *ast.AutoLink:
		url := n.URL(r.src)
		if n.AutoLinkType == ast.AutoLinkEmail && !bytes.HasPrefix(bytes.ToLower(url), []byte("mailto:")) {
			url = append([]byte("mailto:"), url...)
		}
		r.link(url, func(l *mrkdwnRenderer) { l.escape(n.Label(r.src)) })
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

// link writes <url|label> when Slack will link the URL, and just the
// label otherwise (a relative link has nowhere to go).
func (r *mrkdwnRenderer) link(dest []byte, label func(*mrkdwnRenderer)) {
	if !linkable(string(dest)) {
		label(r)
		return
	}
	// The label is rendered apart, to leave it out when it is the URL.
	sub := &mrkdwnRenderer{src: r.src}
	label(sub)
	l := sub.b.String()
	r.b.WriteString("<")
	r.escape(dest)
	if l != "" && l != escapeMrkdwn(string(dest)) {
		r.b.WriteString("|" + l)
	}
	r.b.WriteString(">")
}

func linkable(u string) bool {
	l := strings.ToLower(u)
	for _, p := range []string{"http://", "https://", "mailto:"} {
		if strings.HasPrefix(l, p) && len(l) > len(p) {
			return !strings.ContainsAny(u, " \n\t|")
		}
	}
	return false
}

// text writes markdown text with backslash escapes and entity references
// resolved, then escaped for Slack.
func (r *mrkdwnRenderer) text(v []byte) {
	v = util.UnescapePunctuations(v)
	v = util.ResolveNumericReferences(v)
	v = util.ResolveEntityNames(v)
	r.escape(v)
}

// escape writes v literally, escaped for Slack.
func (r *mrkdwnRenderer) escape(v []byte) {
	r.b.WriteString(escapeMrkdwn(string(v)))
}
