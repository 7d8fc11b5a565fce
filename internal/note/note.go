// Package note is the handoff note: a short, structured record of where a
// session stands (task, progress, key context, next steps, open
// questions), written by the model at each handoff and by /save, checked
// against a JSON schema, and built by baton from the last turns when the
// model cannot write a valid one.
//
// schema.json is the one description of a note: the model is shown it
// as it is, and its answer is validated against it.
package note

import (
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/baton-agent/baton/internal/store"
)

//go:embed schema.json
var schemaJSON []byte

// Schema is the JSON schema a note must match, as the model is shown it.
func Schema() string { return string(schemaJSON) }

// ErrInvalid is a note that does not match the schema.
var ErrInvalid = errors.New("the note does not match its schema")

// Note is a handoff note. The JSON fields are what the model writes; the
// others are baton's own.
type Note struct {
	Task          string   `json:"task"`
	Progress      string   `json:"progress"`
	Context       Context  `json:"context"`
	NextSteps     []string `json:"next_steps"`
	OpenQuestions []string `json:"open_questions"`

	// Fallback says why baton built this note from the last turns; ""
	// when the model wrote it.
	Fallback string `json:"-"`
	// HandoffID is the handoff it was written for; 0 for /save.
	HandoffID int64 `json:"-"`
	// Written is when it was stored; zero before.
	Written time.Time `json:"-"`
	// Attached names the files the conversation carries (photos,
	// documents, files the agent sent), one "name (type, size)" each:
	// told by baton from the transcript (Attached), whatever the model
	// wrote.
	Attached []string `json:"attached,omitempty"`
}

// Context is what is needed to carry on, exactly as it appeared.
type Context struct {
	Files    []string `json:"files"`
	Commands []string `json:"commands"`
	Values   []string `json:"values"`
}

// Parse reads a note the model wrote: one JSON object matching the
// schema, optionally inside a code fence. Anything else is ErrInvalid,
// with what is wrong.
func Parse(text string) (Note, error) {
	text = unfence(strings.TrimSpace(text))
	if text == "" {
		return Note{}, fmt.Errorf("%w: the answer was empty", ErrInvalid)
	}
	if err := validate(text); err != nil {
		return Note{}, err
	}
	dec := json.NewDecoder(strings.NewReader(text))
	dec.DisallowUnknownFields()
	var n Note
	if err := dec.Decode(&n); err != nil {
		return Note{}, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	n.normalize()
	return n, nil
}

// validate checks text against the schema. The schema is resolved for
// each note: a note is written once per handoff, and nothing is kept
// between calls.
func validate(text string) error {
	var schema jsonschema.Schema
	if err := json.Unmarshal(schemaJSON, &schema); err != nil {
		return fmt.Errorf("read the note schema: %w", err)
	}
	resolved, err := schema.Resolve(nil)
	if err != nil {
		return fmt.Errorf("resolve the note schema: %w", err)
	}
	dec := json.NewDecoder(strings.NewReader(text))
	var inst any
	if err := dec.Decode(&inst); err != nil {
		return fmt.Errorf("%w: not JSON: %v", ErrInvalid, err)
	}
	if dec.More() {
		return fmt.Errorf("%w: more than one JSON value", ErrInvalid)
	}
	if err := resolved.Validate(inst); err != nil {
		return fmt.Errorf("%w: %s", ErrInvalid, oneLine(err.Error()))
	}
	return nil
}

// unfence takes a JSON object out of a markdown code fence, which models
// add even when told not to.
func unfence(s string) string {
	if !strings.HasPrefix(s, "```") || !strings.HasSuffix(s, "```") || len(s) < 6 {
		return s
	}
	s = strings.TrimSuffix(strings.TrimPrefix(s, "```"), "```")
	if i := strings.IndexByte(s, '\n'); i >= 0 && !strings.Contains(s[:i], "{") {
		s = s[i+1:] // the fence's language tag
	}
	return strings.TrimSpace(s)
}

// normalize trims every field and leaves lists non-nil, so a note reads
// and encodes the same however it was made.
func (n *Note) normalize() {
	n.Task, n.Progress = strings.TrimSpace(n.Task), strings.TrimSpace(n.Progress)
	for _, l := range []*[]string{&n.Context.Files, &n.Context.Commands, &n.Context.Values, &n.NextSteps, &n.OpenQuestions} {
		out := []string{}
		for _, s := range *l {
			if s = strings.TrimSpace(s); s != "" {
				out = append(out, s)
			}
		}
		*l = out
	}
}

// Stored is the note as the store keeps it.
func (n Note) Stored(sessionID string) (store.Note, error) {
	n.normalize()
	body, err := json.Marshal(n)
	if err != nil {
		return store.Note{}, fmt.Errorf("encode note: %w", err)
	}
	return store.Note{SessionID: sessionID, HandoffID: n.HandoffID, Body: string(body), Fallback: n.Fallback}, nil
}

// FromStored reads a stored note back. It is not validated again: a
// fallback note need not fit the schema's bounds.
func FromStored(s store.Note) (Note, error) {
	var n Note
	if err := json.Unmarshal([]byte(s.Body), &n); err != nil {
		return Note{}, fmt.Errorf("read note %d: %w", s.ID, err)
	}
	n.normalize()
	n.Fallback, n.HandoffID, n.Written = s.Fallback, s.HandoffID, s.CreatedAt
	return n, nil
}

// Markdown is the note as people are shown it: compact, one line per
// part, empty parts left out.
func (n Note) Markdown() string {
	var b strings.Builder
	b.WriteString("**Handoff note**")
	if n.HandoffID == 0 && !n.Written.IsZero() {
		b.WriteString(" (saved " + n.Written.Local().Format("Jan 2 15:04") + ")")
	}
	b.WriteString("\n")
	line := func(label, text string) {
		if text != "" {
			fmt.Fprintf(&b, "**%s:** %s\n", label, text)
		}
	}
	line("Task", n.Task)
	line("Progress", n.Progress)
	var ctx []string
	if len(n.Context.Files) > 0 {
		ctx = append(ctx, "files "+codes(n.Context.Files))
	}
	if len(n.Context.Commands) > 0 {
		ctx = append(ctx, "commands "+codes(n.Context.Commands))
	}
	if len(n.Context.Values) > 0 {
		ctx = append(ctx, strings.Join(n.Context.Values, "; "))
	}
	line("Context", strings.Join(ctx, " · "))
	line("Files in this conversation", strings.Join(n.Attached, ", "))
	line("Next", numbered(n.NextSteps))
	line("Open questions", strings.Join(n.OpenQuestions, " "))
	if n.Fallback != "" {
		fmt.Fprintf(&b, "_(written by baton from the last turns: %s)_\n", n.Fallback)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// codes shows each item as inline code; one holding a backtick is
// fenced by two, so the span still closes.
func codes(items []string) string {
	out := make([]string, len(items))
	for i, s := range items {
		if strings.Contains(s, "`") {
			out[i] = "`` " + s + " ``"
		} else {
			out[i] = "`" + s + "`"
		}
	}
	return strings.Join(out, ", ")
}

func numbered(items []string) string {
	if len(items) == 1 {
		return items[0]
	}
	out := make([]string, len(items))
	for i, s := range items {
		out[i] = fmt.Sprintf("%d. %s", i+1, s)
	}
	return strings.Join(out, " ")
}

// oneLine folds a multi-line validation error into one line.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
