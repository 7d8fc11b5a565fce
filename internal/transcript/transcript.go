// Package transcript decides how a stored transcript is shown to a person:
// what is someone's words, what is tool activity, and what is a note baton
// wrote itself. The terminal and the web page each render its lines their
// own way, so both show the same things and neither has to know how a
// message of baton's own is stored.
package transcript

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/baton-agent/baton/internal/plural"
	"github.com/baton-agent/baton/internal/store"
)

// Role is what a line shows.
type Role string

const (
	User       Role = "user"        // what the person said
	Assistant  Role = "assistant"   // what the model answered
	ToolCall   Role = "tool_call"   // a tool the model called: Tool and Args
	ToolResult Role = "tool_result" // what a tool returned: Tool and Text
	Note       Role = "note"        // something baton wrote: a handoff, a summary, a notice
)

// ResultShown caps a tool result's text in a line, in bytes: tool output
// can be megabytes, and a person reads the start. The store keeps it whole.
const ResultShown = 2000

// CutMark ends a tool result's text that was cut to ResultShown.
const CutMark = " …"

// Line is one entry of a transcript as a person sees it.
type Line struct {
	Role Role `json:"role"`
	// Kind is the stored message's kind; for notes it says which note.
	Kind store.MessageKind `json:"kind,omitempty"`
	// Text is the words: a message's content, a tool result's output (cut
	// to ResultShown, ending in CutMark), a note's one line.
	Text string `json:"text,omitempty"`
	// Tool names the tool of a call or a result.
	Tool string `json:"tool,omitempty"`
	// Args are a call's arguments as the model wrote them: compact JSON
	// without the HTML escapes encoders add (a page shows it as text), or
	// the raw text when the model sent something that was not JSON.
	Args string `json:"args,omitempty"`
	// CallID pairs a result with its call.
	CallID string    `json:"call_id,omitempty"`
	Time   time.Time `json:"time"`
	// Files are the files the message carries: a person's photo, a file
	// a tool sent.
	Files []File `json:"files,omitempty"`
}

// File is an attachment as a line shows it.
type File struct {
	Name      string `json:"name"`
	MediaType string `json:"media_type"`
	Size      int64  `json:"size"`
	SHA256    string `json:"sha256"`
	Width     int    `json:"width,omitempty"`
	Height    int    `json:"height,omitempty"`
	// Transcript is what a voice note says (Duration long), "" for other
	// files.
	Transcript string        `json:"transcript,omitempty"`
	Duration   time.Duration `json:"duration,omitempty"`
}

func files(as []store.Attachment) []File {
	if len(as) == 0 {
		return nil
	}
	out := make([]File, len(as))
	for i, a := range as {
		out[i] = File{Name: Name(a), MediaType: a.MediaType, Size: a.Size, SHA256: a.SHA256, Width: a.Width, Height: a.Height,
			Transcript: a.Transcript, Duration: a.Duration}
	}
	return out
}

// Name is the name an attachment is shown by: its own, or for a file
// sent without one (a photo, a voice message) its kind and the start of
// its hash, so two are told apart.
func Name(a store.Attachment) string {
	if a.Name != "" {
		return a.Name
	}
	kind, _, _ := strings.Cut(a.MediaType, "/")
	if kind == "" || kind == "application" {
		kind = "file"
	}
	return kind + "-" + a.SHA256[:min(8, len(a.SHA256))]
}

// FileLine is one line telling of a file where it cannot be shown: its
// name, type and size, and where it is kept when path is not "".
func FileLine(a store.Attachment, path string) string {
	line := "📎 " + Name(a) + " (" + a.MediaType + ", " + plural.Size(a.Size) + ")"
	if path != "" {
		line += ", kept at " + path
	}
	return line
}

