package telegramtest

import (
	"net/url"
	"strings"
	"testing"
)

// answered is every method the fake answers (see serve).
var answered = []string{
	"getMe", "getUpdates", "sendMessage", "editMessageText", "sendChatAction",
	"setMyCommands", "createForumTopic", "deleteWebhook", "sendMessageDraft",
	"getFile",
}

func TestAnsweredMethodsAreInTheBotAPI(t *testing.T) {
	api := Spec(t)
	for _, m := range answered {
		if _, ok := api.Method(m); !ok {
			t.Errorf("the fake answers %s, which %s does not have", m, api.Version)
		}
	}
}

func TestMalformedRequestsRefusedAsTelegramDoes(t *testing.T) {
	Spec(t)
	s := New(t, "1:tok")
	s.ExpectRefusals()
	form := "application/x-www-form-urlencoded"
	cases := []struct {
		name, method, body string
		code               float64
		desc               string
	}{
		{"unknown method", "sendTelepathy", url.Values{"chat_id": {"7"}}.Encode(), 404, "Not Found"},
		{"missing required field", "sendMessage", url.Values{"text": {"hi"}}.Encode(), 400, "Bad Request: chat_id is empty"},
		{"wrong type", "sendMessage", url.Values{"chat_id": {"7"}, "text": {"hi"}, "message_thread_id": {"topic"}}.Encode(), 400, "Bad Request: field message_thread_id: not an Integer"},
		{"wrong type inside JSON", "setMyCommands", url.Values{"commands": {`[{"command":"help"}]`}}.Encode(), 400, "Bad Request: field commands: item 0: BotCommand.description is required"},
		{"undescribed parameter", "sendMessage", url.Values{"chat_id": {"7"}, "text": {"hi"}, "parse_mod": {"HTML"}}.Encode(), 400, `Bad Request: parameter "parse_mod" is not one of sendMessage's`},
	}
	for _, c := range cases {
		r := post(t, s, c.method, form, c.body)
		desc, _ := r["description"].(string)
		if r["ok"] != false || r["error_code"] != c.code || !strings.HasPrefix(desc, c.desc) {
			t.Errorf("%s: got %v, want ok:false error_code:%v description %q…", c.name, r, c.code, c.desc)
		}
	}
	if n := len(s.Refusals()); n != len(cases) {
		t.Errorf("%d refusals recorded, want %d: %v", n, len(cases), s.Refusals())
	}
	if len(s.Sent()) != 0 {
		t.Errorf("a refused request was carried out: %+v", s.Sent())
	}
	// A well-formed request still goes through.
	if r := post(t, s, "sendMessage", form, url.Values{"chat_id": {"7"}, "text": {"hi"}}.Encode()); r["ok"] != true {
		t.Errorf("well-formed sendMessage: %v", r)
	}
}
