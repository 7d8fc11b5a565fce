// Package safehtmltest checks rendered HTML against a reader's allow-list,
// for the tests of every renderer of untrusted markdown.
package safehtmltest

import (
	"net/url"
	"slices"
	"strings"

	"golang.org/x/net/html"
)

// AllowList is every element and attribute a reader may receive from a
// reply; anything else in rendered markdown is a hole.
type AllowList struct {
	// Elements are the allowed elements, each with its allowed attributes.
	Elements map[string][]string
	// Schemes are those an a element's href may have.
	Schemes []string
	// Check says what else is wrong with an element, or "".
	Check func(n *html.Node) string
}

// Unsafe says what in rendered HTML is not allowed, or "".
func (l AllowList) Unsafe(rendered string) string {
	doc, err := html.Parse(strings.NewReader(rendered))
	if err != nil {
		return err.Error()
	}
	var bad []string
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode && n.Data != "html" && n.Data != "head" && n.Data != "body" {
			attrs, ok := l.Elements[n.Data]
			if !ok {
				bad = append(bad, "<"+n.Data+">")
			}
			for _, a := range n.Attr {
				if !slices.Contains(attrs, a.Key) {
					bad = append(bad, n.Data+"["+a.Key+"]")
				}
			}
			if n.Data == "a" {
				href := Attr(n, "href")
				if u, err := url.Parse(href); err != nil || !slices.Contains(l.Schemes, u.Scheme) {
					bad = append(bad, "href="+href)
				}
			}
			if l.Check != nil {
				if why := l.Check(n); why != "" {
					bad = append(bad, why)
				}
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	return strings.Join(bad, ", ")
}

// Attr is the value of n's attribute key, or "".
func Attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

// HasAttr reports whether n has the attribute key.
func HasAttr(n *html.Node, key string) bool {
	for _, a := range n.Attr {
		if a.Key == key {
			return true
		}
	}
	return false
}

// Hostile is markdown that tries to bring markup, scripts or addresses
// into what a reader shows.
func Hostile() []string {
	return []string{
		"<script>alert(1)</script>",
		"hi <img src=x onerror=alert(1)> there",
		"<div onclick=\"x()\">\nblock\n</div>",
		"[click](javascript:alert(1)) [data](data:text/html,<b>x</b>) [vb](vbscript:x) [rel](/ws) [proto](//evil.example/x)",
		"![pixel](https://tracker.example/p.png) ![local](/static/app.js)",
		"<https://ok.example/a?b=\"c\">",
		"[q](https://e.example/\"onmouseover=\"x \"t\\\" onclick=\\\"y\")",
		"```js\" onload=\"x\nx\n```",
		"<!-- comment --> <?php echo 1 ?> <![CDATA[x]]>",
		"<a href=\"https://ok.example\">raw</a>",
		"[ok](HTTPS://E.EXAMPLE) [mail](mailto:me@example.com) [bad mail](mailto:)",
		"- [x] done\n- [ ] not",
		"| a | b |\n|:--|--:|\n| <b>1</b> | [x](javascript:y) |",
	}
}
