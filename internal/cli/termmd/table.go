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
	widths := columnWidths(append([][]string{header}, rows...), width-(cols-1)-2*cols)
	// The header goes in as a row: the table always cuts a header to its
	// column's width, where it wraps rows. The lines drawn between rows
	// are then dropped, but for the one under the header.
	t := table.New().
		Border(lipgloss.NormalBorder()).
		BorderTop(false).BorderBottom(false).BorderLeft(false).BorderRight(false).
		BorderHeader(false).BorderColumn(true).BorderRow(true).
		Rows(append([][]string{header}, rows...)...).
		StyleFunc(func(_, col int) lipgloss.Style {
			s := lipgloss.NewStyle().Padding(0, 1)
			if col >= 0 && col < cols {
				s = s.Align(align[col]).Width(widths[col] + 2)
			}
			return s
		})
	if r.color {
		t = t.BorderStyle(lipgloss.NewStyle().Faint(true))
	}
	out := t.String()
	var lines []line
	rules := 0
	for l := range strings.SplitSeq(out, "\n") {
		// Every cell has a space before it: only a rule starts with one
		// of the border's lines.
		if strings.HasPrefix(ansi.Strip(l), "─") {
			rules++
			if rules > 1 {
				continue
			}
		}
		lines = append(lines, line{text: l, fixed: ansi.StringWidth(l) > width})
	}
	return lines
}

// columnWidths are the widths of the columns' text: the widest cell of
// each when they fit in avail columns. Otherwise the widest columns are
// narrowed first, to no less than their longest word while any other can
// give room, so that cells wrap between words rather than inside them.
func columnWidths(rows [][]string, avail int) []int {
	widths := make([]int, len(rows[0]))
	floors := make([]int, len(rows[0]))
	for _, row := range rows {
		for j, cell := range row {
			widths[j] = max(widths[j], ansi.StringWidth(cell))
			for w := range strings.FieldsSeq(ansi.Strip(cell)) {
				floors[j] = max(floors[j], ansi.StringWidth(w))
			}
		}
	}
	total := 0
	for j := range widths {
		widths[j] = max(widths[j], 1)
		floors[j] = max(min(floors[j], widths[j]), 1)
		total += widths[j]
	}
	for _, floor := range [][]int{floors, nil} {
		for total > avail {
			widest := -1
			for j, w := range widths {
				least := 1
				if floor != nil {
					least = floor[j]
				}
				if w > least && (widest < 0 || w > widths[widest]) {
					widest = j
				}
			}
			if widest < 0 {
				break
			}
			widths[widest]--
			total--
		}
	}
	return widths
}

// fill makes cells exactly n long.
func fill(cells []string, n int) []string {
	for len(cells) < n {
		cells = append(cells, "")
	}
	return cells[:n]
}
