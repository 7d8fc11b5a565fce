// Package termmd renders markdown for a terminal: SGR escapes for
// headings, emphasis, links and code; paragraphs word-wrapped to a width
// (wide characters counted as two columns); lists with hanging indents;
// block quotes behind a bar; tables drawn with box lines at their natural
// width. Code is shown as written, in its own colour, never highlighted
// or re-wrapped.
package termmd

import (
	"strconv"
	"strings"
	"sync"

	"github.com/charmbracelet/x/ansi"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	extast "github.com/yuin/goldmark/extension/ast"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"
)

// Options choose how the output may look.
type Options struct {
	// Color allows escape sequences. Without it (NO_COLOR) the output has
	// none at all, and emphasis, headings and code spans keep markdown's
	// own markers so that what they meant stays visible.
	Color bool
}

// MinWidth is the narrowest width rendered; a smaller width is taken as
// this one. Below it, nested lists and quotes would have no room left.
const MinWidth = 20

// minInner is the narrowest a quote's or list item's content is made by
// its bar or marker; deeper nesting is drawn without further indent.
const minInner = 10

// SGR parameters of each style. Basic colours only, so that the
// terminal's own theme (dark or light) decides the shades.
const (
	sgrBold      = "1"
	sgrItalic    = "3"
	sgrStrike    = "9"
	sgrCode      = "33"
	sgrLink      = "4;34"
	sgrDim       = "2"
	sgrLanguage  = "2;3"
	sgrHeading1  = "1;4;96"
	sgrHeading2  = "1;96"
	sgrHeadingN  = "1;36"
	sgrBlockText = "" // a paragraph's own text: no style
)

// Render renders md as lines of at most width columns, except code
// blocks (never re-wrapped) and tables too wide to be wrapped any
// further. Lines are separated by "\n"; the result has no trailing
// newline and no trailing spaces on any line.
func Render(md string, width int, opts Options) string {
	lines := render(md, width, opts)
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = l.text
	}
	return strings.Join(out, "\n")
}

// line is a rendered line; fixed lines (code, tables) may be wider than
// the width asked for.
type line struct {
	text  string
	fixed bool
}

// gfm parses GitHub-flavoured markdown; built once, when first needed.
var gfm = sync.OnceValue(func() parser.Parser {
	return goldmark.New(goldmark.WithExtensions(extension.GFM)).Parser()
})

func render(md string, width int, opts Options) []line {
	src := []byte(sanitize(md))
	doc := gfm().Parse(text.NewReader(src))
	r := &renderer{src: src, color: opts.Color}
	lines := r.container(doc, max(width, MinWidth), false)
	for i := range lines {
		lines[i].text = trimRight(lines[i].text)
	}
	for len(lines) > 0 && lines[0].text == "" {
		lines = lines[1:]
	}
	for len(lines) > 0 && lines[len(lines)-1].text == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

// sanitize makes md safe to print: valid UTF-8, and no control
// characters but newlines and tabs, so a reply can never move the
// cursor, clear the screen or change colours by itself.
func sanitize(md string) string {
	md = strings.ToValidUTF8(md, "\uFFFD")
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\n' || r == '\t':
			return r
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0):
			return -1
		}
		return r
	}, md)
}

type renderer struct {
	src   []byte
	color bool
	depth int // list nesting, for the bullet's shape
}

// container renders n's block children, separated by a blank line unless
// tight (the items of a tight list).
func (r *renderer) container(n ast.Node, width int, tight bool) []line {
	var out []line
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		b := r.block(c, width)
		if len(b) == 0 {
			continue
		}
		if len(out) > 0 && !tight {
			out = append(out, line{})
		}
		out = append(out, b...)
	}
	return out
}

