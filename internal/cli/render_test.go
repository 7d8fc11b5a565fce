package cli

import (
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"
)

var escapes = regexp.MustCompile(`\x1b\[[0-9;?]*[ -/]*[@-~]`)

// plain is what stays on screen: the status line, which is erased with
// "\r\e[K", is dropped, as are colours.
func plain(s string) string {
	var out strings.Builder
	for i, seg := range strings.Split(s, "\r\x1b[K") {
		if i > 0 {
			// Erase back to the start of the current line.
			cur := out.String()
			out.Reset()
			out.WriteString(cur[:strings.LastIndex(cur, "\n")+1])
		}
		out.WriteString(seg)
	}
	return strings.ReplaceAll(escapes.ReplaceAllString(out.String(), ""), "\r", "")
}

func TestRendererPlainPassesDeltasThrough(t *testing.T) {
	var b syncBuffer
	r := newRenderer(&b, false, nil)
	r.Status("thinking…") // no status line off a terminal
	for _, d := range []string{"Hello **wor", "ld**\n\n```", "go\nx := 1\n```"} {
		r.Delta(d)
	}
	r.EndAnswer()
	r.Printf("done\n")
	r.Close()
	if got, want := b.String(), "Hello **world**\n\n```go\nx := 1\n```\ndone\n"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}

func TestRendererPrintsCompleteBlocksOnly(t *testing.T) {
	var b syncBuffer
	r := newRenderer(&b, true, func() int { return 60 })
	defer r.Close()

	r.Delta("Hello **wor")
	if strings.Contains(plain(b.String()), "Hello world") {
		t.Fatal("an unfinished paragraph was printed as a block")
	}
	r.Delta("ld** and more\n\nSecond para")
	got := plain(b.String())
	if !strings.Contains(got, "Hello world and more") || strings.Contains(got, "**") {
		t.Fatalf("first block not rendered as markdown: %q", got)
	}
	before := len(b.String())

	// A blank line inside a code fence does not end the block.
	r.Delta("graph\n\n```go\nx := 1\n\ny := 2\n")
	if strings.Contains(plain(b.String()[before:]), "x := 1") { // "y := 2" is in the status line
		t.Fatal("an open code fence was printed")
	}
	if !strings.Contains(plain(b.String()[before:]), "Second paragraph") {
		t.Fatalf("second paragraph missing: %q", plain(b.String()[before:]))
	}
	r.Delta("```\nTail without newline")
	if !strings.Contains(plain(b.String()), "y := 2") {
		t.Fatal("closed code block not printed")
	}
	r.EndAnswer()
	out := plain(b.String())
	if !strings.Contains(out, "Tail without newline") || !strings.HasSuffix(out, "\n") {
		t.Fatalf("tail: %q", out)
	}
	// Printed text is never rewritten: the only cursor movement used is
	// "\r" with erase-line for the status line.
	if m := regexp.MustCompile(`\x1b\[[0-9]*[ABFJ]`).FindString(b.String()); m != "" {
		t.Fatalf("renderer moved the cursor across lines: %q", m)
	}
}

func TestRendererStatusLine(t *testing.T) {
	var b syncBuffer
	r := newRenderer(&b, true, func() int { return 40 })
	r.Status("running shell: sleep 1")
	r.Printf("  ✓ shell: sleep 1\n")
	r.Close()
	got := b.String()
	status := strings.Index(got, "running shell: sleep 1")
	erase := strings.LastIndex(got, "\r\x1b[K")
	line := strings.Index(got, "✓ shell")
	if status < 0 || erase < status || line < erase {
		t.Fatalf("status line not drawn, erased, then replaced: %q", got)
	}
}

func TestRendererStatusLineDropsControlCharacters(t *testing.T) {
	var b syncBuffer
	r := newRenderer(&b, true, func() int { return 80 })
	r.Delta("clear \x1b[2J\x07the\tscreen")
	r.Close()
	if got := b.String(); strings.Contains(got, "\x1b[2J") || strings.Contains(got, "\x07") || !strings.Contains(got, "clear [2Jthe screen") {
		t.Fatalf("status line: %q", got)
	}
}

