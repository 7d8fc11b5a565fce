// Package styled turns a markdown reply into what chat services without
// markdown take: plain text, with the styled ranges either reported as
// spans (Signal's text styles) or wrapped in the service's own markers
// (WhatsApp's *bold*). Headings become bold lines, list items bullets,
// links "label (url)"; raw HTML is shown as written.
package styled

import (
	"bytes"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	extast "github.com/yuin/goldmark/extension/ast"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"
)

// Style is a kind of emphasis.
type Style string

// The styles a reply can carry.
const (
	Bold      Style = "BOLD"
	Italic    Style = "ITALIC"
	Strike    Style = "STRIKETHROUGH"
	Monospace Style = "MONOSPACE" // a code span
	Block     Style = "BLOCK"     // a code block; services without blocks show it as Monospace
)

// Span is a styled range of Text.Plain, in bytes.
type Span struct {
	Start, End int
	Style      Style
}

// chatParser reads the markdown dialect every chat service's renderer
// walks: CommonMark with strikethrough. Built once, when first needed
// (a program that renders nothing never builds it), and safe for
// concurrent use.
var chatParser = sync.OnceValue(func() parser.Parser {
	return goldmark.New(goldmark.WithExtensions(extension.Strikethrough)).Parser()
})

// Parse parses a markdown reply in the chat dialect (CommonMark with
// strikethrough), for a service's own renderer to walk.
func Parse(src []byte) ast.Node { return chatParser().Parse(text.NewReader(src)) }

// Text is a rendered reply.
type Text struct {
	Plain string // the text with any markers the Marks asked for
	Spans []Span // ranges of Plain, in document order of their starts
}

// Marks are what a service writes around a style; a style without an
// entry gets no markers (and is still reported as a span).
type Marks map[Style][2]string

// Render renders md, writing marks around styled ranges.
func Render(md string, marks Marks) Text {
	src := []byte(md)
	doc := Parse(src)
	r := &renderer{src: src, marks: marks}
	r.blocks(doc, "\n\n", 0)
	plain := r.b.String()
	trimmed := strings.TrimRight(plain, " \n")
	lead := len(trimmed) - len(strings.TrimLeft(trimmed, " \n"))
	out := Text{Plain: trimmed[lead:]}
	for _, s := range r.spans {
		s.Start = min(max(s.Start-lead, 0), len(out.Plain))
		s.End = min(max(s.End-lead, 0), len(out.Plain))
		if s.End > s.Start {
			out.Spans = append(out.Spans, s)
		}
	}
	sort.SliceStable(out.Spans, func(i, j int) bool { return out.Spans[i].Start < out.Spans[j].Start })
	return out
}

// UTF16 converts a byte offset of s into UTF-16 code units, the unit
// Signal's (and Java's) string offsets count.
func UTF16(s string, off int) int {
	n := 0
	for _, r := range s[:off] {
		if r >= 0x10000 {
			n += 2
		} else {
			n++
		}
	}
	return n
}

type renderer struct {
	src   []byte
	marks Marks
	b     strings.Builder
	spans []Span
}

// styled writes body between the style's marks and records its span.
func (r *renderer) styled(st Style, body func()) {
	m := r.marks[st]
	r.b.WriteString(m[0])
	start := r.b.Len()
	body()
	r.spans = append(r.spans, Span{Start: start, End: r.b.Len(), Style: st})
	r.b.WriteString(m[1])
}

func (r *renderer) blocks(n ast.Node, sep string, depth int) {
	first := true
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		if !first {
			r.b.WriteString(sep)
		}
		first = false
		r.block(c, depth)
	}
}

func (r *renderer) block(n ast.Node, depth int) {
	switch n := n.(type) {
	case *ast.Paragraph, *ast.TextBlock:
		r.inlines(n)
	case *ast.Heading:
		r.styled(Bold, func() { r.inlines(n) })
	case *ast.ThematicBreak:
		r.b.WriteString("———")
	case *ast.FencedCodeBlock, *ast.CodeBlock:
		r.styled(Block, func() { r.lines(n) })
	case *ast.HTMLBlock:
		r.lines(n)
		if n.HasClosure() {
			r.b.WriteString("\n")
			r.b.Write(n.ClosureLine.Value(r.src))
		}
	case *ast.Blockquote:
		r.b.WriteString("> ")
		r.blocks(n, "\n> ", depth)
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
		if n.HasChildren() {
			r.blocks(n, "\n", depth)
		} else {
			r.lines(n)
		}
	}
}

func (r *renderer) lines(n ast.Node) {
	var buf bytes.Buffer
	l := n.Lines()
	for i := 0; i < l.Len(); i++ {
		seg := l.At(i)
		buf.Write(seg.Value(r.src))
	}
	r.b.Write(bytes.TrimRight(buf.Bytes(), "\n"))
}

func (r *renderer) inlines(n ast.Node) {
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		r.inline(c)
	}
}

func (r *renderer) inline(n ast.Node) {
	switch n := n.(type) {
	case *ast.Text:
		r.text(n.Segment.Value(r.src))
		if n.HardLineBreak() || n.SoftLineBreak() {
			r.b.WriteString("\n")
		}
	case *ast.String:
		if n.IsCode() || n.IsRaw() {
			r.b.Write(n.Value)
		} else {
			r.text(n.Value)
		}
	case *ast.CodeSpan:
		r.styled(Monospace, func() {
			for c := n.FirstChild(); c != nil; c = c.NextSibling() {
				switch t := c.(type) {
				case *ast.Text:
					r.b.Write(t.Segment.Value(r.src))
				case *ast.String:
					r.b.Write(t.Value)
				}
			}
		})
	case *ast.Emphasis:
		st := Italic
		if n.Level >= 2 {
			st = Bold
		}
		r.styled(st, func() { r.inlines(n) })
	case *extast.Strikethrough:
		r.styled(Strike, func() { r.inlines(n) })
	case *ast.Link:
		r.link(string(n.Destination), func() { r.inlines(n) })
	case *ast.Image:
		r.link(string(n.Destination), func() { r.inlines(n) })
	case *ast.AutoLink:
		r.b.Write(n.Label(r.src))
	case *ast.RawHTML:
		segs := n.Segments
		for i := 0; i < segs.Len(); i++ {
			seg := segs.At(i)
			r.b.Write(seg.Value(r.src))
		}
	default:
		if n.HasChildren() {
			r.inlines(n)
		}
	}
}

// link writes "label (url)", or the label alone when it already is the
// URL.
func (r *renderer) link(dest string, label func()) {
	start := r.b.Len()
	label()
	if dest != "" && r.b.String()[start:] != dest {
		r.b.WriteString(" (" + dest + ")")
	}
}

// text writes markdown text with backslash escapes and entity references
// resolved.
func (r *renderer) text(v []byte) {
	r.b.Write(util.ResolveEntityNames(util.ResolveNumericReferences(util.UnescapePunctuations(v))))
}
