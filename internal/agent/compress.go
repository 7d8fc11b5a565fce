package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/baton-agent/baton/internal/llm"
	"github.com/baton-agent/baton/internal/store"
)

// SummaryLead starts the text of the user message that stands in for
// compressed turns, so the model reads it as notes rather than as the
// person's words. Code tells the message apart by its kind
// (store.KindSummary), never by this text.
const SummaryLead = "[Summary of the earlier conversation, compressed to save context]\n\n"

const summarizerSystem = "You compress conversations between a person and an AI agent so the agent can carry on without the full transcript."

const summarizeInstruction = `Summarize the conversation above for continuation. Keep: the person's goals and preferences, decisions made, facts learned (file paths, commands, names, numbers), what tools did and found, work still open, and anything the person asked to remember. Be concise and concrete; write it as notes to yourself, not as a reply to the person.`

// toolResultInSummary caps each tool result in the text handed to the
// summarizer: the gist is enough, and the whole must fit the window.
const toolResultInSummary = 2000

// IsSummary reports whether m is a compression summary.
func IsSummary(m store.Message) bool { return m.Kind == store.KindSummary }

// EstimateTokens guesses the tokens a transcript takes, at four bytes a
// token: rough, but it errs early rather than late for English and code.
func EstimateTokens(msgs []store.Message) int {
	n := 0
	for _, m := range msgs {
		n += len(m.Content) + len(m.ToolCalls) + 16 // a little per message for roles and framing
	}
	return n / 4
}

func (a *Agent) overThreshold(msgs []store.Message) bool {
	if a.ContextWindow <= 0 {
		return false
	}
	return float64(EstimateTokens(msgs)+len(a.System)/4) > compressAt*float64(a.ContextWindow)
}

// Compress summarizes all but the last KeepTurns turns of the session with
// one model call and replaces the live transcript with the summary and the
// kept turns; the replaced rows stay in the store's history. before and
// after are estimated tokens. ErrNothingToCompress when there are no older
// turns to summarize.
func (a *Agent) Compress(ctx context.Context, sessionID string) (before, after int, err error) {
	unlock, err := a.lock(sessionID)
	if err != nil {
		return 0, 0, fmt.Errorf("compress session %s: %w", sessionID, err)
	}
	defer unlock()
	sess, err := a.Store.GetSession(ctx, sessionID)
	if err != nil {
		return 0, 0, fmt.Errorf("compress session %s: %w", sessionID, err)
	}
	msgs, err := a.Store.Transcript(ctx, sessionID)
	if err != nil {
		return 0, 0, fmt.Errorf("compress session %s: %w", sessionID, err)
	}
	_, before, after, err = a.compress(ctx, sessionID, sess, msgs)
	if err != nil {
		return before, before, fmt.Errorf("compress session %s: %w", sessionID, err)
	}
	return before, after, nil
}

func (a *Agent) compress(ctx context.Context, sessionID string, sess store.Session, msgs []store.Message) ([]store.Message, int, int, error) {
	before := EstimateTokens(msgs)
	split := splitPoint(msgs, a.keepTurns())
	if split <= 0 {
		return msgs, before, before, ErrNothingToCompress
	}
	summary, err := a.summarize(ctx, sessionID, sess, msgs[:split])
	if err != nil {
		return msgs, before, before, err
	}
	next := append([]store.Message{{Role: store.RoleUser, Kind: store.KindSummary, Content: SummaryLead + summary}}, msgs[split:]...)
	stored, err := a.replace(ctx, sessionID, next)
	if err != nil {
		return msgs, before, before, err
	}
	return stored, before, EstimateTokens(stored), nil
}

