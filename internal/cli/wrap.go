package cli

import (
	"strings"

	"github.com/charmbracelet/x/ansi"
)

// wrapColumns fits plain text to width columns for the terminal. A line
// that is too long is broken between words; its continuation lines are
// indented to where its second column starts (the text after the first
// gap of two or more spaces, as in "/handoff <platform>  Move the
// session…"), or to its own indent when it has no second column, so a
// wrapped description stays under its column instead of the terminal
// breaking words mid-way at its edge. When that column starts past half
// the width, the first column goes on a line of its own and the rest
// follows under it.
func wrapColumns(text string, width int) string {
	var b strings.Builder
	for line := range strings.SplitAfterSeq(text, "\n") {
		body, nl := strings.CutSuffix(line, "\n")
		if ansi.StringWidth(body) <= width {
			b.WriteString(line)
			continue
		}
		indent := hangingIndent(body)
		head, rest := body[:indent], body[indent:]
		if indent > width/2 {
			// The column leaves too little room: the first column on a
			// line of its own, the rest under it, indented a little.
			lead := len(body) - len(strings.TrimLeft(body, " "))
			b.WriteString(strings.TrimRight(head, " ") + "\n")
			indent = lead + 4
			head = strings.Repeat(" ", indent)
		}
		for i, l := range strings.Split(ansi.Wordwrap(rest, max(width-indent, 10), ""), "\n") {
			if i == 0 {
				b.WriteString(head)
			} else {
				b.WriteString("\n" + strings.Repeat(" ", indent))
			}
			b.WriteString(strings.TrimRight(l, " "))
		}
		if nl {
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// hangingIndent is the byte offset where line's second column starts:
// past its leading spaces, the first text, and the first run of two or
// more spaces after it; its leading spaces when there is no such gap.
func hangingIndent(line string) int {
	lead := len(line) - len(strings.TrimLeft(line, " "))
	gap := strings.Index(line[lead:], "  ")
	if gap < 0 {
		return lead
	}
	i := lead + gap
	for i < len(line) && line[i] == ' ' {
		i++
	}
	if i == len(line) {
		return lead
	}
	return i
}
