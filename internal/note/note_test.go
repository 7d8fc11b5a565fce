package note_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/baton-agent/baton/internal/note"
	"github.com/baton-agent/baton/internal/store"
)

const validNote = `{
  "task": "Book a train from Lisbon to Porto",
  "progress": "Picked the 9:40 train; the booking page is open.",
  "context": {"files": ["trips/lisbon.md"], "commands": ["curl -s https://cp.pt/api"], "values": ["train: 9:40 Alfa Pendular", "seat: 42"]},
  "next_steps": ["Pay for the ticket", "Add it to the calendar"],
  "open_questions": ["First class or second?"]
}`

func TestParseValid(t *testing.T) {
	n, err := note.Parse(validNote)
	if err != nil {
		t.Fatal(err)
	}
	if n.Task != "Book a train from Lisbon to Porto" || n.Context.Values[1] != "seat: 42" || len(n.NextSteps) != 2 || n.OpenQuestions[0] != "First class or second?" {
		t.Fatalf("parsed %+v", n)
	}
	if n.Fallback != "" {
		t.Fatalf("a model's note marked as a fallback: %q", n.Fallback)
	}
	// Models wrap JSON in a fence even when told not to.
	fenced, err := note.Parse("```json\n" + validNote + "\n```")
	if err != nil || fenced.Task != n.Task {
		t.Fatalf("fenced note: %+v, %v", fenced, err)
	}
	// Empty lists are fine; the lists come back non-nil.
	bare, err := note.Parse(`{"task":"t","progress":"p","context":{"files":[],"commands":[],"values":[]},"next_steps":[],"open_questions":[]}`)
	if err != nil || bare.NextSteps == nil || bare.Context.Files == nil {
		t.Fatalf("bare note: %+v, %v", bare, err)
	}
}

func TestParseRefusesWhatTheSchemaRefuses(t *testing.T) {
	ok := map[string]any{}
	if err := json.Unmarshal([]byte(validNote), &ok); err != nil {
		t.Fatal(err)
	}
	with := func(change func(map[string]any)) string {
		m := map[string]any{}
		_ = json.Unmarshal([]byte(validNote), &m)
		change(m)
		b, _ := json.Marshal(m)
		return string(b)
	}
	cases := map[string]string{
		"empty":               "",
		"prose":               "Here is your note: the task is booking a train.",
		"an array":            `[` + validNote + `]`,
		"two objects":         validNote + validNote,
		"no task":             with(func(m map[string]any) { delete(m, "task") }),
		"blank task":          with(func(m map[string]any) { m["task"] = "   " }),
		"task not a string":   with(func(m map[string]any) { m["task"] = 42 }),
		"task too long":       with(func(m map[string]any) { m["task"] = strings.Repeat("x", 301) }),
		"unknown field":       with(func(m map[string]any) { m["mood"] = "cheerful" }),
		"unknown context key": with(func(m map[string]any) { m["context"].(map[string]any)["urls"] = []string{"x"} }),
		"no context files":    with(func(m map[string]any) { delete(m["context"].(map[string]any), "files") }),
		"steps not a list":    with(func(m map[string]any) { m["next_steps"] = "pay" }),
		"too many steps":      with(func(m map[string]any) { m["next_steps"] = make([]string, 9) }),
		"a blank question":    with(func(m map[string]any) { m["open_questions"] = []string{""} }),
		"a number in values":  with(func(m map[string]any) { m["context"].(map[string]any)["values"] = []any{7} }),
	}
	for name, text := range cases {
		t.Run(name, func(t *testing.T) {
			n, err := note.Parse(text)
			if !errors.Is(err, note.ErrInvalid) {
				t.Fatalf("Parse(%.80q) = %+v, %v; want ErrInvalid", text, n, err)
			}
		})
	}
}

