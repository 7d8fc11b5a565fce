package web

import (
	"strings"
	"testing"
	"time"
)

func TestSummarizeToolArguments(t *testing.T) {
	cases := []struct {
		args, want string
		cut        bool
	}{
		{`{"command":"ls -la"}`, "ls -la", false},
		{`{"path":"a.txt","content":"x"}`, "path: a.txt, content: x", false},
		{`{"command":"echo a\n  echo b"}`, "echo a echo b", true},
		{`{"n":3,"deep":{"a":[1,2]}}`, `n: 3, deep: {"a":[1,2]}`, false},
		{`not json`, "not json", false},
		{`{"command":"` + strings.Repeat("x", 200) + `"}`, strings.Repeat("x", summaryLen-1) + "…", true},
	}
	for _, c := range cases {
		got, cut := summarize(c.args)
		if got != c.want || cut != c.cut {
			t.Errorf("summarize(%.40q) = %q %v, want %q %v", c.args, got, cut, c.want, c.cut)
		}
	}
}

func TestPageLinesRenderWhatTheyShould(t *testing.T) {
	at := time.UnixMilli(1_700_000_000_123)
	lines := pageLines(Home.Key(), []Line{
		{Role: "user", Text: "**not rendered**", Time: at},
		{Role: "assistant", Text: "**bold**", Time: at},
		{Role: "tool", Tool: "shell", Call: "call", CallID: "c1", Detail: `{"command":"ls"}`, Text: `→ shell {"command":"ls"}`},
		{Role: "tool", Tool: "shell", Call: "result", CallID: "c1", Detail: "a\nb", Text: "← shell: a\nb"},
	})
	if lines[0].HTML != "" || lines[0].At != at.UnixMilli() {
		t.Errorf("user line %+v: what a person typed is shown as typed", lines[0])
	}
	if lines[1].HTML != "<p><strong>bold</strong></p>\n" {
		t.Errorf("assistant line %+v", lines[1])
	}
	if c := lines[2]; c.Call != "call" || c.Summary != "ls" || c.Detail != "{\n  \"command\": \"ls\"\n}" || c.CallID != "c1" || c.HTML != "" {
		t.Errorf("call line %+v", c)
	}
	if r := lines[3]; r.Call != "result" || r.Detail != "a\nb" || r.CallID != "c1" {
		t.Errorf("result line %+v", r)
	}
}
