package discordtest

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/coder/websocket"
	"github.com/disgoorg/disgo/gateway"

	"github.com/baton-agent/baton/internal/testutil"
)

// client is a bare gateway client, speaking the protocol by hand.
type client struct {
	t  *testing.T
	ws *websocket.Conn
}

func dial(t *testing.T, s *Server) *client {
	t.Helper()
	ws, _, err := websocket.Dial(testutil.Context(t, 0), s.GatewayURL()+"?v=10&encoding=json", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.CloseNow() })
	c := &client{t: t, ws: ws}
	if f := c.read(); f["op"] != float64(gateway.OpcodeHello) {
		t.Fatalf("first frame %v, want HELLO", f)
	}
	return c
}

func (c *client) send(op gateway.Opcode, d any) {
	c.t.Helper()
	b, _ := json.Marshal(map[string]any{"op": op, "d": d})
	if err := c.ws.Write(testutil.Context(c.t, 0), websocket.MessageText, b); err != nil {
		c.t.Fatal(err)
	}
}

func (c *client) read() map[string]any {
	c.t.Helper()
	_, b, err := c.ws.Read(testutil.Context(c.t, 0))
	if err != nil {
		c.t.Fatalf("read: %v", err)
	}
	var f map[string]any
	if err := json.Unmarshal(b, &f); err != nil {
		c.t.Fatal(err)
	}
	return f
}

// until reads frames until one is the dispatch t.
func (c *client) until(t string) map[string]any {
	c.t.Helper()
	for {
		if f := c.read(); f["t"] == t {
			return f
		}
	}
}

func identify(intents gateway.Intents, token string) map[string]any {
	return map[string]any{"token": token, "intents": intents, "properties": map[string]string{"os": "linux", "browser": "t", "device": "t"}}
}

// Without the Message Content intent, guild messages arrive with their
// content empty unless they mention the bot; DMs keep theirs.
func TestIntentsDecideWhatIsSeen(t *testing.T) {
	s := New(t, "tok")
	c := dial(t, s)
	c.send(gateway.OpcodeIdentify, identify(gateway.IntentGuilds|gateway.IntentGuildMessages|gateway.IntentDirectMessages, "tok"))
	c.until("GUILD_CREATE")
	person := User{ID: "7", Username: "p"}
	if _, err := s.Say(s.Home(), person, "secret words"); err != nil {
		t.Fatal(err)
	}
	if d := c.until("MESSAGE_CREATE")["d"].(map[string]any); d["content"] != "" {
		t.Errorf("content without the intent: %q", d["content"])
	}
	_, _ = s.Say(s.Home(), person, "<@"+s.Bot().ID+"> hi")
	if d := c.until("MESSAGE_CREATE")["d"].(map[string]any); !strings.HasSuffix(d["content"].(string), "hi") {
		t.Errorf("a mention's content: %q", d["content"])
	}
	_, _ = s.Say(s.AddDM(person), person, "in a DM")
	if d := c.until("MESSAGE_CREATE")["d"].(map[string]any); d["content"] != "in a DM" || d["guild_id"] != nil {
		t.Errorf("a DM: %v", d)
	}
}

