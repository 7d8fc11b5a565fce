package web

import (
	"html"
	"strings"

	"github.com/baton-agent/baton/internal/platform/safehtml"
)

// markdown renders what the agent writes into the HTML the page shows
// (see safehtml): safe by construction, so the page may set it as HTML.
// The page also takes task lists, aligned table cells and link titles,
// and links open in a new tab without an opener or referrer.
var markdown = safehtml.New(safehtml.Options{
	TaskLists:  true,
	TableAlign: true,
	LinkAttrs:  ` rel="noopener noreferrer" target="_blank"`,
	LinkTitles: true,
})

// renderMarkdown is md as HTML for the page.
func renderMarkdown(md string) string {
	out, err := markdown.Render(columns(md))
	if err != nil {
		// Rendering to memory does not fail; if it ever did, the text
		// is still shown, as text.
		return "<p>" + html.EscapeString(md) + "</p>"
	}
	return out
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
