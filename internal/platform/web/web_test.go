package web

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/baton-agent/baton/internal/platform"
	"github.com/baton-agent/baton/internal/store"
)

type staticBackend struct{ lines []Line }

func (b staticBackend) Conversations(context.Context) ([]Conversation, error) {
	return []Conversation{{Key: Home.Key(), Title: "Home"}}, nil
}
func (b staticBackend) History(context.Context, string) ([]Line, error) { return b.lines, nil }

const testToken = "abcdefabcdefabcdefabcdef"

func start(t *testing.T, h platform.Handler) (*Adapter, *websocket.Conn) {
	t.Helper()
	a, err := New(Config{Listen: "127.0.0.1:0", Token: testToken, Backend: staticBackend{}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx, h) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	hdr := http.Header{}
	hdr.Set("Authorization", "Bearer "+testToken)
	var conn *websocket.Conn
	for i := 0; ; i++ {
		dctx, dcancel := context.WithTimeout(context.Background(), 5*time.Second)
		conn, _, err = websocket.Dial(dctx, "ws://"+a.Addr().String()+"/ws", &websocket.DialOptions{HTTPHeader: hdr})
		dcancel()
		if err == nil {
			break
		}
		if i > 50 {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Cleanup(func() { conn.Close(websocket.StatusNormalClosure, "") })
	return a, conn
}

func roundTrip(t *testing.T, conn *websocket.Conn, out string) frame {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := conn.Write(ctx, websocket.MessageText, []byte(out)); err != nil {
		t.Fatal(err)
	}
	_, b, err := conn.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var f frame
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	return f
}

func TestBadFramesGetClearErrors(t *testing.T) {
	var got []platform.Event
	_, conn := start(t, func(_ context.Context, ev platform.Event) error {
		got = append(got, ev)
		if ev.Text == "fail" {
			return errors.New("disk full")
		}
		return nil
	})
	cases := []struct{ in, want string }{
		{`{not json`, "not a JSON frame"},
		{`{"type":"dance"}`, "unknown frame type"},
		{`{"type":"say","key":"telegram:dm:1","text":"x","id":"1"}`, "not a web conversation"},
		{`{"type":"say","key":"web:dm:main","text":"  ","id":"1"}`, "needs text and an id"},
		{`{"type":"open","key":"nonsense"}`, "not a web conversation"},
		{`{"type":"say","key":"web:dm:main","text":"fail","id":"2"}`, "not stored, please send again: disk full"},
	}
	for _, c := range cases {
		f := roundTrip(t, conn, c.in)
		if f.Type != "error" || !strings.Contains(f.Error, c.want) {
			t.Errorf("%s → %+v, want error containing %q", c.in, f, c.want)
		}
	}
	f := roundTrip(t, conn, `{"type":"say","key":"web:dm:main","text":"hello","id":"3"}`)
	if f.Type != "ack" || f.ID != "3" {
		t.Fatalf("say → %+v", f)
	}
	if len(got) != 2 || got[1].Text != "hello" || got[1].SenderID != Owner || got[1].At != Home || got[1].ID != "3" {
		t.Fatalf("events %+v", got)
	}
}

func TestOversizedFrameClosesOnlyThatPage(t *testing.T) {
	a, conn := start(t, func(context.Context, platform.Event) error { return nil })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	big := `{"type":"say","key":"web:dm:main","id":"1","text":"` + strings.Repeat("x", maxFrame+10) + `"}`
	_ = conn.Write(ctx, websocket.MessageText, []byte(big))
	if _, _, err := conn.Read(ctx); err == nil {
		t.Fatal("an oversized frame was accepted")
	}
	// The adapter still serves others.
	_, conn2 := start(t, func(context.Context, platform.Event) error { return nil })
	if f := roundTrip(t, conn2, `{"type":"list"}`); f.Type != "conversations" {
		t.Fatalf("list after an oversized frame elsewhere: %+v", f)
	}
	_ = a
}

func TestLines(t *testing.T) {
	msgs := []store.Message{
		{Role: store.RoleUser, Content: "list files"},
		{Role: store.RoleAssistant, Content: "", ToolCalls: json.RawMessage(`[{"id":"c1","name":"shell","arguments":{"command":"ls \u003e out"}}]`)},
		{Role: store.RoleTool, ToolName: "shell", ToolCallID: "c1", Content: strings.Repeat("é", 3000)},
		{Role: store.RoleAssistant, Content: "Two files."},
		{Role: store.RoleUser, Kind: store.KindHandoff, Content: "[baton handoff] Handed off from the terminal to the web chat. Greet them."},
		{Role: store.RoleUser, Kind: store.KindSummary, Content: "Summary: two files."},
	}
	lines := Lines(msgs)
	if len(lines) != 6 {
		t.Fatalf("lines %+v", lines)
	}
	if lines[0].Role != "user" || lines[0].Text != "list files" {
		t.Errorf("user line %+v", lines[0])
	}
	if lines[1].Role != "tool" || lines[1].Tool != "shell" || lines[1].Text != `→ shell {"command":"ls > out"}` {
		t.Errorf("tool call line %+v", lines[1])
	}
	if lines[2].Role != "tool" || !strings.HasPrefix(lines[2].Text, "← shell: é") || !strings.HasSuffix(lines[2].Text, " …") || len(lines[2].Text) > 2040 {
		t.Errorf("tool result line not cut: %d bytes", len(lines[2].Text))
	}
	if strings.ContainsRune(lines[2].Text, '\uFFFD') {
		t.Errorf("tool result cut inside a character")
	}
	if lines[3].Role != "assistant" {
		t.Errorf("answer line %+v", lines[3])
	}
	if lines[4].Role != "note" || lines[4].Text != "↪ Handed off from the terminal to the web chat" {
		t.Errorf("handoff line %+v", lines[4])
	}
	if lines[5].Role != "note" || lines[5].Text != "Summary: two files." {
		t.Errorf("summary line %+v", lines[5])
	}
}

func TestLoadTokenIsPrivateAndStable(t *testing.T) {
	home := t.TempDir()
	a, err := LoadToken(home)
	if err != nil || len(a) < 32 {
		t.Fatalf("token %q %v", a, err)
	}
	b, _ := LoadToken(home)
	if a != b {
		t.Fatal("token changed between starts")
	}
	fi, err := os.Stat(home + "/" + TokenFile)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("token file mode %v %v", fi, err)
	}
}
