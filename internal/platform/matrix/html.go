package matrix

import (
	"html"
	"strings"

	"github.com/baton-agent/baton/internal/platform/safehtml"
)

// markdown renders replies as org.matrix.custom.html (see safehtml):
// Matrix's formatted bodies allow no task-list checkboxes, no alignment
// attributes on table cells and no link titles, so none is written.
var markdown = safehtml.New(safehtml.Options{})

// renderHTML turns markdown into the formatted body of a message; ok is
// false when the text has no formatting, so the plain body says it all.
func renderHTML(md string) (out string, ok bool) {
	out, err := markdown.Render(md)
	if err != nil {
		return "", false
	}
	out = strings.TrimSpace(out)
	inner, isPara := strings.CutPrefix(out, "<p>")
	if isPara {
		inner, isPara = strings.CutSuffix(inner, "</p>")
	}
	if isPara && !strings.Contains(inner, "<") && html.UnescapeString(inner) == strings.TrimSpace(md) {
		return "", false
	}
	return out, true
}
