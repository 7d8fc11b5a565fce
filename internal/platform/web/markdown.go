package web

import (
	"bufio"
	"bytes"
	"html"
	"net/url"
	"strings"
	"sync"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/renderer"
	ghtml "github.com/yuin/goldmark/renderer/html"
	"github.com/yuin/goldmark/util"
)

// markdown renders what the agent writes into the HTML the page shows:
// GitHub-flavoured markdown (tables, strikethrough, task lists, bare
// links) with line breaks kept as a chat shows them. The output is safe
// by construction, so the page may set it as HTML: raw HTML in a reply is
// shown escaped, as the text it is; links keep only http, https and
// mailto addresses and open in a new tab without an opener or referrer;
// images become links, so a reply never makes the page load anything.
var markdown = sync.OnceValue(func() goldmark.Markdown {
	return goldmark.New(
		goldmark.WithExtensions(extension.Linkify, extension.Strikethrough, extension.TaskList, extension.NewTable(extension.WithTableCellAlignMethod(extension.TableCellAlignAttribute))),
		goldmark.WithRenderer(renderer.NewRenderer(renderer.WithNodeRenderers(
			util.Prioritized(ghtml.NewRenderer(ghtml.WithHardWraps()), 1000),
			util.Prioritized(safeHTML{}, 100),
		))),
	)
})

// renderMarkdown is md as HTML for the page.
func renderMarkdown(md string) string {
	var b bytes.Buffer
	// goldmark would wrap b in a 4 KiB buffer of its own per reply.
	bw := bufio.NewWriterSize(&b, 512)
	if err := markdown().Convert([]byte(columns(md)), bw); err != nil {
		// Rendering to memory does not fail; if it ever did, the text
		// is still shown, as text.
		return "<p>" + html.EscapeString(md) + "</p>"
	}
	_ = bw.Flush()
	return b.String()
}

// ColumnsLang marks a block of aligned columns (as /help writes them):
// markdown would join its lines and collapse the spaces that align them,
// so it is shown preformatted instead.
const ColumnsLang = "columns"

// columns fences the lines that are indented by two or three spaces and
// have a gap of two or more spaces inside, outside code blocks, each run
// of them as one block — when a message has at least two such lines (one
// alone is no table).
func columns(md string) string {
	if !strings.Contains(md, "  ") {
		return md
	}
	lines := strings.Split(md, "\n")
	column := make([]bool, len(lines))
	n := 0
	inFence := ""
	for i, l := range lines {
		if fence := fenceOf(l); fence != "" {
			switch {
			case inFence == "":
				inFence = fence
			case strings.HasPrefix(fence, inFence) && strings.TrimSpace(l) == fence:
				inFence = ""
				continue
			}
		}
		if inFence == "" && isColumnLine(l) {
			column[i] = true
			n++
		}
	}
	if n < 2 {
		return md
	}
	var out []string
	for i := 0; i < len(lines); {
		if !column[i] {
			out = append(out, lines[i])
			i++
			continue
		}
		j := i
		for j < len(lines) && column[j] {
			j++
		}
		fence := strings.Repeat("`", max(3, longestRun(lines[i:j], '`')+1))
		out = append(out, fence+ColumnsLang)
		for _, c := range lines[i:j] {
			out = append(out, strings.TrimPrefix(strings.TrimPrefix(c, "  "), " "))
		}
		out = append(out, fence)
		i = j
	}
	return strings.Join(out, "\n")
}

// fenceOf is the fence a line opens or closes (``` or ~~~, as long as
// written), or "".
func fenceOf(l string) string {
	t := strings.TrimLeft(l, " ")
	if len(l)-len(t) > 3 {
		return ""
	}
	for _, c := range []byte{'`', '~'} {
		n := 0
		for n < len(t) && t[n] == c {
			n++
		}
		if n >= 3 {
			return t[:n]
		}
	}
	return ""
}

func isColumnLine(l string) bool {
	body := strings.TrimLeft(l, " ")
	indent := len(l) - len(body)
	if indent < 2 || indent > 3 || body == "" {
		return false
	}
	switch {
	case strings.HasPrefix(body, "- "), strings.HasPrefix(body, "* "), strings.HasPrefix(body, "+ "), strings.HasPrefix(body, ">"):
		return false // a list item or a quote, not a column
	}
	return strings.Contains(strings.TrimRight(body, " "), "  ")
}

func longestRun(lines []string, c byte) int {
	best := 0
	for _, l := range lines {
		n := 0
		for i := 0; i < len(l); i++ {
			if l[i] == c {
				n++
				best = max(best, n)
			} else {
				n = 0
			}
		}
	}
	return best
}