func TestPreviewAndClip(t *testing.T) {
	if got := preview("first line\nsecond li"); got != "second li" {
		t.Errorf("preview = %q", got)
	}
	if got := clipRunes("abcdefghij", 5); got != "…ghij" {
		t.Errorf("clipRunes = %q", got)
	}
}

// screenLines is what a rendered answer leaves on screen, line by line,
// without trailing spaces.
func screenLines(s string) []string {
	lines := strings.Split(plain(s), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " \u00a0")
	}
	return lines
}

// streamed feeds text to a terminal renderer one character at a time, as
// a model streams it, and returns what was written.
func streamed(t *testing.T, width int, text string) string {
	t.Helper()
	var b syncBuffer
	r := newRenderer(&b, true, func() int { return width })
	for _, c := range text {
		r.Delta(string(c))
	}
	r.EndAnswer()
	r.Close()
	return b.String()
}

func TestRendererTableKeepsItsNaturalWidth(t *testing.T) {
	out := streamed(t, 120, "Sizes:\n\n| name | size |\n|---|---|\n| alpha | 1 |\n| beta | 22 |\n\nDone.\n")
	var rows []string
	for _, l := range screenLines(out) {
		if strings.Contains(l, "│") || strings.Contains(l, "┼") {
			rows = append(rows, l)
		}
	}
	if len(rows) != 4 {
		t.Fatalf("want 4 table lines (header, rule, 2 rows), got %q", rows)
	}
	for _, l := range rows {
		// The widest row is " alpha │ size" with margins: far below 120.
		if w := utf8.RuneCountInString(l); w > 24 {
			t.Errorf("table line is %d columns wide in a 120-column terminal: %q", w, l)
		}
	}
	if !strings.Contains(rows[2], "alpha") || !strings.Contains(rows[2], "1") {
		t.Errorf("a table row lost its cells: %q", rows[2])
	}
}

func TestRendererNarrowTerminalWrapsTable(t *testing.T) {
	out := streamed(t, 30, "| column one | column two |\n|---|---|\n| a rather long cell text | another long cell |\n")
	for _, l := range screenLines(out) {
		if w := utf8.RuneCountInString(l); w > 30 {
			t.Errorf("line wider than the 30-column terminal: %q", l)
		}
	}
}

func TestRendererOneBlankLineAroundCodeBlocks(t *testing.T) {
	out := streamed(t, 80, "Before:\n\n```go\nx := 1\n\n\ny := 2\n```\n\nAfter.\n")
	got := strings.Join(screenLines(out), "\n")
	// The code's language heads it (dim); the code's own blank lines stay.
	want := "  Before:\n\n    go\n    x := 1\n\n\n    y := 2\n\n  After.\n"
	if got != want {
		t.Fatalf("code block spacing:\n got %q\nwant %q", got, want)
	}
}

func TestRendererInlineCodeUnpadded(t *testing.T) {
	out := streamed(t, 80, "Run `go test` now.\n")
	if got := strings.TrimSpace(plain(out)); got != "Run go test now." {
		t.Fatalf("inline code: %q", got)
	}
}

func TestRendererNoColor(t *testing.T) {
	t.Setenv("NO_COLOR", "1")
	out := streamed(t, 80, "# Head\n\nSome **bold** and `code`.\n\n```sh\nls\n```\n")
	if sgr := regexp.MustCompile(`\x1b\[[0-9;]*m`).FindString(out); sgr != "" {
		t.Fatalf("a colour escape %q with NO_COLOR: %q", sgr, out)
	}
	answer := plain(out) // the status line erased: what stays on screen
	for _, want := range []string{"  # Head\n", "  Some **bold** and `code`.\n", "    ls\n"} {
		if !strings.Contains(answer, want) {
			t.Errorf("missing %q in %q", want, answer)
		}
	}
}
