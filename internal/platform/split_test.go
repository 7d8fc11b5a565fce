package platform

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// rejoin undoes Split's only additions — the fence lines around a cut made
// inside a code block — and checks that the parts are exactly those
// bodies with those additions.
func rejoin(t testing.TB, text string, max int, measure func(string) int) []part {
	t.Helper()
	parts := splitParts(text, max, measure)
	flat := Split(text, max, measure)
	if len(flat) != len(parts) {
		t.Fatalf("Split gave %d parts, splitParts %d", len(flat), len(parts))
	}
	var b strings.Builder
	for i, p := range parts {
		if flat[i] != p.prefix+p.body+p.suffix {
			t.Fatalf("part %d = %q, want %q", i, flat[i], p.prefix+p.body+p.suffix)
		}
		if i > 0 && (p.prefix != "") != (parts[i-1].suffix != "") {
			t.Fatalf("part %d: reopened %q after closing %q", i, p.prefix, parts[i-1].suffix)
		}
		if p.body == "" {
			t.Fatalf("part %d is empty", i)
		}
		b.WriteString(p.body)
	}
	if b.String() != text {
		t.Fatalf("bodies rejoin to %q, want %q", b.String(), text)
	}
	return parts
}

func TestSplitShortTextIsOnePart(t *testing.T) {
	if got := Split("hello", 10, nil); len(got) != 1 || got[0] != "hello" {
		t.Fatalf("Split = %q", got)
	}
	if got := Split("", 10, nil); len(got) != 0 {
		t.Fatalf("Split of empty = %q, want no parts", got)
	}
	// Exactly at the limit is still one part.
	if got := Split("abcde", 5, nil); len(got) != 1 {
		t.Fatalf("Split at limit = %q", got)
	}
}

func TestSplitPrefersParagraphThenLineThenWord(t *testing.T) {
	para := "first paragraph line one\nline two\n\nsecond paragraph here"
	got := Split(para, 40, nil)
	want := []string{"first paragraph line one\nline two\n\n", "second paragraph here"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("paragraph split = %q, want %q", got, want)
	}

	lines := "alpha beta gamma\ndelta epsilon zeta\neta theta"
	got = Split(lines, 30, nil)
	want = []string{"alpha beta gamma\n", "delta epsilon zeta\neta theta"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("line split = %q, want %q", got, want)
	}

	words := "one two three four five six seven"
	got = Split(words, 15, nil)
	for _, p := range got {
		if utf8.RuneCountInString(p) > 15 {
			t.Errorf("part %q over the limit", p)
		}
		if strings.HasPrefix(p, " ") || strings.Contains(strings.TrimSpace(p), "  ") {
			t.Errorf("part %q cut badly", p)
		}
	}
	if strings.Join(got, "") != words {
		t.Errorf("word parts %q do not rejoin", got)
	}
	for i, p := range got[:len(got)-1] {
		if !strings.HasSuffix(p, " ") {
			t.Errorf("part %d %q does not end at a word boundary", i, p)
		}
	}
}

func TestSplitDoesNotPreferATinyFirstPart(t *testing.T) {
	// A paragraph break very early must not win over a line break near
	// the limit: parts stay as full as they can.
	text := "hi\n\n" + strings.Repeat("word ", 10) + "\n" + strings.Repeat("more ", 10)
	got := Split(text, 60, nil)
	if len(got[0]) < 30 {
		t.Errorf("first part %q is needlessly short", got[0])
	}
}

func TestSplitLongWordCutAnywhere(t *testing.T) {
	text := strings.Repeat("x", 25)
	got := Split(text, 10, nil)
	if len(got) != 3 || got[0] != strings.Repeat("x", 10) || got[2] != "xxxxx" {
		t.Errorf("Split = %q", got)
	}
}

func TestSplitNeverBreaksASurrogatePair(t *testing.T) {
	// Each emoji is two UTF-16 units; an odd limit would land mid-pair.
	text := strings.Repeat("😀", 20)
	got := Split(text, 7, UTF16Len)
	if strings.Join(got, "") != text {
		t.Fatalf("parts do not rejoin")
	}
	for _, p := range got {
		if !utf8.ValidString(p) {
			t.Errorf("part %q is not valid UTF-8", p)
		}
		if n := UTF16Len(p); n > 7 || n%2 != 0 {
			t.Errorf("part %q is %d UTF-16 units", p, n)
		}
	}
}

func TestUTF16Len(t *testing.T) {
	cases := map[string]int{"": 0, "abc": 3, "é": 1, "😀": 2, "a😀b": 4, "\xff": 1, "日本": 2}
	for s, want := range cases {
		if got := UTF16Len(s); got != want {
			t.Errorf("UTF16Len(%q) = %d, want %d", s, got, want)
		}
	}
}

