package cli

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/agent"
	"github.com/baton-agent/baton/internal/store"
)

// A replayed transcript: the person's lines after the prompt mark, answers
// as text, each tool call as one line with how it ended, and baton's own
// messages (a summary, a handoff, a notice) as one-line notes, told apart by their
// kind rather than their wording.
func TestPrintTranscript(t *testing.T) {
	calls := json.RawMessage(`[{"id":"c1","name":"shell","arguments":{"command":"ls \u003e out"}},` +
		`{"id":"c2","name":"write_file","arguments":{"path":"notes.md"}},{"id":"c3","name":"shell","arguments":"not json"}]`)
	msgs := []store.Message{
		{Role: store.RoleUser, Kind: store.KindSummary, Content: agent.SummaryLead + "They wanted a list."},
		{Role: store.RoleUser, Content: "list the files"},
		{Role: store.RoleAssistant, Content: "Sure.", ToolCalls: calls},
		{Role: store.RoleTool, ToolCallID: "c1", ToolName: "shell", Content: "a\nb"},
		{Role: store.RoleTool, ToolCallID: "c2", ToolName: "write_file", Content: agent.DeniedResult},
		{Role: store.RoleTool, ToolCallID: "c3", ToolName: "shell", Content: agent.CancelledResult},
		{Role: store.RoleAssistant, Content: "Two files."},
		{Role: store.RoleUser, Kind: store.KindHandoff, Content: "[baton handoff] This conversation was just handed off from the web chat to the terminal. " +
			"The person will read your next message there."},
		{Role: store.RoleAssistant, Kind: store.KindNotice, Content: "This chat now continues session 1234abcd.\n"},
		{Role: store.RoleAssistant, Content: "Welcome back."},
		{Role: store.RoleUser, Content: "[baton handoff] is what I typed"},
		{Role: store.RoleUser, Content: "run this:\n    echo hello\nplease"},
	}
	var b syncBuffer
	r := newRenderer(&b, false, nil)
	printTranscript(r, msgs, 0)
	r.Close()
	want := strings.Join([]string{
		"(earlier turns, summarized)",
		prompt + "list the files",
		"Sure.",
		"  ✓ shell: ls > out",
		"    a",
		"    b",
		"  ✗ write_file: notes.md — denied",
		"  ⏹ shell — cancelled",
		"Two files.",
		"↪ This conversation was just handed off from the web chat to the terminal",
		"(This chat now continues session 1234abcd.)",
		"Welcome back.",
		prompt + "[baton handoff] is what I typed",
		// Lines after the first stay under it, their own indent kept.
		prompt + "run this:",
		"      echo hello",
		"  please",
	}, "\n") + "\n"
	if got := b.String(); got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}

	// With a limit, only the last messages, after a line saying so.
	var last syncBuffer
	r = newRenderer(&last, false, nil)
	printTranscript(r, msgs[:len(msgs)-1], 2)
	r.Close()
	if got, want := last.String(), "… 9 earlier messages (`baton sessions show` prints them all)\nWelcome back.\n"+prompt+"[baton handoff] is what I typed\n"; got != want {
		t.Fatalf("with a limit: got %q, want %q", got, want)
	}
}

// A voice note replays as what it said, with its length, and where its
// audio is kept.
func TestPrintTranscriptVoiceNote(t *testing.T) {
	note := store.Attachment{MediaType: "audio/ogg", Size: 5120, SHA256: strings.Repeat("ab", 32), Voice: true,
		Duration: 7 * time.Second, Transcript: "remind me to buy milk"}
	var b syncBuffer
	r := newRenderer(&b, false, nil)
	r.keptAt = func(store.Attachment) string { return "/home/me/.baton/sessions/s1/abababab-audio.ogg" }
	printTranscript(r, []store.Message{{Role: store.RoleUser, Attachments: []store.Attachment{note}}, {Role: store.RoleAssistant, Content: "Noted."}}, 0)
	r.Close()
	for _, want := range []string{"🎙 voice note (0:07): remind me to buy milk", "📎 audio-abababab (audio/ogg, 5 kB), kept at /home/me/.baton/sessions/s1/abababab-audio.ogg"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("replay lacks %q:\n%s", want, b.String())
		}
	}
}