func (r *renderer) block(n ast.Node, width int) []line {
	switch n := n.(type) {
	case *ast.Paragraph, *ast.TextBlock:
		return r.wrapped(r.inlines(n, sgrBlockText), width)
	case *ast.Heading:
		return r.heading(n, width)
	case *ast.ThematicBreak:
		return []line{{text: r.style(sgrDim, strings.Repeat("─", min(width, 40)))}}
	case *ast.FencedCodeBlock:
		lang := ""
		if info := strings.Fields(string(n.Language(r.src))); len(info) > 0 {
			lang = info[0] // Language stops at a space only, not a tab
		}
		return r.code(n, lang, width)
	case *ast.CodeBlock:
		return r.code(n, "", width)
	case *ast.HTMLBlock:
		raw := r.rawLines(n)
		if n.HasClosure() {
			raw = append(raw, string(n.ClosureLine.Value(r.src)))
		}
		return r.wrapped(strings.Join(raw, "\n"), width)
	case *ast.Blockquote:
		return r.quote(n, width)
	case *ast.List:
		return r.list(n, width)
	case *extast.Table:
		return r.table(n, width)
	default:
		if n.HasChildren() {
			return r.container(n, width, false)
		}
		return r.wrapped(strings.Join(r.rawLines(n), "\n"), width)
	}
}

func (r *renderer) heading(n *ast.Heading, width int) []line {
	if !r.color {
		return r.wrapped(strings.Repeat("#", n.Level)+" "+r.inlines(n, ""), width)
	}
	sgr := sgrHeadingN
	switch n.Level {
	case 1:
		sgr = sgrHeading1
	case 2:
		sgr = sgrHeading2
	}
	return r.wrapped(r.inlines(n, sgr), width)
}

// code renders a code block as written, indented, in the code colour,
// under its language (dim) when it has one and colour is on.
func (r *renderer) code(n ast.Node, lang string, width int) []line {
	const indent = "  "
	var out []line
	if lang != "" && r.color {
		lang = ansi.Truncate(lang, max(width-len(indent), 1), "…")
		out = append(out, line{text: indent + r.style(sgrLanguage, lang)})
	}
	for _, l := range r.rawLines(n) {
		if strings.TrimSpace(l) == "" {
			out = append(out, line{fixed: true})
			continue
		}
		out = append(out, line{text: indent + r.style(sgrCode, l), fixed: true})
	}
	return out
}

func (r *renderer) quote(n *ast.Blockquote, width int) []line {
	inner, nested := width-2, true
	if inner < minInner {
		inner, nested = width, false
	}
	body := r.container(n, inner, false)
	if !nested {
		return body
	}
	bar := r.style(sgrDim, "│")
	for i, l := range body {
		if l.text == "" {
			body[i].text = bar
		} else {
			body[i].text = bar + " " + l.text
		}
	}
	return body
}

func (r *renderer) list(n *ast.List, width int) []line {
	markers := r.markers(n)
	markerWidth := 0
	for _, m := range markers {
		markerWidth = max(markerWidth, ansi.StringWidth(m))
	}
	r.depth++
	defer func() { r.depth-- }()

	var out []line
	i := 0
	for item := n.FirstChild(); item != nil; item = item.NextSibling() {
		marker := markers[i]
		i++
		// Numbers are right-aligned so that the items' text lines up.
		marker = strings.Repeat(" ", markerWidth-ansi.StringWidth(marker)) + marker
		if len(out) > 0 && !n.IsTight {
			out = append(out, line{})
		}
		inner := width - markerWidth
		if inner < minInner {
			// No room to indent: the marker stands on its own line.
			out = append(out, line{text: r.style(sgrDim, strings.TrimSpace(marker))})
			out = append(out, r.container(item, width, n.IsTight)...)
			continue
		}
		body := r.container(item, inner, n.IsTight)
		if len(body) == 0 {
			body = []line{{}}
		}
		hang := strings.Repeat(" ", markerWidth)
		for j, l := range body {
			switch {
			case j == 0:
				l.text = marker + l.text
			case l.text != "":
				l.text = hang + l.text
			}
			out = append(out, l)
		}
	}
	return out
}

// markers are the list's item markers, each followed by a space.
func (r *renderer) markers(n *ast.List) []string {
	var ms []string
	num := n.Start
	for item := n.FirstChild(); item != nil; item = item.NextSibling() {
		if n.IsOrdered() {
			ms = append(ms, strconv.Itoa(num)+string(n.Marker)+" ")
			num++
		} else {
			ms = append(ms, bullet(r.depth)+" ")
		}
	}
	return ms
}

// bullet marks an unordered item at a nesting depth.
func bullet(depth int) string {
	switch depth % 3 {
	case 1:
		return "◦"
	case 2:
		return "▪"
	}
	return "•"
}

