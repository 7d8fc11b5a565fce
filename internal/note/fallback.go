package note

import (
	"encoding/json"
	"slices"
	"strings"

	"github.com/baton-agent/baton/internal/agent"
	"github.com/baton-agent/baton/internal/plural"
	"github.com/baton-agent/baton/internal/store"
	"github.com/baton-agent/baton/internal/transcript"
)

// FallbackTurns is how many of the person's last requests a fallback note
// is built from.
const FallbackTurns = 3

// Bounds of a fallback note's parts, within the schema's.
const (
	fallbackItem   = 300
	fallbackAnswer = 900
	fallbackItems  = 12
)

// Fallback builds a note from the last turns of msgs, for when the model
// cannot write one: the task is the person's last request, the progress
// their earlier requests and the last answer, the context what the tool
// calls acted on. reason says why, and is shown with the note. tools,
// when given, names what each call acted on; otherwise arguments named
// path or command are used.
func Fallback(msgs []store.Message, reason string, tools *agent.Registry) Note {
	n := Note{Fallback: reason}
	turns := personTurns(msgs)
	if len(turns) == 0 {
		n.Task = "Nothing yet: the conversation has no messages."
		n.Progress = "Nothing done yet."
		n.normalize()
		return n
	}
	if len(turns) > FallbackTurns {
		turns = turns[len(turns)-FallbackTurns:]
	}
	last := msgs[turns[len(turns)-1]]
	n.Task = clip(flat(last.Content), fallbackItem)

	var progress []string
	if len(turns) > 1 {
		var earlier []string
		for _, i := range turns[:len(turns)-1] {
			earlier = append(earlier, "«"+clip(flat(msgs[i].Content), fallbackItem)+"»")
		}
		progress = append(progress, "Asked before: "+strings.Join(earlier, "; ")+".")
	}
	answer := ""
	for _, m := range msgs[turns[0]:] {
		if m.Role == store.RoleAssistant && m.Kind == "" && strings.TrimSpace(m.Content) != "" {
			answer = m.Content
		}
	}
	if answer == "" {
		progress = append(progress, "No answer yet.")
	} else {
		progress = append(progress, "Last answer: "+clip(flat(answer), fallbackAnswer))
	}
	n.Progress = strings.Join(progress, " ")

	for _, m := range msgs[turns[0]:] {
		if m.Role != store.RoleAssistant {
			continue
		}
		calls, _ := agent.DecodeToolCalls(m.ToolCalls)
		for _, c := range calls {
			subject, kind := subjectOf(tools, c.Name, c.Arguments)
			if subject == "" {
				continue
			}
			subject = clip(flat(subject), fallbackItem)
			switch kind {
			case agent.SubjectPath:
				n.Context.Files = addOnce(n.Context.Files, subject)
			case agent.SubjectCommand:
				n.Context.Commands = addOnce(n.Context.Commands, subject)
			default:
				n.Context.Values = addOnce(n.Context.Values, clip(c.Name+": "+subject, fallbackItem))
			}
		}
	}
	n.normalize()
	return n
}

// personTurns are the indexes of what the person said (not baton's own
// messages: handoffs, summaries, notices).
func personTurns(msgs []store.Message) []int {
	var out []int
	for i, m := range msgs {
		if m.Role == store.RoleUser && m.Kind == "" && (strings.TrimSpace(m.Content) != "" || len(m.Attachments) > 0) {
			out = append(out, i)
		}
	}
	return out
}

// subjectOf is what a tool call acted on, and how to read it.
func subjectOf(tools *agent.Registry, name string, args json.RawMessage) (string, agent.SubjectKind) {
	if tools != nil {
		if t, ok := tools.Get(name); ok && t.Subject != nil {
			return t.Subject(args), t.SubjectKind
		}
	}
	var fields map[string]any
	if json.Unmarshal(args, &fields) != nil {
		return "", agent.SubjectText
	}
	if s, ok := fields["command"].(string); ok {
		return s, agent.SubjectCommand
	}
	for _, k := range []string{"path", "file", "file_path"} {
		if s, ok := fields[k].(string); ok {
			return s, agent.SubjectPath
		}
	}
	return "", agent.SubjectText
}

func addOnce(list []string, s string) []string {
	if len(list) >= fallbackItems || slices.Contains(list, s) {
		return list
	}
	return append(list, s)
}

// flat folds whitespace, new lines included, so a part reads as one line.
func flat(s string) string { return strings.Join(strings.Fields(s), " ") }

// maxAttached bounds the files a note names; the latest are named.
const maxAttached = 10

// Attached names the files msgs carry, each once, latest last: "name
// (type, size)", after a count of earlier ones past maxAttached.
func Attached(msgs []store.Message) []string {
	var out []string
	seen := map[string]bool{}
	for _, m := range msgs {
		for _, a := range m.Attachments {
			if seen[a.SHA256] {
				continue
			}
			seen[a.SHA256] = true
			out = append(out, transcript.Name(a)+" ("+a.MediaType+", "+plural.Size(a.Size)+")")
		}
	}
	if len(out) > maxAttached {
		out = append([]string{plural.Count(len(out)-maxAttached, "earlier file", "earlier files")}, out[len(out)-maxAttached:]...)
	}
	return out
}
