// Package safehtml renders markdown into HTML that is safe by
// construction, for the web page and Matrix alike: GitHub-flavoured
// markdown (tables, strikethrough, bare links) with line breaks kept as a
// chat shows them; raw HTML in a reply is shown escaped, as the text it
// is; links keep only absolute http, https and mailto addresses (any
// other keeps its words alone); images become links, so a reply never
// makes its reader load anything. What the two readers accept differs
// (the page takes task-list checkboxes, an align attribute on table cells
// and link titles, and opens links in a new tab; Matrix's formatted
// bodies allow none of these), so those are Options.
package safehtml

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

// Options are what a reader accepts beyond the common HTML.
type Options struct {
	// TaskLists renders "- [x]" items with a disabled checkbox.
	TaskLists bool
	// TableAlign writes a column's alignment as an align attribute;
	// without it, alignment is left out.
	TableAlign bool
	// LinkAttrs are written into every link after its href, such as
	// ` rel="noopener noreferrer" target="_blank"`.
	LinkAttrs string
	// LinkTitles keeps a link's title as its title attribute.
	LinkTitles bool
}

// Renderer renders markdown with one set of Options. Its goldmark setup is
// built on first use (a program that renders nothing never builds it)
// and is safe for concurrent use.
type Renderer struct {
	md func() goldmark.Markdown
}

// New is a Renderer with the options.
func New(o Options) *Renderer {
	return &Renderer{md: sync.OnceValue(func() goldmark.Markdown {
		exts := []goldmark.Extender{extension.Linkify, extension.Strikethrough}
		if o.TaskLists {
			exts = append(exts, extension.TaskList)
		}
		align := extension.TableCellAlignNone
		if o.TableAlign {
			align = extension.TableCellAlignAttribute
		}
		exts = append(exts, extension.NewTable(extension.WithTableCellAlignMethod(align)))
		return goldmark.New(
			goldmark.WithExtensions(exts...),
			goldmark.WithRenderer(renderer.NewRenderer(renderer.WithNodeRenderers(
				util.Prioritized(ghtml.NewRenderer(ghtml.WithHardWraps()), 1000),
				util.Prioritized(safeNodes{o}, 100),
			))),
		)
	})}
}

// Render is md as HTML. It fails only if goldmark does, which rendering
// to memory does not.
func (r *Renderer) Render(md string) (string, error) {
	var b bytes.Buffer
	// goldmark would wrap b in a 4 KiB buffer of its own per reply.
	bw := bufio.NewWriterSize(&b, 512)
	if err := r.md().Convert([]byte(md), bw); err != nil {
		return "", err
	}
	_ = bw.Flush()
	return b.String(), nil
}

// safeLink is dest as an address a reader may follow, or "" when it is
// not an absolute http, https or mailto address.
func safeLink(dest []byte) string {
	if !linkable(strings.TrimSpace(string(dest))) {
		return ""
	}
	// The address as written into the HTML must be one too.
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

// safeNodes overrides the renderers of everything that could bring markup
// or addresses from a reply into the HTML.
type safeNodes struct{ o Options }

func (s safeNodes) RegisterFuncs(reg renderer.NodeRendererFuncRegisterer) {
	reg.Register(ast.KindRawHTML, renderRawHTML)
	reg.Register(ast.KindHTMLBlock, renderHTMLBlock)
	reg.Register(ast.KindLink, func(w util.BufWriter, _ []byte, n ast.Node, entering bool) (ast.WalkStatus, error) {
		link := n.(*ast.Link)
		return s.renderLink(w, safeLink(link.Destination), link.Title, entering), nil
	})
	reg.Register(ast.KindImage, func(w util.BufWriter, _ []byte, n ast.Node, entering bool) (ast.WalkStatus, error) {
		img := n.(*ast.Image)
		return s.renderLink(w, safeLink(img.Destination), img.Title, entering), nil
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
			s.writeOpenLink(w, href, nil)
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
func (s safeNodes) renderLink(w util.BufWriter, href string, title []byte, entering bool) ast.WalkStatus {
	if href == "" {
		return ast.WalkContinue
	}
	if entering {
		s.writeOpenLink(w, href, title)
	} else {
		_, _ = w.WriteString("</a>")
	}
	return ast.WalkContinue
}

func (s safeNodes) writeOpenLink(w util.BufWriter, href string, title []byte) {
	_, _ = w.WriteString(`<a href="`)
	_, _ = w.Write(util.EscapeHTML([]byte(href)))
	_, _ = w.WriteString(`"`)
	_, _ = w.WriteString(s.o.LinkAttrs)
	if s.o.LinkTitles && len(title) > 0 {
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
