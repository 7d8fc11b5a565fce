package slacktest

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/coder/websocket"

	"github.com/baton-agent/baton/internal/testutil"
)

// open asks apps.connections.open for a URL and dials it as Slack's
// clients do, Origin included.
func open(t *testing.T, s *Server, appToken string) (*websocket.Conn, string) {
	t.Helper()
	resp, err := http.PostForm(s.APIURL()+"apps.connections.open", url.Values{"token": {appToken}})
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var ans struct {
		OK    bool   `json:"ok"`
		Error string `json:"error"`
		URL   string `json:"url"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&ans); err != nil {
		t.Fatal(err)
	}
	if !ans.OK {
		return nil, ans.Error
	}
	h := http.Header{}
	h.Set("Origin", "https://api.slack.com")
	conn, _, err := websocket.Dial(testutil.Context(t, 0), ans.URL, &websocket.DialOptions{HTTPHeader: h})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.CloseNow() })
	return conn, ""
}

func read(t *testing.T, conn *websocket.Conn) map[string]any {
	t.Helper()
	_, b, err := conn.Read(testutil.Context(t, 0))
	if err != nil {
		t.Fatal(err)
	}
	var f map[string]any
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	return f
}

func TestEnvelopesKeptUntilAcknowledged(t *testing.T) {
	s := New(t, "xoxb-1", "xapp-1")
	if _, code := open(t, s, "xapp-wrong"); code != "invalid_auth" {
		t.Fatalf("a wrong app token: %q", code)
	}
	if _, code := open(t, s, "xoxb-1"); code != "not_allowed_token_type" {
		t.Fatalf("a bot token for Socket Mode: %q", code)
	}
	_, env := s.PushMessage(Message{Channel: "C1", User: "U1", Text: "hi"})

	conn, _ := open(t, s, "xapp-1")
	if f := read(t, conn); f["type"] != "hello" {
		t.Fatalf("first frame %v", f)
	}
	f := read(t, conn)
	if f["envelope_id"] != env || f["type"] != "events_api" || f["retry_attempt"] != 0.0 {
		t.Fatalf("envelope %v", f)
	}
	event := f["payload"].(map[string]any)["event"].(map[string]any)
	if event["text"] != "hi" || event["channel_type"] != "channel" || event["user"] != "U1" {
		t.Fatalf("event %v", event)
	}
	conn.CloseNow() // gone without acknowledging

	conn2, _ := open(t, s, "xapp-1")
	read(t, conn2) // hello
	if f := read(t, conn2); f["envelope_id"] != env || f["retry_attempt"] != 1.0 || f["retry_reason"] != "timeout" {
		t.Fatalf("redelivery %v", f)
	}
	if err := conn2.Write(testutil.Context(t, 0), websocket.MessageText, []byte(`{"envelope_id":"`+env+`"}`)); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, testutil.Patience, func() bool { return s.Acked(env) }, "the acknowledgement")

	s.Disconnect("refresh_requested")
	if f := read(t, conn2); f["type"] != "disconnect" || f["reason"] != "refresh_requested" {
		t.Fatalf("disconnect frame %v", f)
	}
	if s.Deliveries(env) != 2 || !strings.HasPrefix(env, "env-") {
		t.Errorf("deliveries %d of %s", s.Deliveries(env), env)
	}
}

func TestOriginOtherThanSlackRefused(t *testing.T) {
	s := New(t, "xoxb-1", "xapp-1")
	h := http.Header{}
	h.Set("Origin", "https://evil.example")
	_, resp, err := websocket.Dial(context.Background(), "ws"+strings.TrimPrefix(s.URL(), "http")+"/link", &websocket.DialOptions{HTTPHeader: h})
	if resp != nil && resp.Body != nil {
		resp.Body.Close()
	}
	if err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
		t.Fatalf("a foreign origin: %v (%v)", err, resp)
	}
}
