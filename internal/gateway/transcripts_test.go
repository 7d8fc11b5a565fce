package gateway_test

import (
	"encoding/json"
	"errors"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/gateway"
	"github.com/baton-agent/baton/internal/store"
	"github.com/baton-agent/baton/internal/store/sqlite"
	"github.com/baton-agent/baton/internal/transcript"
)

func TestTranscriptLines(t *testing.T) {
	msgs := []store.Message{
		{Role: store.RoleUser, Content: "list files"},
		{Role: store.RoleAssistant, Content: "", ToolCalls: json.RawMessage(`[{"id":"c1","name":"shell","arguments":{"command":"ls \u003e out"}}]`)},
		{Role: store.RoleTool, ToolName: "shell", ToolCallID: "c1", Content: strings.Repeat("é", 3000)},
		{Role: store.RoleAssistant, Content: "Two files."},
		{Role: store.RoleUser, Kind: store.KindHandoff, Content: gateway.HandoffLead + " This conversation was just handed off from the terminal to the web chat. Greet them."},
		{Role: store.RoleUser, Kind: store.KindSummary, Content: "Summary: two files."},
		{Role: store.RoleUser, Content: gateway.HandoffLead + " typed by the person, not a handoff"},
	}
	lines := gateway.TranscriptLines(msgs)
	if len(lines) != 7 {
		t.Fatalf("lines %+v", lines)
	}
	if lines[1].Role != "tool" || lines[1].Text != `→ shell {"command":"ls > out"}` {
		t.Errorf("tool call line %+v", lines[1])
	}
	if c, r := lines[1], lines[2]; c.Call != "call" || c.Detail != `{"command":"ls > out"}` || c.CallID != "c1" ||
		r.Call != "result" || !strings.HasPrefix(r.Detail, "é") || r.CallID != "c1" {
		t.Errorf("tool lines not told apart for a page: %+v / %.40q %s %s", c, r.Detail, r.Call, r.CallID)
	}
	if !strings.HasPrefix(lines[2].Text, "← shell: é") || !strings.HasSuffix(lines[2].Text, " …") || len(lines[2].Text) > transcript.ResultShown+40 {
		t.Errorf("tool result line not cut: %d bytes", len(lines[2].Text))
	}
	if !strings.Contains(lines[2].Text, "é") || strings.ContainsRune(lines[2].Text, '\uFFFD') {
		t.Errorf("tool result cut inside a character")
	}
	if lines[3].Role != "assistant" || lines[4].Role != "note" {
		t.Errorf("roles %s %s", lines[3].Role, lines[4].Role)
	}
	if lines[4].Text != "↪ This conversation was just handed off from the terminal to the web chat" {
		t.Errorf("handoff note %q", lines[4].Text)
	}
	if lines[5].Role != "note" || lines[5].Text != "Summary: two files." {
		t.Errorf("summary line %+v", lines[5])
	}
	// Only the kind makes a note: the same words typed by a person are theirs.
	if lines[6].Role != "user" {
		t.Errorf("typed lead shown as %+v", lines[6])
	}
}

// A page's history carries each line's files, and reads a file only from
// its own conversation's transcript.
func TestTranscriptFilesStayInTheirConversation(t *testing.T) {
	ctx := t.Context()
	st, owner := ownedStore(t)
	mine := map[string]store.Attachment{}
	for _, key := range []string{"web:dm:a", "web:dm:b"} {
		s, err := st.CreateSession(ctx, store.Session{OwnerID: owner.ID})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.Bind(ctx, key, s.ID); err != nil {
			t.Fatal(err)
		}
		att, err := st.PutFile(ctx, strings.NewReader("notes of "+key), "notes.txt")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.AppendMessages(ctx, s.ID, store.Message{Role: store.RoleUser, Content: "see this", Attachments: []store.Attachment{att}}); err != nil {
			t.Fatal(err)
		}
		mine[key] = att
	}
	tr := gateway.Transcripts{Store: st, OwnerID: owner.ID}
	lines, err := tr.View(ctx, "web:dm:a")
	if err != nil {
		t.Fatal(err)
	}
	if len(lines) != 1 || len(lines[0].Files) != 1 || lines[0].Files[0].Ref != mine["web:dm:a"].SHA256 || lines[0].Files[0].Name != "notes.txt" {
		t.Fatalf("lines %+v", lines)
	}
	f, err := tr.OpenFile(ctx, "web:dm:a", mine["web:dm:a"].SHA256)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := f.Open(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(rc)
	rc.Close()
	if string(got) != "notes of web:dm:a" {
		t.Errorf("read %q", got)
	}
	if _, err := tr.OpenFile(ctx, "web:dm:a", mine["web:dm:b"].SHA256); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a file of another conversation: %v, want not found", err)
	}
}

// A page reading its history while its conversation is on its way to it
// (the greeting is shown before the move completes) is not told the
// conversation is elsewhere; once the move has failed, it is.
func TestHistoryOfAConversationOnItsWayHere(t *testing.T) {
	ctx := t.Context()
	st, owner := ownedStore(t)
	s, err := st.CreateSession(ctx, store.Session{OwnerID: owner.ID, Platform: "cli", Holder: "cli:dm:" + owner.ID})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.AppendMessages(ctx, s.ID, store.Message{Role: store.RoleUser, Content: "hello"}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Bind(ctx, "web:dm:main", s.ID); err != nil {
		t.Fatal(err)
	}
	tr := gateway.Transcripts{Store: st, OwnerID: owner.ID}
	elsewhere := func() bool {
		lines, err := tr.View(ctx, "web:dm:main")
		if err != nil {
			t.Fatal(err)
		}
		return strings.Contains(lines[len(lines)-1].Text, "This conversation is in the terminal now")
	}
	if !elsewhere() {
		t.Fatal("a page of a conversation held in the terminal is not told so")
	}
	h, err := st.RequestHandoffTo(ctx, s.ID, "cli", "web", "web:dm:main")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, err := st.ClaimHandoff(ctx, h.ID, "gw", time.Minute); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if elsewhere() {
		t.Error("a page told its conversation is in the terminal while it is on its way here")
	}
	if ok, err := st.FailHandoff(ctx, h.ID, "gw", "the page went away"); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if !elsewhere() {
		t.Error("after the move failed, the page is not told where the conversation is")
	}
}

// ownedStore is a new SQLite store with its owner.
func ownedStore(t *testing.T) (*sqlite.Store, store.User) {
	t.Helper()
	st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), sqlite.FileName))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	owner, err := st.CreateUser(t.Context(), "owner")
	if err != nil {
		t.Fatal(err)
	}
	return st, owner
}