// A refused note says which field is wrong, so the model can be told.
func TestInvalidNoteNamesTheField(t *testing.T) {
	for text, field := range map[string]string{
		`{"task":"t","progress":"p","context":{"files":[],"commands":[],"values":[7]},"next_steps":[],"open_questions":[]}`:           "values",
		`{"task":" ","progress":"p","context":{"files":[],"commands":[],"values":[]},"next_steps":[],"open_questions":[]}`:            "task",
		`{"task":"t","progress":"p","context":{"files":[],"values":[]},"next_steps":[],"open_questions":[]}`:                          "commands",
		`{"task":"t","progress":"p","context":{"files":[],"commands":[],"values":[]},"next_steps":[],"open_questions":[],"mood":"x"}`: "mood",
	} {
		_, err := note.Parse(text)
		if !errors.Is(err, note.ErrInvalid) || !strings.Contains(err.Error(), field) {
			t.Errorf("Parse(%s) = %v; want ErrInvalid naming %q", text, err, field)
		}
	}
}

// The schema the model is shown is the one notes are checked against.
func TestSchemaIsTheOneShown(t *testing.T) {
	var s struct {
		Required             []string       `json:"required"`
		AdditionalProperties bool           `json:"additionalProperties"`
		Properties           map[string]any `json:"properties"`
	}
	if err := json.Unmarshal([]byte(note.Schema()), &s); err != nil {
		t.Fatalf("the schema is not JSON: %v", err)
	}
	for _, f := range []string{"task", "progress", "context", "next_steps", "open_questions"} {
		if _, ok := s.Properties[f]; !ok {
			t.Errorf("the schema has no %s", f)
		}
	}
	if len(s.Required) != 5 || s.AdditionalProperties {
		t.Errorf("the schema requires %v, additional properties %v", s.Required, s.AdditionalProperties)
	}
	req := note.Request("m", []store.Message{{Role: store.RoleUser, Content: "hello"}}, 0, 0)
	text := req.Messages[0].Content
	if !strings.HasPrefix(text, note.Lead) || !strings.Contains(text, note.Schema()) || !strings.Contains(text, "hello") {
		t.Fatalf("the request does not lead with %q, carry the conversation and the schema:\n%s", note.Lead, text)
	}
}

func TestMarkdownIsCompact(t *testing.T) {
	n, err := note.Parse(validNote)
	if err != nil {
		t.Fatal(err)
	}
	md := n.Markdown()
	for _, want := range []string{
		"**Handoff note**\n",
		"**Task:** Book a train from Lisbon to Porto\n",
		"**Context:** files `trips/lisbon.md` · commands `curl -s https://cp.pt/api` · train: 9:40 Alfa Pendular; seat: 42\n",
		"**Next:** 1. Pay for the ticket 2. Add it to the calendar\n",
		"**Open questions:** First class or second?",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
	if strings.Contains(md, "written by baton") {
		t.Errorf("a model's note says it is a fallback:\n%s", md)
	}
	if lines := strings.Count(md, "\n") + 1; lines != 6 {
		t.Errorf("%d lines, want 6:\n%s", lines, md)
	}
}

func TestStoredRoundTrip(t *testing.T) {
	n, err := note.Parse(validNote)
	if err != nil {
		t.Fatal(err)
	}
	n.HandoffID, n.Fallback = 7, note.ReasonInvalid
	row, err := n.Stored("s1")
	if err != nil || row.SessionID != "s1" || row.HandoffID != 7 || row.Fallback != note.ReasonInvalid {
		t.Fatalf("stored %+v, %v", row, err)
	}
	if strings.Contains(row.Body, "Fallback") || strings.Contains(row.Body, "HandoffID") {
		t.Fatalf("baton's own fields in the body: %s", row.Body)
	}
	back, err := note.FromStored(row)
	if err != nil || back.Task != n.Task || back.Fallback != n.Fallback || back.HandoffID != 7 || back.Context.Commands[0] != n.Context.Commands[0] {
		t.Fatalf("read back %+v, %v", back, err)
	}
}
