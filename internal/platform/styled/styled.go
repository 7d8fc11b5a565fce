// Package styled is the one markdown walker every chat service's
// renderer uses. A Dialect says how a service writes what markdown
// means — its escaping, a mark around each style, a code block, a link, a
// list item, a quote — and the walker does the rest the same way for all:
// headings become bold lines, list items bullets (or their numbers),
// rules a dash line, raw HTML is shown as written (escaped as the
// service needs). Render is the dialect of services without markup:
// plain text with the styled ranges reported as spans (Signal's text
// styles) or wrapped in the service's own markers (WhatsApp's *bold*).
package styled

import (
	"bytes"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

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
// strikethrough).
func Parse(src []byte) ast.Node { return chatParser().Parse(text.NewReader(src)) }

// Text is a rendered reply.
type Text struct {
	Plain string // the text with any markers the dialect wrote
	Spans []Span // ranges of Plain, in document order of their starts
}

// Marks are what a service writes around a style; a style without an
// entry gets no markers (and is still reported as a span).
type Marks map[Style][2]string

// LinkKind is what in the markdown a link came from.
type LinkKind int

// The kinds of link.
const (
	LinkText  LinkKind = iota // [label](dest)
	LinkImage                 // ![alt](dest)
	LinkAuto                  // <dest>
)

// Dialect is how one service writes a reply. Every func may be nil, for
// the plain-text default.
type Dialect struct {
	// Marks are written around each style, headings being Bold. A Block
	// without CodeBlock gets Marks[Block].
	Marks Marks
	// Escape writes text as the service shows it literally (code, raw
	// HTML). Default: as it is.
	Escape func(w util.BufWriter, v []byte)
	// Text writes markdown text: backslash escapes and entity
	// references resolved, then escaped. Default: resolved, then Escape.
	Text func(w util.BufWriter, v []byte)
	// CodeBlock is what opens and closes a code block in lang (empty for
	// none or an indented block).
	CodeBlock func(lang []byte) (open, close string)
	// Item is the bullet of a list item: num and marker are the
	// number and the marker as written ('.' or ')') in an ordered list.
	// Default: "3. ", or "• " unordered.
	Item func(ordered bool, num int, marker byte) string
	// Indent is written once per level of list nesting before an item.
	Indent string
	// Quote is how a blockquote is written.
	Quote Quote
	// Link writes a link around its label, which is already written
	// (rendered, escaped) as label: before and after go around it, and
	// without keepLabel the label is replaced by before+after. dest is
	// the address as written (an email autolink's with mailto:).
	// Default: the label alone.
	Link func(kind LinkKind, dest []byte, label string) (before, after string, keepLabel bool)
	// BareImageShowsURL labels an image without words by its address.
	BareImageShowsURL bool
	// TrimSpace trims every Unicode space around the reply, not just
	// spaces and newlines.
	TrimSpace bool
}

// Quote is how a blockquote is written: Open, its blocks separated by
// Sep, Close; with LinePrefix, every line of the quote's blocks starts
// with it.
type Quote struct {
	Open, Sep, Close, LinePrefix string
}

// Plain is the dialect of services without markup: text, with marks
// around styled ranges, links "label (url)".
func Plain(marks Marks) *Dialect {
	return &Dialect{
		Marks:  marks,
		Indent: "  ",
		Quote:  Quote{Open: "> ", Sep: "\n> "},
		Link: func(kind LinkKind, dest []byte, label string) (string, string, bool) {
			if kind == LinkAuto || len(dest) == 0 || label == string(dest) {
				return "", "", true
			}
			return "", " (" + string(dest) + ")", true
		},
	}
}

// Render renders md, writing marks around styled ranges.
func Render(md string, marks Marks) Text { return Plain(marks).Render(md) }

// Render renders md in the dialect.
func (d *Dialect) Render(md string) Text {
	src := []byte(md)
	w := &walker{src: src, d: d}
	w.blocks(Parse(src), "\n\n", 0)
	isSpace := func(r rune) bool { return r == ' ' || r == '\n' }
	if d.TrimSpace {
		isSpace = unicode.IsSpace
	}
	trimmed := bytes.TrimRightFunc(w.out, isSpace)
	lead := len(trimmed) - len(bytes.TrimLeftFunc(trimmed, isSpace))
	out := Text{Plain: string(trimmed[lead:])}
	for _, s := range w.spans {
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

// walker renders one reply; it is the util.BufWriter a dialect writes to.
type walker struct {
	src   []byte
	d     *Dialect
	out   []byte
	spans []Span
}

func (w *walker) Write(p []byte) (int, error)       { w.out = append(w.out, p...); return len(p), nil }
func (w *walker) WriteString(s string) (int, error) { w.out = append(w.out, s...); return len(s), nil }
func (w *walker) WriteByte(c byte) error            { w.out = append(w.out, c); return nil }
func (w *walker) WriteRune(r rune) (int, error) {
	n := len(w.out)
	w.out = utf8.AppendRune(w.out, r)
	return len(w.out) - n, nil
}
func (w *walker) Available() int { return 1 << 20 } // never full: it grows
func (w *walker) Buffered() int  { return 0 }
func (w *walker) Flush() error   { return nil }

// styled writes body between open and close and records its span.
func (w *walker) styled(st Style, open, close string, body func()) {
	w.out = append(w.out, open...)
	start := len(w.out)
	body()
	w.spans = append(w.spans, Span{Start: start, End: len(w.out), Style: st})
	w.out = append(w.out, close...)
}

func (w *walker) mark(st Style, body func()) {
	m := w.d.Marks[st]
	w.styled(st, m[0], m[1], body)
}

func (w *walker) escape(v []byte) {
	if w.d.Escape != nil {
		w.d.Escape(w, v)
	} else {
		w.out = append(w.out, v...)
	}
}

// text writes markdown text with backslash escapes and entity references
// resolved.
func (w *walker) text(v []byte) {
	if w.d.Text != nil {
		w.d.Text(w, v)
		return
	}
	w.escape(util.ResolveEntityNames(util.ResolveNumericReferences(util.UnescapePunctuations(v))))
}

// blocks renders the block children of n separated by sep; depth is the
// list nesting level, for indenting nested items.
func (w *walker) blocks(n ast.Node, sep string, depth int) {
	first := true
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		if !first {
			w.out = append(w.out, sep...)
		}
		first = false
		w.block(c, depth)
	}
}

func (w *walker) block(n ast.Node, depth int) {
	switch n := n.(type) {
	case *ast.Paragraph, *ast.TextBlock:
		w.inlines(n)
	case *ast.Heading:
		w.mark(Bold, func() { w.inlines(n) })
	case *ast.ThematicBreak:
		w.out = append(w.out, "———"...)
	case *ast.FencedCodeBlock:
		w.codeBlock(n, n.Language(w.src))
	case *ast.CodeBlock:
		w.codeBlock(n, nil)
	case *ast.HTMLBlock:
		w.lines(n)
		if n.HasClosure() {
			w.out = append(w.out, '\n')
			w.escape(n.ClosureLine.Value(w.src))
		}
	case *ast.Blockquote:
		w.quote(n, depth)
	case *ast.List:
		num := n.Start
		first := true
		for item := n.FirstChild(); item != nil; item = item.NextSibling() {
			if !first {
				w.out = append(w.out, '\n')
			}
			first = false
			w.out = append(w.out, strings.Repeat(w.d.Indent, depth)...)
			w.out = append(w.out, w.item(n.IsOrdered(), num, n.Marker)...)
			if n.IsOrdered() {
				num++
			}
			w.blocks(item, "\n", depth+1)
		}
	default:
		// Unknown blocks (extensions) still show their text.
		if n.HasChildren() {
			w.blocks(n, "\n", depth)
		} else {
			w.lines(n)
		}
	}
}

func (w *walker) item(ordered bool, num int, marker byte) string {
	if w.d.Item != nil {
		return w.d.Item(ordered, num, marker)
	}
	if ordered {
		return strconv.Itoa(num) + string(marker) + " "
	}
	return "• "
}

func (w *walker) codeBlock(n ast.Node, lang []byte) {
	open, close := w.d.Marks[Block][0], w.d.Marks[Block][1]
	if w.d.CodeBlock != nil {
		open, close = w.d.CodeBlock(lang)
	}
	w.styled(Block, open, close, func() { w.lines(n) })
}

// quote writes a blockquote; with a line prefix its blocks are rendered
// apart first, to start each of their lines with it.
func (w *walker) quote(n ast.Node, depth int) {
	q := w.d.Quote
	w.out = append(w.out, q.Open...)
	if q.LinePrefix == "" {
		w.blocks(n, q.Sep, depth)
		w.out = append(w.out, q.Close...)
		return
	}
	inner := &walker{src: w.src, d: w.d}
	inner.blocks(n, q.Sep, depth)
	body := bytes.TrimRight(inner.out, "\n")
	base := len(w.out)
	// at is where offset p of body lands, each line having gained a prefix.
	at := func(p int) int {
		p = min(p, len(body))
		return base + p + len(q.LinePrefix)*(1+bytes.Count(body[:p], []byte{'\n'}))
	}
	for i, line := range bytes.Split(body, []byte{'\n'}) {
		if i > 0 {
			w.out = append(w.out, '\n')
		}
		w.out = append(w.out, q.LinePrefix...)
		w.out = append(w.out, line...)
	}
	for _, s := range inner.spans {
		w.spans = append(w.spans, Span{Start: at(s.Start), End: at(s.End), Style: s.Style})
	}
	w.out = append(w.out, q.Close...)
}

// lines writes a block's raw lines, escaped, without the final newline.
func (w *walker) lines(n ast.Node) {
	var buf bytes.Buffer
	l := n.Lines()
	for i := 0; i < l.Len(); i++ {
		seg := l.At(i)
		buf.Write(seg.Value(w.src))
	}
	w.escape(bytes.TrimRight(buf.Bytes(), "\n"))
}

func (w *walker) inlines(n ast.Node) {
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		w.inline(c)
	}
}

func (w *walker) inline(n ast.Node) {
	switch n := n.(type) {
	case *ast.Text:
		w.text(n.Segment.Value(w.src))
		if n.HardLineBreak() || n.SoftLineBreak() {
			w.out = append(w.out, '\n')
		}
	case *ast.String:
		if n.IsCode() || n.IsRaw() {
			w.escape(n.Value)
		} else {
			w.text(n.Value)
		}
	case *ast.CodeSpan:
		w.mark(Monospace, func() {
			for c := n.FirstChild(); c != nil; c = c.NextSibling() {
				switch t := c.(type) {
				case *ast.Text:
					w.escape(t.Segment.Value(w.src))
				case *ast.String:
					w.escape(t.Value)
				}
			}
		})
	case *ast.Emphasis:
		st := Italic
		if n.Level >= 2 {
			st = Bold
		}
		w.mark(st, func() { w.inlines(n) })
	case *extast.Strikethrough:
		w.mark(Strike, func() { w.inlines(n) })
	case *ast.Link:
		w.link(LinkText, n.Destination, func() { w.inlines(n) })
	case *ast.Image:
		w.link(LinkImage, n.Destination, func() {
			if !n.HasChildren() && w.d.BareImageShowsURL {
				w.escape(n.Destination)
			} else {
				w.inlines(n)
			}
		})
	case *ast.AutoLink:
		url := n.URL(w.src)
		if n.AutoLinkType == ast.AutoLinkEmail && !bytes.HasPrefix(bytes.ToLower(url), []byte("mailto:")) {
			url = append([]byte("mailto:"), url...)
		}
		w.link(LinkAuto, url, func() { w.escape(n.Label(w.src)) })
	case *ast.RawHTML:
		segs := n.Segments
		for i := 0; i < segs.Len(); i++ {
			seg := segs.At(i)
			w.escape(seg.Value(w.src))
		}
	default:
		if n.HasChildren() {
			w.inlines(n)
		}
	}
}

// link writes the label, then lets the dialect write the link around it
// (or in its place).
func (w *walker) link(kind LinkKind, dest []byte, label func()) {
	start, spans := len(w.out), len(w.spans)
	label()
	if w.d.Link == nil {
		return
	}
	before, after, keep := w.d.Link(kind, dest, string(w.out[start:]))
	if !keep {
		w.out, w.spans = w.out[:start], w.spans[:spans]
		w.out = append(w.out, before...)
		w.out = append(w.out, after...)
		return
	}
	if before != "" {
		w.out = append(w.out[:start], append([]byte(before), w.out[start:]...)...)
		for i := spans; i < len(w.spans); i++ {
			w.spans[i].Start += len(before)
			w.spans[i].End += len(before)
		}
	}
	w.out = append(w.out, after...)
}
