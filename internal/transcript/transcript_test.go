package transcript_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/baton-agent/baton/internal/store"
	"github.com/baton-agent/baton/internal/transcript"
)

func TestViewShowsEachKindOfMessage(t *testing.T) {
	at := time.Date(2026, 5, 1, 9, 40, 0, 0, time.UTC)
	msgs := []store.Message{
		{Role: store.RoleUser, Kind: store.KindSummary, Content: "[Summary of the earlier conversation]\n\nThey want the 9:40 train."},
		{Role: store.RoleUser, Content: "list files", CreatedAt: at},
		{Role: store.RoleAssistant, Content: "Looking.", ToolCalls: json.RawMessage(
			`[{"id":"c1","name":"shell","arguments":{"command":"ls -l","cwd":"/tmp"}},{"id":"c2","name":"read_file","arguments":{"path":"a"}}]`)},
		{Role: store.RoleTool, ToolName: "shell", ToolCallID: "c1", Content: "a\nb"},
		{Role: store.RoleTool, ToolName: "read_file", ToolCallID: "c2", Content: ""},
		{Role: store.RoleAssistant, Content: "Two files."},
		{Role: store.RoleUser, Kind: store.KindHandoff, Content: "[baton handoff] This conversation was just handed off from the terminal to the web chat. " +
			"The person will read your next message there. Greet them."},
		{Role: store.RoleAssistant, Kind: store.KindNotice, Content: "This chat now continues session 1234abcd."},
		{Role: store.RoleSystem, Content: "You are baton."},
		{Role: store.RoleAssistant, Content: "  \n"},
		{Role: store.RoleUser, Content: "[baton handoff] typed by the person"},
	}
	want := []transcript.Line{
		{Role: transcript.Note, Kind: store.KindSummary, Text: "[Summary of the earlier conversation]\n\nThey want the 9:40 train."},
		{Role: transcript.User, Text: "list files", Time: at},
		{Role: transcript.Assistant, Text: "Looking."},
		{Role: transcript.ToolCall, Tool: "shell", Args: `{"command":"ls -l","cwd":"/tmp"}`, CallID: "c1"},
		{Role: transcript.ToolCall, Tool: "read_file", Args: `{"path":"a"}`, CallID: "c2"},
		{Role: transcript.ToolResult, Tool: "shell", Text: "a\nb", CallID: "c1"},
		{Role: transcript.ToolResult, Tool: "read_file", CallID: "c2"},
		{Role: transcript.Assistant, Text: "Two files."},
		{Role: transcript.Note, Kind: store.KindHandoff, Text: "This conversation was just handed off from the terminal to the web chat"},
		{Role: transcript.Note, Kind: store.KindNotice, Text: "This chat now continues session 1234abcd."},
		// The kind, not the wording, makes a note: these are the person's words.
		{Role: transcript.User, Text: "[baton handoff] typed by the person"},
	}
	got := transcript.View(msgs)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("View:\n got %+v\nwant %+v", got, want)
	}
}

// A kind this baton does not know (written by a newer one) is still
// baton's own words: a note, never something the person said.
func TestViewShowsUnknownKindsAsNotes(t *testing.T) {
	got := transcript.View([]store.Message{{Role: store.RoleUser, Kind: "reminder", Content: "stand-up at 10"}})
	if len(got) != 1 || got[0].Role != transcript.Note || got[0].Text != "stand-up at 10" || got[0].Kind != "reminder" {
		t.Fatalf("View: %+v", got)
	}
}

func TestViewHandoffWithoutLeadOrSecondSentence(t *testing.T) {
	for content, want := range map[string]string{
		"Handed off from Telegram to the terminal.":                       "Handed off from Telegram to the terminal",
		"  [baton handoff]   Handed off from the web chat to Telegram. x": "Handed off from the web chat to Telegram",
		"[unclosed lead": "[unclosed lead",
	} {
		got := transcript.View([]store.Message{{Role: store.RoleUser, Kind: store.KindHandoff, Content: content}})
		if len(got) != 1 || got[0].Text != want {
			t.Errorf("%q: %+v, want text %q", content, got, want)
		}
	}
}

func TestViewToolCallArguments(t *testing.T) {
	for name, c := range map[string]struct{ args, want string }{
		"as typed, no HTML escapes": {`{"command": "a \u003e b \u0026\u0026 echo \u003cok\u003E", "n": 1.50}`,
			`{"command":"a > b && echo <ok>","n":1.50}`},
		"key order kept":                     {`{"z":1,"a":2}`, `{"z":1,"a":2}`},
		"escaped backslash is not an escape": {`{"p":"C:\\u003cdir"}`, `{"p":"C:\\u003cdir"}`},
		"other escapes kept":                 {`{"q":"say \"hi\"\n\u00e9"}`, `{"q":"say \"hi\"\n\u00e9"}`},
		"not JSON, kept as text":             {`"{\"path\": unquoted}"`, `{"path": unquoted}`},
		"none":                               {`null`, `{}`},
	} {
		calls, _ := json.Marshal([]map[string]json.RawMessage{{"id": json.RawMessage(`"c1"`), "name": json.RawMessage(`"shell"`),
			"arguments": json.RawMessage(c.args)}})
		got := transcript.View([]store.Message{{Role: store.RoleAssistant, ToolCalls: calls}})
		if len(got) != 1 || got[0].Role != transcript.ToolCall || got[0].Args != c.want {
			t.Errorf("%s: %+v, want args %s", name, got, c.want)
		}
	}
	// Calls that do not decode are left out rather than failing the view.
	got := transcript.View([]store.Message{{Role: store.RoleAssistant, Content: "hm", ToolCalls: json.RawMessage(`{"not":"a list"}`)}})
	if len(got) != 1 || got[0].Role != transcript.Assistant {
		t.Errorf("undecodable calls: %+v", got)
	}
}

func TestViewCapsToolResults(t *testing.T) {
	long := strings.Repeat("é", transcript.ResultShown) // two bytes each: the cap falls on a character start or inside one
	for _, content := range []string{long, "x" + long} {
		got := transcript.View([]store.Message{{Role: store.RoleTool, ToolName: "read_file", Content: content}})
		text := got[0].Text
		body, ok := strings.CutSuffix(text, transcript.CutMark)
		if !ok || len(body) > transcript.ResultShown || len(body) < transcript.ResultShown-1 || !utf8.ValidString(body) {
			t.Errorf("cut to %d bytes, valid %v, marked %v", len(body), utf8.ValidString(body), ok)
		}
	}
	exact := strings.Repeat("a", transcript.ResultShown)
	if got := transcript.View([]store.Message{{Role: store.RoleTool, Content: exact}}); got[0].Text != exact {
		t.Errorf("a result of exactly the cap was cut")
	}
	// Bytes that are not UTF-8 at all are cut where the cap falls.
	junk := strings.Repeat("\x80", transcript.ResultShown+10)
	if got := transcript.View([]store.Message{{Role: store.RoleTool, Content: junk}}); got[0].Text != junk[:transcript.ResultShown]+transcript.CutMark {
		t.Errorf("junk cut to %d bytes", len(got[0].Text))
	}
}

func TestViewOfNothing(t *testing.T) {
	if got := transcript.View(nil); got == nil || len(got) != 0 {
		t.Fatalf("View(nil) = %#v, want an empty list", got)
	}
}