// View turns a transcript into the lines a person is shown, in order. An
// assistant message gives its text (if any) and then a line per tool call;
// system messages and messages of unknown roles are not shown.
func View(msgs []store.Message) []Line {
	out := make([]Line, 0, len(msgs))
	for _, m := range msgs {
		switch {
		case m.Kind == store.KindHandoff:
			out = append(out, Line{Role: Note, Kind: m.Kind, Text: handoffLine(m.Content), Time: m.CreatedAt})
		case m.Kind != "":
			// A summary, a notice, or a kind from a newer baton: all are
			// baton's own words, never the person's.
			out = append(out, Line{Role: Note, Kind: m.Kind, Text: m.Content, Time: m.CreatedAt})
		case m.Role == store.RoleUser:
			out = append(out, Line{Role: User, Text: m.Content, Time: m.CreatedAt, Files: files(m.Attachments)})
		case m.Role == store.RoleAssistant:
			if strings.TrimSpace(m.Content) != "" {
				out = append(out, Line{Role: Assistant, Text: m.Content, Time: m.CreatedAt})
			}
			for _, c := range decodeCalls(m.ToolCalls) {
				out = append(out, Line{Role: ToolCall, Tool: c.Name, Args: args(c.Arguments), CallID: c.ID, Time: m.CreatedAt})
			}
		case m.Role == store.RoleTool:
			out = append(out, Line{Role: ToolResult, Tool: m.ToolName, Text: capResult(m.Content), CallID: m.ToolCallID, Time: m.CreatedAt, Files: files(m.Attachments)})
		}
	}
	return out
}

// handoffLine is the first sentence of a handoff's synthetic message, which
// says from where to where; the rest is instructions for the model. A
// bracketed lead ("[baton handoff]") is for the model too.
func handoffLine(content string) string {
	s := strings.TrimSpace(content)
	if strings.HasPrefix(s, "[") {
		if _, rest, ok := strings.Cut(s, "]"); ok {
			s = strings.TrimSpace(rest)
		}
	}
	first, _, _ := strings.Cut(s, ". ")
	return strings.TrimSuffix(first, ".")
}

// call is the stored shape of one tool call (see agent.EncodeToolCalls).
type call struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// decodeCalls reads an assistant message's tool calls; calls that do not
// decode are not shown rather than failing the whole view.
func decodeCalls(raw json.RawMessage) []call {
	if len(raw) == 0 {
		return nil
	}
	var calls []call
	if json.Unmarshal(raw, &calls) != nil {
		return nil
	}
	return calls
}

// args renders a call's arguments for reading.
func args(raw json.RawMessage) string {
	var text string
	switch {
	case len(raw) == 0 || string(raw) == "null":
		return "{}"
	case json.Unmarshal(raw, &text) == nil:
		// Arguments that were not JSON are stored as a string of the raw
		// text: show the text itself.
		return text
	}
	return readableJSON(raw)
}

// readableJSON is raw compacted, with the \u003c, \u003e and \u0026 escapes
// that encoders add for HTML safety undone, so "a > b" reads as typed. Key
// order and numbers stay exactly as written.
func readableJSON(raw json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	c := b.Bytes()
	out := make([]byte, 0, len(c))
	for i := 0; i < len(c); i++ {
		if c[i] != '\\' || i+1 == len(c) {
			out = append(out, c[i])
			continue
		}
		// A backslash starts an escape (JSON has them only in strings):
		// copy it whole so an escaped backslash is never read as a start.
		if c[i+1] == 'u' && i+6 <= len(c) {
			switch strings.ToLower(string(c[i+2 : i+6])) {
			case "003c":
				out, i = append(out, '<'), i+5
				continue
			case "003e":
				out, i = append(out, '>'), i+5
				continue
			case "0026":
				out, i = append(out, '&'), i+5
				continue
			}
		}
		out, i = append(out, c[i], c[i+1]), i+1
	}
	return string(out)
}

// capResult cuts a tool result to ResultShown bytes, on a character
// boundary, and marks the cut.
func capResult(s string) string {
	if len(s) <= ResultShown {
		return s
	}
	n := ResultShown
	// Step back to the start of the character the cut falls in; content
	// that is not UTF-8 at all is cut where it is.
	for back := 0; back < utf8.UTFMax && n > 0 && !utf8.RuneStart(s[n]); back++ {
		n--
	}
	if !utf8.RuneStart(s[n]) {
		n = ResultShown
	}
	return s[:n] + CutMark
}

// VoiceLine is a transcribed voice note as people and the model read it:
// "voice note (0:07): what it says".
func VoiceLine(a store.Attachment) string {
	line := "voice note"
	if a.Duration > 0 {
		secs := int(a.Duration.Round(time.Second) / time.Second)
		line += fmt.Sprintf(" (%d:%02d)", secs/60, secs%60)
	}
	return line + ": " + a.Transcript
}
