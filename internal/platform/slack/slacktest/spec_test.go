package slacktest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/baton-agent/baton/internal/platform/fakekit/apispec"
)

// answered is every Web API method the fake answers (see serve).
var answered = []string{
	"auth.test", "apps.connections.open", "chat.postMessage", "chat.update",
	"conversations.history", "conversations.replies", "assistant.threads.setStatus",
	"files.getUploadURLExternal", "files.completeUploadExternal", "files.info",
}

func TestAnsweredMethodsAreInTheWebAPI(t *testing.T) {
	api := Spec(t)
	for _, name := range answered {
		m, ok := api.Method(name)
		switch {
		case !ok:
			t.Errorf("the fake answers %s, which Slack's Web API does not have", name)
		case m.BeyondSpec != "":
			t.Logf("%-28s not in the description: %s (%s)", name, m.BeyondSpec, m.Doc)
		default:
			t.Logf("%-28s %s", name, m.Doc)
		}
	}
}

func TestMalformedRequestsRefusedAsSlackDoes(t *testing.T) {
	Spec(t)
	s := New(t, "xoxb-1", "xapp-1")
	s.ExpectRefusals()
	call := func(method string, form url.Values) map[string]any {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, s.APIURL()+method, strings.NewReader(form.Encode()))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Authorization", "Bearer xoxb-1")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("%s: HTTP %d; Slack answers refusals with 200", method, resp.StatusCode)
		}
		var out map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
			t.Fatal(err)
		}
		return out
	}
	cases := []struct {
		name, method string
		form         url.Values
		error, msg   string
	}{
		{"unknown method", "chat.telepathy", url.Values{"channel": {"C1"}}, "unknown_method", ""},
		{"missing required field", "chat.postMessage", url.Values{"text": {"hi"}}, "invalid_arguments", "[ERROR] missing required field: channel"},
		{"wrong type", "conversations.history", url.Values{"channel": {"C1"}, "limit": {"ten"}}, "invalid_arguments", "[ERROR] invalid type for field: limit (want integer)"},
		{"undescribed field", "chat.postMessage", url.Values{"channel": {"C1"}, "text": {"hi"}, "thread": {"1.2"}}, "invalid_arguments", "[ERROR] unknown field: thread (not a parameter of chat.postMessage)"},
	}
	for _, c := range cases {
		r := call(c.method, c.form)
		msgs := fmt.Sprint(r["response_metadata"])
		if r["ok"] != false || r["error"] != c.error || (c.msg != "" && msgs != fmt.Sprint(map[string]any{"messages": []any{c.msg}})) {
			t.Errorf("%s: got %v, want ok:false error:%s messages [%s]", c.name, r, c.error, c.msg)
		}
	}
	if n := len(s.Refusals()); n != len(cases) {
		t.Errorf("%d refusals recorded, want %d: %v", n, len(cases), s.Refusals())
	}
	if len(s.Posts()) != 0 {
		t.Errorf("a refused request was carried out: %+v", s.Posts())
	}
	if r := call("chat.postMessage", url.Values{"channel": {"C1"}, "text": {"hi"}}); r["ok"] != true {
		t.Errorf("well-formed chat.postMessage: %v", r)
	}
}

// The events the fake delivers are wrapped as Slack's Events API
// describes its wrapper (slack-event-wrapper-schema.json).
func TestEventsAreWrappedAsTheEventsAPIDescribes(t *testing.T) {
	data, err := os.ReadFile(apispec.Require(t, apispec.SlackWrapper))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := apispec.NewDoc(data)
	if err != nil {
		t.Fatal(err)
	}
	s := New(t, "xoxb-1", "xapp-1")
	root, _ := s.PushMessage(Message{Channel: "C1", User: "U1", Text: "hi", Mention: true})
	s.PushMessage(Message{Channel: "C1", User: "U1", Text: "in a thread", ThreadTS: root})
	s.PushFile(Message{Channel: "C1", User: "U1"}, File{Name: "a.pdf", Mimetype: "application/pdf", Data: []byte("%PDF")})
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.envelopes) != 4 {
		t.Fatalf("%d envelopes, want 4", len(s.envelopes))
	}
	for _, e := range s.envelopes {
		raw, err := json.Marshal(e.payload)
		if err != nil {
			t.Fatal(err)
		}
		v, err := apispec.Decode(raw)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range doc.Validate(doc.Root(), v) {
			t.Errorf("envelope %s: %s", e.id, p)
		}
	}
}