// wrapped word-wraps styled text (with "\n" for hard breaks) at width.
// Each line is made to stand alone: it opens the style a wrapped span
// carries over from the line before and closes any style it leaves open,
// so prefixes (list markers, quote bars) never take on a span's style.
func (r *renderer) wrapped(s string, width int) []line {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil
	}
	var out []line
	carry := ""
	// Wrap leaves a word as wide as the width on its line when a hyphen
	// follows it; Hardwrap cuts what is left too wide.
	for l := range strings.SplitSeq(ansi.Hardwrap(ansi.Wrap(s, width, ""), width, true), "\n") {
		open := lastSGR(l, carry)
		l = carry + l
		if open != "" {
			l += reset
		}
		carry = open
		out = append(out, line{text: l})
	}
	return out
}

// rawLines are n's source lines without their line endings, tabs
// expanded.
func (r *renderer) rawLines(n ast.Node) []string {
	var out []string
	segs := n.Lines()
	for i := 0; i < segs.Len(); i++ {
		seg := segs.At(i)
		out = append(out, expandTabs(strings.TrimRight(string(seg.Value(r.src)), "\r\n")))
	}
	return out
}

// inlines renders n's inline children as one string in the style sgr
// (and the styles nested in it); line breaks, soft and hard, are "\n".
func (r *renderer) inlines(n ast.Node, sgr string) string {
	w := &styler{color: r.color}
	if sgr != "" {
		w.push(sgr)
	}
	r.inlineChildren(w, n)
	if sgr != "" {
		w.pop()
	}
	return w.b.String()
}

func (r *renderer) inlineChildren(w *styler, n ast.Node) {
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		r.inline(w, c)
	}
}

func (r *renderer) inline(w *styler, n ast.Node) {
	switch n := n.(type) {
	case *ast.Text:
		v := n.Segment.Value(r.src)
		if !n.IsRaw() {
			v = unescape(v)
		}
		w.text(string(v))
		if n.HardLineBreak() || n.SoftLineBreak() {
			// A line break is kept, as a chat (and baton's web page)
			// shows it: a model's lines, a note's fields or a command's
			// output quoted line by line must not run together.
			w.b.WriteString("\n")
		}
	case *ast.String:
		v := n.Value
		if !n.IsCode() && !n.IsRaw() {
			v = unescape(v)
		}
		w.text(string(v))
	case *ast.CodeSpan:
		var code strings.Builder
		for c := n.FirstChild(); c != nil; c = c.NextSibling() {
			switch t := c.(type) {
			case *ast.Text:
				code.Write(t.Segment.Value(r.src))
			case *ast.String:
				code.Write(t.Value)
			}
		}
		w.styled(sgrCode, "`", func() { w.text(strings.ReplaceAll(code.String(), "\n", " ")) })
	case *ast.Emphasis:
		sgr, marker := sgrItalic, "*"
		if n.Level >= 2 {
			sgr, marker = sgrBold, "**"
		}
		w.styled(sgr, marker, func() { r.inlineChildren(w, n) })
	case *extast.Strikethrough:
		w.styled(sgrStrike, "~~", func() { r.inlineChildren(w, n) })
	case *ast.Link:
		r.link(w, string(n.Destination), n)
	case *ast.Image:
		r.link(w, string(n.Destination), n)
	case *ast.AutoLink:
		w.styled(sgrLink, "", func() { w.text(string(n.Label(r.src))) })
	case *extast.TaskCheckBox:
		if n.IsChecked {
			w.text("[x] ")
		} else {
			w.text("[ ] ")
		}
	case *ast.RawHTML:
		for i := 0; i < n.Segments.Len(); i++ {
			seg := n.Segments.At(i)
			w.text(string(seg.Value(r.src)))
		}
	default:
		r.inlineChildren(w, n)
	}
}

// link writes "label (url)": the label underlined, the address dim; the
// label alone when it is the address.
func (r *renderer) link(w *styler, dest string, label ast.Node) {
	start := w.textLen
	var plain strings.Builder
	outer := w.plain // an image's link around it
	w.plain = &plain
	w.styled(sgrLink, "", func() { r.inlineChildren(w, label) })
	w.plain = outer
	if outer != nil {
		outer.WriteString(plain.String())
	}
	if dest == "" || plain.String() == dest {
		return
	}
	if w.textLen == start {
		w.styled(sgrLink, "", func() { w.text(dest) }) // no label: the address is it
		return
	}
	w.text(" ")
	w.styled(sgrDim, "", func() { w.text("(" + dest + ")") })
}

