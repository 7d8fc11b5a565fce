package slack

import (
	"strconv"
	"strings"
	"sync"

	"github.com/yuin/goldmark/util"

	"github.com/baton-agent/baton/internal/platform/styled"
)

// renderMrkdwn turns a markdown reply into Slack's mrkdwn: *bold*,
// _italic_, ~strike~, `code`, ``` blocks ```, <url|links> and > quotes.
// What mrkdwn lacks becomes text: headings bold, list items bullets (or
// their numbers), rules a dash line. &, < and > are escaped everywhere,
// as Slack asks, so a reply can never mention @channel or forge a link.
func renderMrkdwn(md string) string { return mrkdwn().Render(md).Plain }

// mrkdwnEscaper escapes the three characters Slack's markup gives
// meaning; built once, when first needed.
var mrkdwnEscaper = sync.OnceValue(func() *strings.Replacer {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")
})

func escapeMrkdwn(s string) string { return mrkdwnEscaper().Replace(s) }

// Dialect is Slack's mrkdwn as the kit's markdown walker writes it.
func Dialect() *styled.Dialect { return mrkdwn() }

// mrkdwn is built once, when first needed; it is never changed.
var mrkdwn = sync.OnceValue(func() *styled.Dialect {
	return &styled.Dialect{
		Marks: styled.Marks{
			styled.Bold:      {"*", "*"},
			styled.Italic:    {"_", "_"},
			styled.Strike:    {"~", "~"},
			styled.Monospace: {"`", "`"},
			// Slack shows a language name after ``` as code text: left out.
			styled.Block: {"```\n", "\n```"},
		},
		Escape: func(w util.BufWriter, v []byte) { _, _ = w.WriteString(escapeMrkdwn(string(v))) },
		Item: func(ordered bool, num int, _ byte) string {
			if ordered {
				return strconv.Itoa(num) + ". "
			}
			return "• "
		},
		Indent: "    ",
		Quote:  styled.Quote{Sep: "\n\n", LinePrefix: "> "},
		// <url|label> when Slack will link the URL, the label alone
		// otherwise (a relative link has nowhere to go); <url> when the
		// label is the URL.
		Link: func(_ styled.LinkKind, dest []byte, label string) (string, string, bool) {
			if !linkable(string(dest)) {
				return "", "", true
			}
			url := escapeMrkdwn(string(dest))
			if label == "" || label == url {
				return "<" + url + ">", "", false
			}
			return "<" + url + "|", ">", true
		},
		BareImageShowsURL: true,
		TrimSpace:         true,
	}
})

func linkable(u string) bool {
	l := strings.ToLower(u)
	for _, p := range []string{"http://", "https://", "mailto:"} {
		if strings.HasPrefix(l, p) && len(l) > len(p) {
			return !strings.ContainsAny(u, " \n\t|")
		}
	}
	return false
}
