package web

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"html"
	"strings"
	"unicode/utf8"
)

// pageLine is a transcript line as the page receives it: rendered, and
// for a tool line, what its card shows.
type pageLine struct {
	Role string `json:"role"`
	Text string `json:"text"`
	HTML string `json:"html,omitempty"`
	At   int64  `json:"at,omitempty"` // Unix milliseconds
	Tool string `json:"tool,omitempty"`
	// Tool lines: Call is "call" or "result"; a call's Summary is its
	// arguments in one short line, Detail the whole of them (indented
	// JSON) or the result's output; CallID pairs the two.
	Call    string `json:"call,omitempty"`
	Summary string `json:"summary,omitempty"`
	// SummaryCut says the summary leaves part of the arguments out.
	SummaryCut bool   `json:"summary_cut,omitempty"`
	Detail     string `json:"detail,omitempty"`
	CallID     string `json:"call_id,omitempty"`
	// The person's lines: ID is the id the page gave the message (one
	// said elsewhere has none); Kept marks one said while the session was
	// held elsewhere, kept until /continue.
	ID   string `json:"id,omitempty"`
	Kept bool   `json:"kept,omitempty"`
	// Files are the files said or sent with the line, where the store
	// keeps them (FileTranscripts).
	Files []pageFile `json:"files,omitempty"`
}

// pageLines are the lines of the conversation key as the page shows them.
func pageLines(key string, lines []Line) []pageLine {
	out := make([]pageLine, 0, len(lines))
	for _, l := range lines {
		p := pageLine{Role: l.Role, Text: l.Text, Tool: l.Tool, CallID: l.CallID, Kept: l.Kept}
		if id, ok := strings.CutPrefix(l.ID, eventID(key, "")); ok {
			p.ID = id
		}
		if !l.Time.IsZero() {
			p.At = l.Time.UnixMilli()
		}
		switch {
		case l.Role == "tool" && l.Call == "call":
			p.Call, p.Detail = "call", indentJSON(l.Detail)
			p.Summary, p.SummaryCut = summarize(l.Detail)
		case l.Role == "tool" && l.Call == "result":
			p.Call, p.Detail = "result", l.Detail
		case l.Role == "tool":
			p.Detail = l.Text // a tool line from a source that does not tell calls apart
		case l.Role == "assistant":
			p.HTML = renderMarkdown(l.Text)
		}
		out = append(out, p)
	}
	return out
}

// summaryLen is how many characters a call's summary shows.
const summaryLen = 120

// summarize is a tool call's arguments in one line: the value alone when
// there is one ("ls -la"), else name: value pairs; cut to summaryLen.
// cut says whether anything was left out or folded onto the line.
func summarize(args string) (summary string, cut bool) {
	s := args
	if parts, ok := argParts(args); ok && len(parts) == 1 {
		s = parts[0][1]
	} else if ok {
		pairs := make([]string, len(parts))
		for i, p := range parts {
			pairs[i] = p[0] + ": " + p[1]
		}
		s = strings.Join(pairs, ", ")
	}
	one := strings.Join(strings.Fields(s), " ")
	summary = shorten(one, summaryLen)
	return summary, summary != s
}

// argParts is a JSON object's names and values in order, strings
// unquoted; ok is false for anything else.
func argParts(args string) (parts [][2]string, ok bool) {
	dec := json.NewDecoder(strings.NewReader(args))
	dec.UseNumber()
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, false
	}
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return nil, false
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, false
		}
		val := string(v)
		var str string
		if json.Unmarshal(v, &str) == nil {
			val = str
		}
		parts = append(parts, [2]string{k.(string), val})
	}
	return parts, true
}

// shorten cuts s to at most n characters, marking the cut with "…".
func shorten(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// indentJSON is JSON indented to read, or s as it is when it is not JSON.
func indentJSON(s string) string {
	var b bytes.Buffer
	if json.Indent(&b, []byte(s), "", "  ") != nil {
		return s
	}
	return b.String()
}

//go:embed signin.html
var signInHTML string

// signInPageFor is the page a browser gets without a valid sign-in, saying
// why. (Plain replacement, not html/template: executing a template keeps
// every exported method of the program in the binary.)
func signInPageFor(why string) string {
	switch why {
	case "not signed in":
		why = "This browser is not signed in."
	case "your sign-in expired":
		why = "Your sign-in has expired."
	}
	return strings.NewReplacer("{{why}}", html.EscapeString(why), "{{file}}", html.EscapeString(TokenFile)).Replace(signInHTML)
}