// styler builds inline text with SGR escapes. Each escape it writes sets
// the whole style in force (starting with 0, a reset), so the style at
// any point of the text is the last escape before it.
type styler struct {
	color   bool
	b       strings.Builder
	stack   []string
	plain   *strings.Builder // when set, also gets the text without escapes
	textLen int              // bytes of text (not escapes) written
}

const reset = "\x1b[m"

func (w *styler) text(s string) {
	s = strings.ReplaceAll(s, "\t", " ")
	w.b.WriteString(s)
	w.textLen += len(s)
	if w.plain != nil {
		w.plain.WriteString(s)
	}
}

// styled writes body in the style sgr; without colour, between marker
// and marker instead.
func (w *styler) styled(sgr, marker string, body func()) {
	if !w.color {
		w.b.WriteString(marker)
		body()
		w.b.WriteString(marker)
		return
	}
	w.push(sgr)
	body()
	w.pop()
}

func (w *styler) push(sgr string) {
	w.stack = append(w.stack, sgr)
	w.set()
}

func (w *styler) pop() {
	w.stack = w.stack[:len(w.stack)-1]
	w.set()
}

func (w *styler) set() {
	if !w.color {
		return
	}
	if len(w.stack) == 0 {
		w.b.WriteString(reset)
		return
	}
	w.b.WriteString("\x1b[0;" + strings.Join(w.stack, ";") + "m")
}

// style wraps s in one SGR when colour is on.
func (r *renderer) style(sgr, s string) string {
	if !r.color || s == "" {
		return s
	}
	return "\x1b[" + sgr + "m" + s + reset
}

// lastSGR is the style in force at the end of l, which began in style
// carry: the last SGR escape in it ("" for a reset).
func lastSGR(l, carry string) string {
	state := carry
	for i := 0; i < len(l); {
		j := strings.Index(l[i:], "\x1b[")
		if j < 0 {
			break
		}
		i += j
		end := i + 2
		for end < len(l) && (l[end] == ';' || (l[end] >= '0' && l[end] <= '9')) {
			end++
		}
		if end < len(l) && l[end] == 'm' {
			seq := l[i : end+1]
			if seq == reset || seq == "\x1b[0m" {
				state = ""
			} else {
				state = seq
			}
		}
		i = end
	}
	return state
}

// trimRight drops trailing spaces, looking through the escapes among
// them; a style they held is closed.
func trimRight(l string) string {
	had := false
	for {
		switch {
		case strings.HasSuffix(l, " "):
			l = strings.TrimRight(l, " ")
		case strings.HasSuffix(l, "m") && strings.LastIndex(l, "\x1b[") >= 0 && isSGR(l[strings.LastIndex(l, "\x1b["):]):
			l = l[:strings.LastIndex(l, "\x1b[")]
			had = true
		default:
			if had && strings.Contains(l, "\x1b[") {
				l += reset
			}
			return l
		}
	}
}

// isSGR reports whether s is exactly one SGR escape.
func isSGR(s string) bool {
	if len(s) < 3 || !strings.HasPrefix(s, "\x1b[") || s[len(s)-1] != 'm' {
		return false
	}
	return strings.Trim(s[2:len(s)-1], "0123456789;") == ""
}

// expandTabs replaces tabs with spaces to the next multiple of 4
// columns, as terminals and editors show code.
func expandTabs(l string) string {
	if !strings.Contains(l, "\t") {
		return l
	}
	var b strings.Builder
	col := 0
	for _, c := range l {
		if c == '\t' {
			n := 4 - col%4
			b.WriteString(strings.Repeat(" ", n))
			col += n
			continue
		}
		b.WriteRune(c)
		col += ansi.StringWidth(string(c))
	}
	return b.String()
}

// unescape resolves backslash escapes and entity references.
func unescape(v []byte) []byte {
	return util.ResolveEntityNames(util.ResolveNumericReferences(util.UnescapePunctuations(v)))
}
