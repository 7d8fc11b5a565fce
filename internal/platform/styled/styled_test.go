package styled

import (
	"reflect"
	"testing"
)

func TestRenderSpans(t *testing.T) {
	got := Render("# Plan\n\nBook **the 9:40** train, *not* the ~~10:10~~ one: `ticket.pdf`.\n\n- one\n- two\n\n```go\nfmt.Println(1)\n```", nil)
	want := "Plan\n\nBook the 9:40 train, not the 10:10 one: ticket.pdf.\n\n• one\n• two\n\nfmt.Println(1)"
	if got.Plain != want {
		t.Fatalf("plain %q, want %q", got.Plain, want)
	}
	var styles []string
	for _, s := range got.Spans {
		styles = append(styles, string(s.Style)+":"+got.Plain[s.Start:s.End])
	}
	wantStyles := []string{"BOLD:Plan", "BOLD:the 9:40", "ITALIC:not", "STRIKETHROUGH:10:10", "MONOSPACE:ticket.pdf", "BLOCK:fmt.Println(1)"}
	if !reflect.DeepEqual(styles, wantStyles) {
		t.Errorf("spans %q, want %q", styles, wantStyles)
	}
}

func TestRenderMarks(t *testing.T) {
	marks := Marks{Bold: {"*", "*"}, Italic: {"_", "_"}, Block: {"```\n", "\n```"}}
	got := Render("**bold** and _it_ and [docs](https://example.com)\n\n```\ncode\n```", marks).Plain
	want := "*bold* and _it_ and docs (https://example.com)\n\n```\ncode\n```"
	if got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if got := Render("a \\*literal\\* &amp; <b>raw</b>", nil).Plain; got != "a *literal* & <b>raw</b>" {
		t.Errorf("escapes: %q", got)
	}
}

func TestUTF16(t *testing.T) {
	s := "😀a"
	if n := UTF16(s, len(s)); n != 3 {
		t.Errorf("UTF16 = %d, want 3", n)
	}
}