func TestResumeReplaysAndRefusesUnknownSessions(t *testing.T) {
	s := New(t, "tok")
	c := dial(t, s)
	c.send(gateway.OpcodeIdentify, identify(gateway.IntentsGuild|gateway.IntentGuildMessages|gateway.IntentMessageContent, "tok"))
	ready := c.until("READY")
	sid := ready["d"].(map[string]any)["session_id"].(string)
	seq := int(c.until("GUILD_CREATE")["s"].(float64))
	s.Drop()
	id, _ := s.Say(s.Home(), User{ID: "7", Username: "p"}, "missed")

	c = dial(t, s)
	c.send(gateway.OpcodeResume, map[string]any{"token": "tok", "session_id": sid, "seq": seq})
	m := c.read()
	if m["t"] != "MESSAGE_CREATE" || m["d"].(map[string]any)["id"] != id {
		t.Fatalf("after RESUME: %v, want the missed message", m)
	}
	if f := c.read(); f["t"] != "RESUMED" {
		t.Fatalf("then %v, want RESUMED", f)
	}
	if s.Resumes() != 1 || s.Acked(id) {
		t.Errorf("resumes %d; acknowledged before any heartbeat carried it: %v", s.Resumes(), s.Acked(id))
	}
	c.send(gateway.OpcodeHeartbeat, int(m["s"].(float64)))
	if f := c.read(); f["op"] != float64(gateway.OpcodeHeartbeatACK) || !s.Acked(id) {
		t.Errorf("heartbeat answered %v, acked %v", f, s.Acked(id))
	}

	c = dial(t, s)
	c.send(gateway.OpcodeResume, map[string]any{"token": "tok", "session_id": "nope", "seq": 1})
	if f := c.read(); f["op"] != float64(gateway.OpcodeInvalidSession) || f["d"] != false {
		t.Errorf("an unknown session: %v", f)
	}

	c = dial(t, s)
	c.send(gateway.OpcodeIdentify, identify(gateway.IntentGuilds, "wrong"))
	_, _, err := c.ws.Read(testutil.Context(t, 0))
	if websocket.CloseStatus(err) != 4004 {
		t.Errorf("a wrong token: %v", err)
	}
}

func TestRESTNeedsTheBotToken(t *testing.T) {
	s := New(t, "tok")
	for _, auth := range []string{"", "Bot wrong", "tok"} {
		req, _ := http.NewRequest(http.MethodGet, s.APIURL()+"/gateway/bot", nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(string(b), `"code":0`) {
			t.Errorf("Authorization %q: %d %s", auth, resp.StatusCode, b)
		}
	}
}

// createMessage posts a message as a bot would and returns the status and
// the answer.
func createMessage(t *testing.T, s *Server, channel string, body map[string]any) (int, map[string]any) {
	t.Helper()
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest(http.MethodPost, s.APIURL()+"/channels/"+channel+"/messages", strings.NewReader(string(b)))
	req.Header.Set("Authorization", "Bot "+s.Token())
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

// A create with an enforced nonce the bot used before gives back the
// message that nonce made; without enforce_nonce, or with another nonce,
// a message is made. A nonce over 25 characters is refused.
func TestEnforcedNonceGivesBackTheMessage(t *testing.T) {
	s := New(t, "tok")
	s.ExpectRefusals() // the 26-character nonce below
	home, other := s.Home(), s.AddChannel("other")
	status, first := createMessage(t, s, home, map[string]any{"content": "hello", "nonce": "n1", "enforce_nonce": true})
	if status != http.StatusOK || first["nonce"] != "n1" {
		t.Fatalf("first create: %d %v", status, first)
	}
	// Per author, whatever the channel, and whatever the content.
	for _, c := range []struct{ channel, content string }{{home, "hello"}, {other, "changed"}} {
		status, again := createMessage(t, s, c.channel, map[string]any{"content": c.content, "nonce": "n1", "enforce_nonce": true})
		if status != http.StatusOK || again["id"] != first["id"] || again["content"] != "hello" || again["channel_id"] != home {
			t.Errorf("repeat in %s: %d %v, want the first message %v", c.channel, status, again, first["id"])
		}
	}
	if _, notEnforced := createMessage(t, s, home, map[string]any{"content": "hello", "nonce": "n1"}); notEnforced["id"] == first["id"] {
		t.Error("a nonce not enforced gave back the old message")
	}
	if _, otherNonce := createMessage(t, s, home, map[string]any{"content": "hello", "nonce": 42, "enforce_nonce": true}); otherNonce["id"] == first["id"] || otherNonce["nonce"] != "42" {
		t.Errorf("an integer nonce: %v", otherNonce)
	}
	if status, refused := createMessage(t, s, home, map[string]any{"content": "hello", "nonce": strings.Repeat("n", 26), "enforce_nonce": true}); status != http.StatusBadRequest || refused["code"] != float64(50035) {
		t.Errorf("a 26-character nonce: %d %v", status, refused)
	}
	if shown := s.Shown(); len(shown) != 3 {
		t.Errorf("%d messages shown, want 3: %+v", len(shown), shown)
	}
}
