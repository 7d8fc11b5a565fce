package termmd

import (
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
)

func TestRender(t *testing.T) {
	const (
		dim   = "\x1b[2m"
		reset = "\x1b[m"
	)
	for _, tc := range []struct {
		name  string
		md    string
		width int
		color bool
		want  string
	}{
		{"heading plain", "# Title\n\n### Third", 80, false, "# Title\n\n### Third"},
		{"heading colour", "# Title\n\n## Second\n\n### Third *it*", 80, true,
			"\x1b[0;1;4;96mTitle" + reset + "\n\n\x1b[0;1;96mSecond" + reset + "\n\n\x1b[0;1;36mThird \x1b[0;1;36;3mit" + reset},
		{"inline plain", "*it* **bold** ~~gone~~ `code`", 80, false, "*it* **bold** ~~gone~~ `code`"},
		{"inline colour", "*it* **bold** ~~gone~~ `code`", 80, true,
			"\x1b[0;3mit" + reset + " \x1b[0;1mbold" + reset + " \x1b[0;9mgone" + reset + " \x1b[0;33mcode" + reset},
		{"nested emphasis", "**bold *both***", 80, true, "\x1b[0;1mbold \x1b[0;1;3mboth" + reset},
		{"escapes and entities", `\*not it\* &amp; &#65;`, 80, false, "*not it* & A"},
		{"link", "[the docs](https://example.com/docs) now", 80, false, "the docs (https://example.com/docs) now"},
		{"link colour", "[docs](https://e.com)", 80, true, "\x1b[0;4;34mdocs" + reset + " \x1b[0;2m(https://e.com)" + reset},
		{"link that is its address", "[https://e.com](https://e.com) and <https://f.com> and https://g.com", 80, false,
			"https://e.com and https://f.com and https://g.com"},
		{"image", "![a cat](cat.png)", 80, false, "a cat (cat.png)"},
		{"linked image", "[![a cat](cat.png)](https://e.com)", 80, false, "a cat (cat.png) (https://e.com)"},
		{"linked image that is its address", "[![https://e.com](https://e.com)](https://e.com)", 80, false, "https://e.com"},
		{"link without a label", "[](https://e.com) and <me@e.com>", 80, false, "https://e.com and me@e.com"},
		// Every line break is kept, as a chat shows it: the soft one
		// between "three" and "four" too.
		{"line breaks", "one  \ntwo\\\nthree\nfour", 80, false, "one\ntwo\nthree\nfour"},
		{"command output quoted line by line", "hello from shell\nLinux\n[exit code 0]", 80, false, "hello from shell\nLinux\n[exit code 0]"},
		{"a list item's second line", "- first\n  continued\n- second", 80, false, "• first\n  continued\n• second"},
		{"paragraph wraps at width", "the quick brown fox jumps over the lazy dog again and again", 20, false,
			"the quick brown fox\njumps over the lazy\ndog again and again"},
		{"a long word is cut", "abcdefghijklmnopqrstuvwxyz0123456789", 20, false, "abcdefghijklmnopqrst\nuvwxyz0123456789"},
		{"wide runes wrap by columns", "日本語 日本語 日本語 日本語", 20, false, "日本語 日本語 日本語\n日本語"},
		{"a long wide word is cut by columns", "日本語日本語日本語日本語", 20, false, "日本語日本語日本語日\n本語"},
		{"emoji", "ok 👍🏽 👨‍👩‍👧 done and more words here", 20, false, "ok 👍🏽 👨‍👩‍👧 done and\nmore words here"},
		{"a wrapped span keeps its style on each line", "**one two three four five six**", 20, true,
			"\x1b[0;1mone two three four" + reset + "\n\x1b[0;1mfive six" + reset},
		{"bullets by depth", "- a\n  - b\n    - c\n      - d\n- e", 80, false, "• a\n  ◦ b\n    ▪ c\n      • d\n• e"},
		{"numbers right-aligned", "9. nine\n10. ten\n11. eleven", 80, false, " 9. nine\n10. ten\n11. eleven"},
		{"ordered in bullets", "- a\n  1. one\n  2. two\n- b", 80, false, "• a\n  1. one\n  2. two\n• b"},
		{"loose list", "- a\n\n- b\n\n  more of b", 80, false, "• a\n\n• b\n\n  more of b"},
		{"hanging indent", "- the quick brown fox jumps over the lazy dog\n  - and the nested one wraps too", 24, false,
			"• the quick brown fox\n  jumps over the lazy\n  dog\n  ◦ and the nested one\n    wraps too"},
		{"task list", "- [x] done\n- [ ] open", 80, false, "• [x] done\n• [ ] open"},
		{"empty item", "-\n- b", 80, false, "•\n• b"},
		{"quote", "> a\n>\n> b\n> > nested", 80, false, "│ a\n│\n│ b\n│\n│ │ nested"},
		{"quote wraps inside its bar", "> the quick brown fox jumps over", 20, false, "│ the quick brown\n│ fox jumps over"},
		{"quote colour", "> a", 80, true, dim + "│" + reset + " a"},
		{"thematic break", "a\n\n---\n\nb", 80, false, "a\n\n" + strings.Repeat("─", 40) + "\n\nb"},
		{"thematic break narrow", "***", 20, false, strings.Repeat("─", 20)},
		{"fenced code plain", "```go\nx := 1\n\n\ty := 2\n```", 80, false, "  x := 1\n\n      y := 2"},
		{"fenced code colour", "```go\nx := 1\n```", 80, true, "  \x1b[2;3mgo" + reset + "\n  \x1b[33mx := 1" + reset},
		{"code is never wrapped", "```\na very long line of code that is far wider than the width\n```", 20, false,
			"  a very long line of code that is far wider than the width"},
		{"indented code", "text\n\n    code here\n    more", 80, false, "text\n\n  code here\n  more"},
		{"code keeps its markup", "```\n**not bold** <b>\n```", 80, false, "  **not bold** <b>"},
		{"html kept as written", "<div>\nhi\n</div>", 80, false, "<div>\nhi\n</div>"},
		{"inline html kept", "a <b>b</b> c", 80, false, "a <b>b</b> c"},
		{"control characters dropped", "a\x1b[2Jb\rc\x07d\u009be", 80, false, "a[2Jbcde"},
		{"invalid utf-8 replaced", "a\xffb", 80, false, "a\uFFFDb"},
		{"blocks one blank line apart", "# H\n\n\n\npara\n\n\n- item", 80, false, "# H\n\npara\n\n• item"},
		{"table at its natural width", "| name | size |\n|---|--:|\n| alpha | 1 |\n| beta | 22 |", 80, false,
			" name  │ size\n───────┼──────\n alpha │    1\n beta  │   22"},
		{"table cells keep styles", "| a |\n|---|\n| **b** |", 80, true,
			" \x1b[0;1ma" + reset + "\n" + dim + "───" + reset + "\n \x1b[0;1mb" + reset},
		{"ragged table rows", "| a | b |\n|---|---|\n| 1 |\n| 1 | 2 | 3 |", 80, false, " a │ b\n───┼───\n 1 │\n 1 │ 2"},
		{"too narrow is the minimum width", "the quick brown fox jumps over the lazy dog", 5, false, "the quick brown fox\njumps over the lazy\ndog"},
		{"empty", "", 80, false, ""},
		{"blank", " \n\n \t\n", 80, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Render(tc.md, tc.width, Options{Color: tc.color})
			if got != tc.want {
				t.Errorf("Render(%q, %d)\n got %q\nwant %q", tc.md, tc.width, got, tc.want)
			}
		})
	}
}