func TestSplitKeepsCodeBlockWholeWhenItFits(t *testing.T) {
	code := "```go\nfunc main() {\n\tfmt.Println(\"hi\")\n}\n```\n"
	text := strings.Repeat("intro words ", 5) + "\n" + code + "after"
	got := Split(text, len(code)+10, nil)
	found := false
	for _, p := range got {
		if strings.Contains(p, code) {
			found = true
		}
		if strings.Count(p, "```")%2 != 0 {
			t.Errorf("part %q has an unbalanced fence", p)
		}
	}
	if !found {
		t.Errorf("code block was cut: %q", got)
	}
	if strings.Join(got, "") != text {
		t.Errorf("parts do not rejoin")
	}
}

func TestSplitLongCodeBlockReopensWithLanguage(t *testing.T) {
	var code strings.Builder
	code.WriteString("```python\n")
	for i := range 40 {
		code.WriteString("print('line ")
		code.WriteString(strings.Repeat("x", i%7))
		code.WriteString("')\n")
	}
	code.WriteString("```\n")
	text := "Here is the script:\n\n" + code.String() + "\nThat is all."
	const max = 200
	parts := rejoin(t, text, max, nil)
	if len(parts) < 3 {
		t.Fatalf("want several parts, got %d", len(parts))
	}
	reopened := 0
	for i, p := range parts {
		s := p.prefix + p.body + p.suffix
		if n := utf8.RuneCountInString(s); n > max {
			t.Errorf("part %d is %d runes", i, n)
		}
		if strings.Count(s, "```")%2 != 0 {
			t.Errorf("part %d has an unbalanced fence: %q", i, s)
		}
		if p.prefix != "" {
			reopened++
			if p.prefix != "```python\n" {
				t.Errorf("part %d reopens with %q", i, p.prefix)
			}
			// Cuts inside code fall at line breaks.
			if !strings.HasSuffix(parts[i-1].body, "\n") {
				t.Errorf("part %d cut mid-line: %q", i-1, parts[i-1].body)
			}
		}
	}
	if reopened == 0 {
		t.Errorf("no part reopened the block")
	}
	// The first part ends before the block rather than inside it.
	if parts[0].body != "Here is the script:\n\n" && parts[0].suffix == "" {
		t.Errorf("first part = %q", parts[0].body)
	}
}

func TestSplitCodeBlockWithOneHugeLine(t *testing.T) {
	text := "```\n" + strings.Repeat("a", 100) + "\n```"
	parts := rejoin(t, text, 30, nil)
	for i, p := range parts {
		s := p.prefix + p.body + p.suffix
		if utf8.RuneCountInString(s) > 30 {
			t.Errorf("part %d too long: %q", i, s)
		}
		if !strings.HasPrefix(s, "```") || strings.Count(s, "```")%2 != 0 {
			t.Errorf("part %d not a whole block: %q", i, s)
		}
	}
}

func TestSplitUnclosedFence(t *testing.T) {
	text := "```sh\n" + strings.Repeat("echo hi\n", 30)
	parts := rejoin(t, text, 60, nil)
	last := parts[len(parts)-1]
	if last.suffix != "" {
		t.Errorf("last part of an unclosed block got a closer %q", last.suffix)
	}
	for _, p := range parts[1:] {
		if p.prefix != "```sh\n" {
			t.Errorf("part reopened with %q", p.prefix)
		}
	}
}

func TestSplitTenThousandCharactersForTelegram(t *testing.T) {
	var b strings.Builder
	for i := 0; b.Len() < 10000; i++ {
		b.WriteString("Sentence number with some words and an emoji 😀 in it. ")
		if i%7 == 6 {
			b.WriteString("\n\n")
		}
	}
	text := b.String()
	got := Split(text, 4096, UTF16Len)
	if len(got) < 3 {
		t.Fatalf("got %d parts", len(got))
	}
	for i, p := range got {
		if n := UTF16Len(p); n > 4096 {
			t.Errorf("part %d is %d UTF-16 units", i, n)
		}
	}
	if strings.Join(got, "") != text {
		t.Errorf("parts do not rejoin")
	}
}

func FuzzSplit(f *testing.F) {
	f.Add("hello world", 5, false)
	f.Add("para one\n\npara two\nline\n", 8, true)
	f.Add("```go\nfunc f() {}\nfunc g() {}\n```\ntext after", 20, false)
	f.Add("~~~~\ncode\n~~~\nstill code\n~~~~\n", 16, true)
	f.Add(strings.Repeat("😀a ", 30), 7, true)
	f.Add("```"+strings.Repeat("x", 40)+"\nbody\n```", 24, false)
	f.Add("\xff\xfe```\n\xe2\x82\n", 3, true)
	f.Fuzz(func(t *testing.T, text string, max int, utf16 bool) {
		measure := utf8.RuneCountInString
		minMax := 1
		if utf16 {
			measure = UTF16Len
			minMax = 2 // the widest single rune
		}
		if max < minMax || max > 1<<16 {
			return
		}
		parts := rejoin(t, text, max, measure)
		for i, p := range parts {
			s := p.prefix + p.body + p.suffix
			if n := measure(s); n > max {
				t.Fatalf("part %d %q measures %d > %d", i, s, n, max)
			}
			if p.body != "" && !utf8.ValidString(text) {
				continue
			}
			if !utf8.ValidString(s) {
				t.Fatalf("part %d of valid text is invalid UTF-8: %q", i, s)
			}
		}
	})
}
