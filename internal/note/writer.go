package note

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/baton-agent/baton/internal/agent"
	"github.com/baton-agent/baton/internal/llm"
	"github.com/baton-agent/baton/internal/llm/offline"
	"github.com/baton-agent/baton/internal/plural"
	"github.com/baton-agent/baton/internal/store"
	"github.com/baton-agent/baton/internal/transcript"
)

// Lead starts the user message that asks the model for a note, so the
// request can be told apart from a turn (a fake model in tests answers it
// on its own). The request is never stored.
const Lead = "[baton handoff note]"

// DefaultTimeout bounds the model's answer: past it the note is built
// from the last turns, so a slow model never holds a handoff up for long.
const DefaultTimeout = 90 * time.Second

// DefaultTranscriptBytes caps the transcript sent with the request when
// the context window is not known.
const DefaultTranscriptBytes = 200_000

// toolResultBytes caps each tool result in the transcript sent: the gist
// is enough for a note.
const toolResultBytes = 1500

// Fallback reasons, shown at the end of a note baton built itself.
const (
	ReasonInvalid   = "the model's note was not valid"
	ReasonNoModel   = "the model did not answer"
	ReasonUnplugged = "no model is configured"
	ReasonEmpty     = "there was no conversation yet"
)

// ErrEmpty is a session with nothing to write a note about.
var ErrEmpty = errors.New("nothing to write a note about yet")

const system = "You write handoff notes: short, structured records of where a conversation between a person and an AI agent stands, " +
	"so the work can be picked up in another place. You answer with one JSON object and nothing else."

const instruction = `Write the handoff note for the conversation above: the task, the progress so far, the key context (files, commands and values exactly as they appeared), the next steps, and the questions still open. Be concrete and brief. Answer with one JSON object matching this JSON schema, with no prose and no code fence around it:

`

// Request is the one model call that asks for a note on msgs. The
// transcript is sent as text in one user message, so the request is
// valid for any provider whatever tools the session used.
func Request(model string, msgs []store.Message, maxTranscript, maxTokens int) llm.Request {
	if maxTranscript <= 0 {
		maxTranscript = DefaultTranscriptBytes
	}
	text := squeeze(render(msgs), maxTranscript)
	return llm.Request{
		Model:     model,
		System:    system,
		Messages:  []llm.Message{{Role: llm.RoleUser, Content: Lead + "\n\n<conversation>\n" + text + "</conversation>\n\n" + instruction + Schema()}},
		MaxTokens: maxTokens,
	}
}

// Store is the part of store.Store a Writer uses.
type Store interface {
	GetSession(ctx context.Context, id string) (store.Session, error)
	Transcript(ctx context.Context, sessionID string) ([]store.Message, error)
	AddUsage(ctx context.Context, id string, u store.Usage) error
	AddNote(ctx context.Context, n store.Note) (store.Note, bool, error)
	HandoffNote(ctx context.Context, handoffID int64) (store.Note, error)
}

var _ Store = store.Store(nil)

// Writer writes and stores notes. Set the fields before the first call;
// one Writer may serve many sessions at once.
type Writer struct {
	Provider  llm.Provider // nil: no model is configured, every note is baton's
	Model     string       // used when the session names no model
	Store     Store
	Tools     *agent.Registry // names what tool calls acted on, in a fallback note; nil: by argument names
	MaxTokens int             // for the answer; 0: the provider's default
	// ContextWindow (tokens), when known, bounds the transcript sent.
	ContextWindow int
	Timeout       time.Duration // 0: DefaultTimeout
	Log           *slog.Logger  // nil: slog.Default()
	// TurnOf, when set, picks the message that starts handoff h's own
	// turn at the destination, which may be stored while h's note is
	// written: the note covers the transcript before it.
	TurnOf func(h store.Handoff, m store.Message) bool
}

// ForHandoff writes the note of handoff h and stores it with the
// handoff, once: a retried handoff gets the note stored the first time.
// The note is the model's, or one built from the last turns when the
// model's is not valid or it did not answer. An error means nothing was
// stored (the store failed, or ctx ended).
func (w *Writer) ForHandoff(ctx context.Context, h store.Handoff) (Note, error) {
	if s, err := w.Store.HandoffNote(ctx, h.ID); err == nil {
		return FromStored(s)
	} else if !errors.Is(err, store.ErrNotFound) {
		return Note{}, fmt.Errorf("note of handoff %d: %w", h.ID, err)
	}
	var before func(store.Message) bool
	if w.TurnOf != nil {
		before = func(m store.Message) bool { return w.TurnOf(h, m) }
	}
	n, err := w.compose(ctx, h.SessionID, before)
	if errors.Is(err, ErrEmpty) {
		n, err = Fallback(nil, ReasonEmpty, w.Tools), nil
	}
	if err != nil {
		return Note{}, fmt.Errorf("note of handoff %d: %w", h.ID, err)
	}
	n.HandoffID = h.ID
	return w.store(ctx, h.SessionID, n)
}

