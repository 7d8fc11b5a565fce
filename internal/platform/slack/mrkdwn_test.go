package slack

import "testing"

func TestRenderMrkdwn(t *testing.T) {
	cases := []struct{ name, md, want string }{
		{"bold and italic", "**bold** and *it* and _it_", "*bold* and _it_ and _it_"},
		{"strike", "~~gone~~", "~gone~"},
		{"code span escaped", "run `a < b && c`", "run `a &lt; b &amp;&amp; c`"},
		{"code block without language", "```go\nif a < b {\n}\n```", "```\nif a &lt; b {\n}\n```"},
		{"link", "see [the docs](https://example.com/x?a=1&b=2)", "see <https://example.com/x?a=1&amp;b=2|the docs>"},
		{"autolink", "<https://example.com>", "<https://example.com>"},
		{"relative link is text", "[here](/local)", "here"},
		{"heading", "# Plan\ntext", "*Plan*\n\ntext"},
		{"bullets", "- one\n- two\n  - nested", "• one\n• two\n    • nested"},
		{"numbers", "3. three\n4. four", "3. three\n4. four"},
		{"quote", "> said\n> twice\n\n> again", "> said\n> twice\n\n> again"},
		{"escapes special", "a <!channel> & <@U1> > b", "a &lt;!channel&gt; &amp; &lt;@U1&gt; &gt; b"},
		{"backslash escapes", `\*not bold\*`, "*not bold*"},
		{"raw html shown", "<b>x</b>", "&lt;b&gt;x&lt;/b&gt;"},
		{"rule", "a\n\n---\n\nb", "a\n\n———\n\nb"},
	}
	for _, c := range cases {
		if got := renderMrkdwn(c.md); got != c.want {
			t.Errorf("%s: renderMrkdwn(%q) = %q, want %q", c.name, c.md, got, c.want)
		}
	}
}

func TestPlainTextAndTimes(t *testing.T) {
	if got := plainText("<!here> &lt;tag&gt; <mailto:a@b.c|a@b.c> <#C1|general>", "U0"); got != "@here <tag> a@b.c #general" {
		t.Errorf("plainText = %q", got)
	}
	if got := tsTime("1700000000.000100"); got.Unix() != 1700000000 || got.Nanosecond() != 100_000 {
		t.Errorf("tsTime = %v", got)
	}
}