// splitPoint is where the kept part of msgs starts: at the user message
// opening the keep-th last turn (fewer if there are not that many). With a
// single long turn, it is the latest assistant message before which every
// tool call has its result, so a call is never split from its results.
// 0 means there is nothing worth summarizing.
func splitPoint(msgs []store.Message, keep int) int {
	worth := func(s int) bool { return s > 1 || (s == 1 && !IsSummary(msgs[0])) }
	var users []int
	for i, m := range msgs {
		if m.Role == store.RoleUser && !IsSummary(m) {
			users = append(users, i)
		}
	}
	for k := min(keep, len(users)); k >= 1; k-- {
		if s := users[len(users)-k]; worth(s) {
			return s
		}
	}
	// balanced[i]: every tool call in msgs[:i] is answered in msgs[:i].
	balanced := make([]bool, len(msgs)+1)
	open := map[string]bool{}
	balanced[0] = true
	for i, m := range msgs {
		switch m.Role {
		case store.RoleAssistant:
			calls, _ := DecodeToolCalls(m.ToolCalls)
			for _, c := range calls {
				open[c.ID] = true
			}
		case store.RoleTool:
			delete(open, m.ToolCallID)
		}
		balanced[i+1] = len(open) == 0
	}
	// Only worth it once a tool exchange is done: tool output is what
	// makes a single turn long.
	firstResult := -1
	for i, m := range msgs {
		if m.Role == store.RoleTool {
			firstResult = i
			break
		}
	}
	for i := len(msgs) - 1; i > firstResult && firstResult >= 0; i-- {
		if msgs[i].Role == store.RoleAssistant && balanced[i] && worth(i) {
			return i
		}
	}
	return 0
}

// summarize asks the model for a summary of msgs, rendered as plain text
// so the request is valid for any provider whatever tools it held.
func (a *Agent) summarize(ctx context.Context, sessionID string, sess store.Session, msgs []store.Message) (string, error) {
	text := renderTranscript(msgs)
	if a.ContextWindow > 0 {
		text = squeeze(text, a.ContextWindow*4*6/10)
	}
	req := llm.Request{
		Model:     a.model(sess),
		System:    summarizerSystem,
		Messages:  []llm.Message{{Role: llm.RoleUser, Content: "<conversation>\n" + text + "</conversation>\n\n" + summarizeInstruction}},
		MaxTokens: a.MaxOutputTokens,
	}
	resp, err := a.Provider.Chat(ctx, req, nil)
	if err != nil {
		return "", fmt.Errorf("summarize: %w", err)
	}
	if err := a.addUsage(ctx, sessionID, resp.Usage); err != nil {
		return "", err
	}
	summary := strings.TrimSpace(resp.Text)
	if summary == "" {
		return "", errors.New("summarize: the model returned an empty summary")
	}
	return summary, nil
}

func renderTranscript(msgs []store.Message) string {
	var b strings.Builder
	for _, m := range msgs {
		switch m.Role {
		case store.RoleTool:
			fmt.Fprintf(&b, "[result of %s]\n%s\n\n", m.ToolName, clipNote(m.Content, toolResultInSummary))
		case store.RoleAssistant:
			if m.Content != "" {
				fmt.Fprintf(&b, "[assistant]\n%s\n\n", m.Content)
			}
			calls, _ := DecodeToolCalls(m.ToolCalls)
			for _, c := range calls {
				fmt.Fprintf(&b, "[assistant called %s with %s]\n\n", c.Name, clipNote(string(c.Arguments), toolResultInSummary))
			}
		default:
			fmt.Fprintf(&b, "[%s]\n%s\n\n", m.Role, m.Content)
		}
	}
	return b.String()
}

func clipNote(s string, n int) string {
	if len(s) <= n {
		return s
	}
	c := clip(s, n)
	return c + fmt.Sprintf(" [… %d bytes omitted]", len(s)-len(c))
}

// squeeze keeps text within limit bytes by dropping from the middle: the
// beginning sets the goal, the end is the current state.
func squeeze(text string, limit int) string {
	if limit <= 0 || len(text) <= limit {
		return text
	}
	head := clip(text, limit/4)
	tailStart := len(text) - (limit - len(head))
	for tailStart < len(text) && !isRuneStart(text, tailStart) {
		tailStart++
	}
	return head + fmt.Sprintf("\n[… %d bytes omitted …]\n", tailStart-len(head)) + text[tailStart:]
}

func isRuneStart(s string, i int) bool { return s[i]&0xC0 != 0x80 }