// safeLink is dest as an address the page may link to, or "" when it is
// not an absolute http, https or mailto address.
func safeLink(dest []byte) string {
	if !linkable(strings.TrimSpace(string(dest))) {
		return ""
	}
	// The address as written into the page must be one too.
	href := string(util.URLEscape(dest, true))
	if !linkable(href) {
		return ""
	}
	return href
}

// linkable reports whether s is an absolute http or https address with a
// host, or a mailto address.
func linkable(s string) bool {
	u, err := url.Parse(s)
	if err != nil {
		return false
	}
	switch strings.ToLower(u.Scheme) {
	case "http", "https":
		return u.Host != ""
	case "mailto":
		return u.Opaque != ""
	}
	return false
}

// safeHTML overrides the renderers of everything that could bring markup
// or addresses from a reply into the page.
type safeHTML struct{}

func (safeHTML) RegisterFuncs(reg renderer.NodeRendererFuncRegisterer) {
	reg.Register(ast.KindRawHTML, renderRawHTML)
	reg.Register(ast.KindHTMLBlock, renderHTMLBlock)
	reg.Register(ast.KindLink, func(w util.BufWriter, _ []byte, n ast.Node, entering bool) (ast.WalkStatus, error) {
		link := n.(*ast.Link)
		return renderLink(w, safeLink(link.Destination), link.Title, entering), nil
	})
	reg.Register(ast.KindImage, func(w util.BufWriter, _ []byte, n ast.Node, entering bool) (ast.WalkStatus, error) {
		img := n.(*ast.Image)
		return renderLink(w, safeLink(img.Destination), img.Title, entering), nil
	})
	reg.Register(ast.KindAutoLink, func(w util.BufWriter, src []byte, n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		al := n.(*ast.AutoLink)
		dest := al.URL(src)
		if al.AutoLinkType == ast.AutoLinkEmail && !bytes.HasPrefix(bytes.ToLower(dest), []byte("mailto:")) {
			dest = append([]byte("mailto:"), dest...)
		}
		label := util.EscapeHTML(al.Label(src))
		if href := safeLink(dest); href != "" {
			writeOpenLink(w, href, nil)
			_, _ = w.Write(label)
			_, _ = w.WriteString("</a>")
		} else {
			_, _ = w.Write(label)
		}
		return ast.WalkContinue, nil
	})
}

// renderLink opens and closes a link to href around what the node holds;
// without an href the words are shown alone.
func renderLink(w util.BufWriter, href string, title []byte, entering bool) ast.WalkStatus {
	if href == "" {
		return ast.WalkContinue
	}
	if entering {
		writeOpenLink(w, href, title)
	} else {
		_, _ = w.WriteString("</a>")
	}
	return ast.WalkContinue
}

func writeOpenLink(w util.BufWriter, href string, title []byte) {
	_, _ = w.WriteString(`<a href="`)
	_, _ = w.Write(util.EscapeHTML([]byte(href)))
	_, _ = w.WriteString(`" rel="noopener noreferrer" target="_blank"`)
	if len(title) > 0 {
		_, _ = w.WriteString(` title="`)
		_, _ = w.Write(util.EscapeHTML(title))
		_, _ = w.WriteString(`"`)
	}
	_, _ = w.WriteString(">")
}

func renderRawHTML(w util.BufWriter, src []byte, n ast.Node, entering bool) (ast.WalkStatus, error) {
	if !entering {
		return ast.WalkSkipChildren, nil
	}
	segs := n.(*ast.RawHTML).Segments
	for i := 0; i < segs.Len(); i++ {
		seg := segs.At(i)
		_, _ = w.WriteString(html.EscapeString(string(seg.Value(src))))
	}
	return ast.WalkSkipChildren, nil
}

func renderHTMLBlock(w util.BufWriter, src []byte, n ast.Node, entering bool) (ast.WalkStatus, error) {
	if !entering {
		return ast.WalkContinue, nil
	}
	b := n.(*ast.HTMLBlock)
	_, _ = w.WriteString("<p>")
	lines := b.Lines()
	for i := 0; i < lines.Len(); i++ {
		seg := lines.At(i)
		if i > 0 {
			_, _ = w.WriteString("<br>\n")
		}
		_, _ = w.WriteString(html.EscapeString(strings.TrimRight(string(seg.Value(src)), "\n")))
	}
	if b.HasClosure() {
		if lines.Len() > 0 {
			_, _ = w.WriteString("<br>\n")
		}
		_, _ = w.WriteString(html.EscapeString(strings.TrimRight(string(b.ClosureLine.Value(src)), "\n")))
	}
	_, _ = w.WriteString("</p>\n")
	return ast.WalkContinue, nil
}
