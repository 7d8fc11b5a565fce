package termmd

import (
	"strings"

	"charm.land/lipgloss/v2"
	"charm.land/lipgloss/v2/table"
	"github.com/charmbracelet/x/ansi"
	extast "github.com/yuin/goldmark/extension/ast"
)

// table draws a GFM table with lines between columns and under the
// header, and none around it: at its natural width when that fits, else
// with its columns narrowed and their cells wrapped to fit width.
func (r *renderer) table(n *extast.Table, width int) []line {
	var header []string
	var rows [][]string
	for row := n.FirstChild(); row != nil; row = row.NextSibling() {
		_, isHeader := row.(*extast.TableHeader)
		sgr := ""
		if isHeader {
			sgr = sgrBold
		}
		var cells []string
		for c := row.FirstChild(); c != nil; c = c.NextSibling() {
			cells = append(cells, strings.TrimSpace(r.inlines(c, sgr)))
		}
		if isHeader {
			header = cells
		} else {
			rows = append(rows, cells)
		}
	}
	cols := len(header)
	for _, row := range rows {
		cols = max(cols, len(row))
	}
	if cols == 0 {
		return nil
	}
	// Every row gets every column: the table draws ragged rows unevenly.
	header = fill(header, cols)
	for i := range rows {
		rows[i] = fill(rows[i], cols)
	}
	align := make([]lipgloss.Position, cols)
	for i := range align {
		align[i] = lipgloss.Left
		if i < len(n.Alignments) {
			switch n.Alignments[i] {
			case extast.AlignRight:
				align[i] = lipgloss.Right
			case extast.AlignCenter:
				align[i] = lipgloss.Center
			}
		}
	}
	t := table.New().
		Border(lipgloss.NormalBorder()).
		BorderTop(false).BorderBottom(false).BorderLeft(false).BorderRight(false).
		BorderHeader(true).BorderColumn(true).BorderRow(false).
		Headers(header...).Rows(rows...).
		StyleFunc(func(_, col int) lipgloss.Style {
			s := lipgloss.NewStyle().Padding(0, 1)
			if col >= 0 && col < len(align) {
				s = s.Align(align[col])
			}
			return s
		})
	if r.color {
		t = t.BorderStyle(lipgloss.NewStyle().Faint(true))
	}
	out := t.String()
	if lipgloss.Width(out) > width {
		out = t.Width(width).String()
	}
	var lines []line
	for l := range strings.SplitSeq(out, "\n") {
		lines = append(lines, line{text: l, fixed: ansi.StringWidth(l) > width})
	}
	return lines
}

// fill makes cells exactly n long.
func fill(cells []string, n int) []string {
	for len(cells) < n {
		cells = append(cells, "")
	}
	return cells[:n]
}
