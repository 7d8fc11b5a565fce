package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/baton-agent/baton/internal/agent"
	"github.com/baton-agent/baton/internal/llm"
	"github.com/baton-agent/baton/internal/store"
	"github.com/baton-agent/baton/internal/transcript"

	"github.com/baton-agent/baton/internal/plural"
)

// short is the id prefix people type: long enough to be unique in practice.
func short(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}

// describe names a session for people: its title and short id.
func describe(s store.Session) string {
	if s.Title != "" {
		return fmt.Sprintf("%q (%s)", s.Title, short(s.ID))
	}
	return "session " + short(s.ID)
}

// ago is a coarse "how long ago" for listings.
func ago(t time.Time, now time.Time) string {
	d := now.Sub(t)
	switch {
	case t.IsZero():
		return "-"
	case d < time.Minute:
		return "just now"
	case d < time.Hour:
		return fmt.Sprintf("%dm ago", int(d.Minutes()))
	case d < 24*time.Hour:
		return fmt.Sprintf("%dh ago", int(d.Hours()))
	case d < 30*24*time.Hour:
		return fmt.Sprintf("%dd ago", int(d.Hours()/24))
	}
	return t.Format("2006-01-02")
}

// callLabel is "tool: subject" with the subject shortened.
func callLabel(tool, subject string) string {
	subject = strings.Join(strings.Fields(subject), " ")
	if subject == "" {
		return tool
	}
	return tool + ": " + clipHead(subject, 100)
}

// subjectOf is what a call acts on, as its tool describes it.
func subjectOf(a *agent.Agent, tool string, args json.RawMessage) string {
	if a == nil || a.Tools == nil {
		return ""
	}
	t, ok := a.Tools.Get(tool)
	if !ok || t.Subject == nil {
		return ""
	}
	return t.Subject(args)
}

// toolOutputLines is how many lines of a tool's output the terminal shows.
const toolOutputLines = 6

// toolLine reports a finished tool call: a mark, what ran, and the start
// of its output.
func toolLine(e agent.Event) string {
	label := callLabel(e.Call.Name, subjectFromArgs(e.Call.Arguments))
	switch {
	case e.Output == agent.DeniedResult:
		return "  ✗ " + label + " — denied"
	case e.Output == agent.CancelledResult || strings.HasPrefix(e.Output, agent.CancelledResult+";"):
		return "  ⏹ " + label + " — cancelled"
	}
	mark := "✓"
	if e.Err != nil {
		mark = "✗"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "  %s %s", mark, label)
	out := strings.TrimRight(e.Output, "\n")
	if out == "" {
		return b.String()
	}
	lines := strings.Split(out, "\n")
	for i, l := range lines {
		if i == toolOutputLines {
			fmt.Fprintf(&b, "\n    … %s more", plural.Count(len(lines)-i, "line", "lines"))
			break
		}
		b.WriteString("\n    " + clipHead(l, 160))
	}
	return b.String()
}

// subjectFromArgs guesses a readable subject from common argument names,
// for places without the tool registry at hand.
func subjectFromArgs(args json.RawMessage) string {
	var a map[string]any
	if json.Unmarshal(args, &a) != nil {
		return ""
	}
	for _, k := range []string{"command", "path"} {
		if s, ok := a[k].(string); ok {
			return s
		}
	}
	return ""
}

// clipHead keeps the first n runes of s.
func clipHead(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// printTranscript shows the last limit messages of a transcript (all when
// limit <= 0) as transcript.View sees them: the person's lines after the
// prompt mark, answers rendered as they were when first streamed, tool
// calls as the cards shown live (how each ended and the start of its
// result), and baton's own messages as one-line notes.
func printTranscript(out *renderer, msgs []store.Message, limit int) {
	if limit > 0 && len(msgs) > limit {
		out.Printf("… %s (`baton sessions show` prints them all)\n", plural.Count(len(msgs)-limit, "earlier message", "earlier messages"))
		msgs = msgs[len(msgs)-limit:]
	}
	lines := transcript.View(msgs)
	// A call's line says how it ended, which its result tells.
	results := map[string]string{}
	for _, l := range lines {
		if l.Role == transcript.ToolResult {
			results[l.CallID] = l.Text
		}
	}
	for _, l := range lines {
		switch l.Role {
		case transcript.User:
			if l.Text != "" || len(l.Files) == 0 {
				out.Printf("%s%s\n", prompt, underPrompt(l.Text))
			}
			printFiles(out, l.Files)
		case transcript.Assistant:
			out.Delta(l.Text)
			out.EndAnswer()
		case transcript.ToolCall:
			// The card as it was shown live: how the call ended and the
			// start of its result.
			e := agent.Event{Call: llm.ToolCall{ID: l.CallID, Name: l.Tool, Arguments: json.RawMessage(l.Args)}, Output: results[l.CallID]}
			if strings.HasPrefix(e.Output, "error: ") {
				e.Err = errors.New(e.Output)
			}
			out.Printf("%s\n", toolLine(e))
		case transcript.ToolResult:
			printFiles(out, l.Files) // what send_file sent
		case transcript.Note:
			switch l.Kind {
			case store.KindSummary:
				out.Printf("(earlier turns, summarized)\n")
			case store.KindHandoff:
				out.Printf("↪ %s\n", l.Text)
			default:
				out.Printf("(%s)\n", strings.TrimSpace(l.Text))
			}
		}
	}
}

// underPrompt lines up a message's second and later lines under its
// first, after the prompt mark, as the line editor showed them when they
// were typed: their own indentation is kept on top of that.
func underPrompt(text string) string {
	pad := strings.Repeat(" ", utf8.RuneCountInString(prompt))
	return strings.ReplaceAll(text, "\n", "\n"+pad)
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// explain turns a failed model call's error into one line a person can
// act on. again is how to try again where they are ("/retry" in the
// chat, "/compress" after a failed compression, "" where only running
// the command again helps).
func explain(err error, again string) string {
	var api *llm.APIError
	if errors.As(err, &api) {
		hint := ""
		switch {
		case errors.Is(err, llm.ErrAuth):
			hint = " — check the API key (see README, Configuration)"
		case errors.Is(err, llm.ErrRateLimited):
			hint = " — rate limited; wait a moment, then " + orAgain(again)
		case errors.Is(err, llm.ErrServer), errors.Is(err, llm.ErrStream):
			hint = " — the provider failed; " + orAgain(again) + " to try again"
		case errors.Is(err, llm.ErrBadRequest):
			hint = " — the provider refused the request"
		}
		return firstLine(api.Error()) + hint
	}
	if errors.Is(err, agent.ErrMaxSteps) {
		if again == "" {
			return "stopped after too many steps; continue the session (baton -c) to let it go on"
		}
		return "stopped after too many steps; say \"continue\" to let it go on"
	}
	return firstLine(err.Error())
}

func orAgain(again string) string {
	if again == "" {
		return "run the command again"
	}
	return again
}

// printFiles prints a line per file a message carries, with where it is
// kept.
func printFiles(out *renderer, files []transcript.File) {
	for _, f := range files {
		a := store.Attachment{Name: f.Name, MediaType: f.MediaType, Size: f.Size, SHA256: f.SHA256, Transcript: f.Transcript, Duration: f.Duration}
		if a.Transcript != "" {
			out.Printf("🎙 %s\n", transcript.VoiceLine(a))
		}
		path := ""
		if out.keptAt != nil {
			path = out.keptAt(a)
		}
		out.Printf("%s\n", fileLine(out, a, path))
	}
}