func TestRenderTableWiderThanWidthWraps(t *testing.T) {
	md := "| column one | column two | three |\n|---|---|---|\n| a rather long cell text | another long cell | x |\n| short | cell | y |"
	const width = 30
	out := Render(md, width, Options{})
	lines := strings.Split(out, "\n")
	for _, l := range lines {
		if w := ansi.StringWidth(l); w > width {
			t.Errorf("line %d wide in %d columns: %q", w, width, l)
		}
	}
	if !strings.Contains(out, "┼") || !strings.Contains(lines[0], "│") {
		t.Fatalf("not drawn as a table:\n%s", out)
	}
	words := strings.Fields(strings.NewReplacer("│", " ", "─", " ", "┼", " ").Replace(out))
	for _, want := range strings.Fields("column one column two three a rather long cell text another long cell x short cell y") {
		i := indexOf(words, want)
		if i < 0 {
			t.Fatalf("%q lost from the table:\n%s", want, out)
		}
		words = append(words[:i], words[i+1:]...)
	}
}

func indexOf(words []string, w string) int {
	for i, x := range words {
		if x == w {
			return i
		}
	}
	return -1
}

// sample has every construct, nested, for properties that hold for any
// markdown.
const sample = "# A heading long enough to be wrapped at the narrow widths\n\n" +
	"Text with *emphasis*, **strong**, ~~struck~~, `code`, a [link](https://example.com/a/long/path/that/goes/on) and 日本語のテキスト and emoji 👍🏽.\n\n" +
	"- a list item that goes on and on until it has to wrap\n  - nested with **bold words that wrap** too\n    1. numbered deeper still, wrapping as well\n- [x] a task\n\n" +
	"> a quote that is long enough to wrap\n> > and a nested quote inside it, wrapping\n\n---\n\n" +
	"```go\nfunc main() { fmt.Println(\"a line of code wider than narrow terminals\") }\n```\n\n" +
	"| a | b |\n|---|---|\n| 1 | two words |\n"

func TestRenderFitsWidth(t *testing.T) {
	for _, color := range []bool{false, true} {
		for width := MinWidth; width <= 100; width += 7 {
			for _, l := range render(sample, width, Options{Color: color}) {
				if w := ansi.StringWidth(l.text); w > width && !l.fixed {
					t.Errorf("color %v: line %d wide at width %d: %q", color, w, width, l.text)
				}
			}
		}
	}
}

func TestRenderNoColorHasNoEscapes(t *testing.T) {
	if out := Render(sample, 40, Options{}); strings.ContainsRune(out, '\x1b') {
		t.Fatalf("escape without colour: %q", out)
	}
	// And with colour, the same text once the escapes are stripped, but
	// for the markers that stand in for styles.
	colour := ansi.Strip(Render(sample, 100, Options{Color: true}))
	for _, want := range []string{"A heading long enough", "emphasis, strong, struck, code, a link (https://example.com/a/long/path/that/goes/on)", "• [x] a task", "│ │ and a nested quote", "  go\n  func main()", " 1 │ two words"} {
		if !strings.Contains(colour, want) {
			t.Errorf("%q missing from the coloured rendering:\n%s", want, colour)
		}
	}
}

func BenchmarkRender(b *testing.B) {
	for _, color := range []bool{false, true} {
		b.Run(map[bool]string{false: "plain", true: "color"}[color], func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				Render(sample, 80, Options{Color: color})
			}
		})
	}
}
