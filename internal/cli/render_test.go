package cli

import (
	"regexp"
	"strings"
	"testing"
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

func TestPreviewAndClip(t *testing.T) {
	if got := preview("first line\nsecond li"); got != "second li" {
		t.Errorf("preview = %q", got)
	}
	if got := clipRunes("abcdefghij", 5); got != "…ghij" {
		t.Errorf("clipRunes = %q", got)
	}
}