// Save writes a note of the session without a handoff (/save) and stores
// it. ErrEmpty when the session has no conversation yet.
func (w *Writer) Save(ctx context.Context, sessionID string) (Note, error) {
	n, err := w.compose(ctx, sessionID, nil)
	if err != nil {
		return Note{}, fmt.Errorf("save a note of session %s: %w", sessionID, err)
	}
	return w.store(ctx, sessionID, n)
}

func (w *Writer) store(ctx context.Context, sessionID string, n Note) (Note, error) {
	row, err := n.Stored(sessionID)
	if err != nil {
		return Note{}, err
	}
	stored, _, err := w.Store.AddNote(ctx, row)
	if err != nil {
		return Note{}, fmt.Errorf("store the note: %w", err)
	}
	return FromStored(stored)
}

// compose asks the model for a note on the session's transcript (up to
// the first message end picks, if any) and falls back to one built from
// the last turns.
func (w *Writer) compose(ctx context.Context, sessionID string, end func(store.Message) bool) (Note, error) {
	sess, err := w.Store.GetSession(ctx, sessionID)
	if err != nil {
		return Note{}, err
	}
	msgs, err := w.Store.Transcript(ctx, sessionID)
	if err != nil {
		return Note{}, err
	}
	if end != nil {
		for i, m := range msgs {
			if end(m) {
				msgs = msgs[:i]
				break
			}
		}
	}
	if len(personTurns(msgs)) == 0 {
		return Note{}, ErrEmpty
	}
	n, err := w.write(ctx, sess, sessionID, msgs)
	n.Attached = Attached(msgs)
	return n, err
}

// write has the model write the note of msgs, or builds it from them.
func (w *Writer) write(ctx context.Context, sess store.Session, sessionID string, msgs []store.Message) (Note, error) {
	if w.Provider == nil || w.Provider.Name() == offline.Name {
		return Fallback(msgs, ReasonUnplugged, w.Tools), nil
	}
	model := sess.Model
	if model == "" {
		model = w.Model
	}
	timeout := w.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	resp, err := w.Provider.Chat(cctx, Request(model, msgs, w.ContextWindow*4*6/10, w.MaxTokens), nil)
	if err != nil {
		if ctx.Err() != nil {
			return Note{}, ctx.Err() // stopping: no note rather than a makeshift one
		}
		w.log().Warn("the model did not write a note; building it from the last turns", "session", sessionID, "err", err)
		return Fallback(msgs, ReasonNoModel, w.Tools), nil
	}
	if u := resp.Usage; u.InputTokens+u.OutputTokens > 0 {
		if err := w.Store.AddUsage(ctx, sessionID, store.Usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens}); err != nil {
			w.log().Warn("count a note's tokens", "session", sessionID, "err", err)
		}
	}
	n, err := Parse(resp.Text)
	if err != nil {
		w.log().Warn("the model's note was not valid; building it from the last turns", "session", sessionID, "err", err)
		return Fallback(msgs, ReasonInvalid, w.Tools), nil
	}
	return n, nil
}

func (w *Writer) log() *slog.Logger {
	if w.Log != nil {
		return w.Log
	}
	return slog.Default()
}

// render writes the transcript as text for the model.
func render(msgs []store.Message) string {
	var b strings.Builder
	for _, m := range msgs {
		switch {
		case m.Role == store.RoleSystem:
		case m.Role == store.RoleTool:
			fmt.Fprintf(&b, "[result of %s]\n%s\n\n", m.ToolName, clipNoted(m.Content, toolResultBytes))
		case m.Role == store.RoleAssistant:
			if m.Content != "" {
				fmt.Fprintf(&b, "[assistant]\n%s\n\n", m.Content)
			}
			calls, _ := agent.DecodeToolCalls(m.ToolCalls)
			for _, c := range calls {
				fmt.Fprintf(&b, "[assistant called %s with %s]\n\n", c.Name, clipNoted(string(c.Arguments), toolResultBytes))
			}
		case m.Kind != "":
			fmt.Fprintf(&b, "[baton %s]\n%s\n\n", m.Kind, m.Content)
		default:
			fmt.Fprintf(&b, "[%s]\n%s\n\n", m.Role, m.Content)
		}
		for _, a := range m.Attachments {
			fmt.Fprintf(&b, "[attached: %s (%s, %s)]\n\n", transcript.Name(a), a.MediaType, plural.Size(a.Size))
		}
	}
	return b.String()
}

// squeeze keeps text within limit bytes by dropping from the middle: the
// beginning sets the task, the end is where things stand.
func squeeze(text string, limit int) string {
	if len(text) <= limit {
		return text
	}
	head := clip(text, limit/4)
	tail := len(text) - (limit - len(head))
	for tail < len(text) && text[tail]&0xC0 == 0x80 {
		tail++
	}
	return head + fmt.Sprintf("\n[… %d bytes omitted …]\n", tail-len(head)) + text[tail:]
}

// clip cuts s to at most n bytes on a character boundary.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}

func clipNoted(s string, n int) string {
	if len(s) <= n {
		return s
	}
	c := clip(s, n)
	return c + fmt.Sprintf(" [… %d bytes omitted]", len(s)-len(c))
}
