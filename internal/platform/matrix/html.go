package matrix

import (
	"bufio"
	"bytes"
	"html"
	"strings"
	"sync"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/renderer"
	ghtml "github.com/yuin/goldmark/renderer/html"
	"github.com/yuin/goldmark/util"
)

// markdown renders replies as org.matrix.custom.html: GitHub-flavoured
// markdown (strikethrough, tables, bare links) with line breaks kept as a
// chat shows them. Raw HTML in a reply is shown escaped, as the text it
// is, never passed on as markup.
var markdown = sync.OnceValue(func() goldmark.Markdown {
	return goldmark.New(
		goldmark.WithExtensions(extension.Strikethrough, extension.Table, extension.Linkify),
		goldmark.WithRenderer(renderer.NewRenderer(renderer.WithNodeRenderers(
			util.Prioritized(ghtml.NewRenderer(ghtml.WithHardWraps()), 1000),
			util.Prioritized(escapedHTML{}, 100),
		))),
	)
})

// renderHTML turns markdown into the formatted body of a message; ok is
// false when the text has no formatting, so the plain body says it all.
func renderHTML(md string) (out string, ok bool) {
	var b bytes.Buffer
	// goldmark would wrap b in a 4 KiB buffer of its own per reply.
	bw := bufio.NewWriterSize(&b, 512)
	if err := markdown().Convert([]byte(md), bw); err != nil {
		return "", false
	}
	_ = bw.Flush()
	out = strings.TrimSpace(b.String())
	inner, isPara := strings.CutPrefix(out, "<p>")
	if isPara {
		inner, isPara = strings.CutSuffix(inner, "</p>")
	}
	if isPara && !strings.Contains(inner, "<") && html.UnescapeString(inner) == strings.TrimSpace(md) {
		return "", false
	}
	return out, true
}

// escapedHTML renders raw HTML nodes as escaped text.
type escapedHTML struct{}

func (escapedHTML) RegisterFuncs(reg renderer.NodeRendererFuncRegisterer) {
	reg.Register(ast.KindRawHTML, func(w util.BufWriter, src []byte, n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkSkipChildren, nil
		}
		segs := n.(*ast.RawHTML).Segments
		for i := 0; i < segs.Len(); i++ {
			seg := segs.At(i)
			_, _ = w.WriteString(html.EscapeString(string(seg.Value(src))))
		}
		return ast.WalkSkipChildren, nil
	})
	reg.Register(ast.KindHTMLBlock, func(w util.BufWriter, src []byte, n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		b := n.(*ast.HTMLBlock)
		_, _ = w.WriteString("<p>")
		lines := b.Lines()
		for i := 0; i < lines.Len(); i++ {
			seg := lines.At(i)
			line := strings.TrimRight(string(seg.Value(src)), "\n")
			if i > 0 {
				_, _ = w.WriteString("<br>\n")
			}
			_, _ = w.WriteString(html.EscapeString(line))
		}
		if b.HasClosure() {
			if lines.Len() > 0 {
				_, _ = w.WriteString("<br>\n")
			}
			_, _ = w.WriteString(html.EscapeString(strings.TrimRight(string(b.ClosureLine.Value(src)), "\n")))
		}
		_, _ = w.WriteString("</p>\n")
		return ast.WalkContinue, nil
	})
}
