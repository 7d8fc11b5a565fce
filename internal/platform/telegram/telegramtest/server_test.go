package telegramtest

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/testutil"
)

func post(t *testing.T, s *Server, method, ctype, body string) map[string]any {
	t.Helper()
	resp, err := http.Post(s.URL()+"/bot"+s.Token()+"/"+method, ctype, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestParsesFormAndJSON(t *testing.T) {
	s := New(t, "1:tok")
	s.ExpectRefusals() // noSuchMethod below
	form := url.Values{"chat_id": {"7"}, "text": {"<b>hi</b> &amp; bye"}, "parse_mode": {"HTML"}}
	if r := post(t, s, "sendMessage", "application/x-www-form-urlencoded", form.Encode()); r["ok"] != true {
		t.Fatalf("form: %v", r)
	}
	if r := post(t, s, "sendMessage", "application/json", `{"chat_id":7,"text":"plain","message_thread_id":0}`); r["ok"] != true {
		t.Fatalf("json: %v", r)
	}
	if r := post(t, s, "sendMessage", "application/json", `{"chat_id":7,"text":"<b>open","parse_mode":"HTML"}`); r["ok"] != false || !strings.Contains(r["description"].(string), "can't parse entities") {
		t.Fatalf("bad HTML accepted: %v", r)
	}
	sent := s.Sent()
	if len(sent) != 2 || sent[0].Plain != "hi & bye" || sent[0].ChatID != "7" || sent[1].Text != "plain" {
		t.Fatalf("sent = %+v", sent)
	}
	if r := post(t, s, "noSuchMethod", "application/json", `{}`); r["error_code"] != float64(404) {
		t.Fatalf("unknown method: %v", r)
	}
	resp, err := http.Post(s.URL()+"/botWRONG/getMe", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 401 {
		t.Fatalf("wrong token: status %d", resp.StatusCode)
	}
}

func TestGetUpdatesLongPollsAndHonoursOffset(t *testing.T) {
	s := New(t, "1:tok")
	got := make(chan map[string]any, 1)
	go func() { got <- post(t, s, "getUpdates", "application/json", `{"offset":0,"timeout":30}`) }()
	// The poll (30 s) answers as soon as an update arrives.
	id, _ := s.PushMessage(5, 0, User{ID: 5, FirstName: "A"}, "hi")
	r := <-got
	if res := r["result"].([]any); len(res) != 1 {
		t.Fatalf("result = %v", r)
	}
	// Without an offset past it, the update is handed out again.
	r = post(t, s, "getUpdates", "application/json", `{"offset":0,"timeout":0}`)
	if len(r["result"].([]any)) != 1 || s.Pending() != 1 {
		t.Fatalf("unconfirmed update not redelivered: %v", r)
	}
	form := url.Values{"offset": {strconv.FormatInt(id+1, 10)}, "timeout": {"0"}}
	r = post(t, s, "getUpdates", "application/x-www-form-urlencoded", form.Encode())
	if len(r["result"].([]any)) != 0 || s.Pending() != 0 || s.Confirmed() != id+1 {
		t.Fatalf("confirmed update redelivered: %v (confirmed %d)", r, s.Confirmed())
	}
}

func TestFailuresOnDemand(t *testing.T) {
	s := New(t, "1:tok")
	s.FailNext("sendMessage", 429, 3)
	s.Unsupported("sendChatAction")
	r := post(t, s, "sendMessage", "application/json", `{"chat_id":1,"text":"x"}`)
	if r["error_code"] != float64(429) || r["parameters"].(map[string]any)["retry_after"] != float64(3) {
		t.Fatalf("429 = %v", r)
	}
	if r := post(t, s, "sendMessage", "application/json", `{"chat_id":1,"text":"x"}`); r["ok"] != true {
		t.Fatalf("second call = %v", r)
	}
	if r := post(t, s, "sendChatAction", "application/json", `{"chat_id":1,"action":"typing"}`); r["error_code"] != float64(404) {
		t.Fatalf("unsupported = %v", r)
	}
	s.AddChat(Chat{ID: -100, Type: Supergroup, IsForum: true})
	r = post(t, s, "createForumTopic", "application/json", `{"chat_id":-100,"name":"t"}`)
	if r["ok"] != true || len(s.Topics()) != 1 {
		t.Fatalf("createForumTopic = %v", r)
	}
	if r := post(t, s, "createForumTopic", "application/json", `{"chat_id":-5,"name":"t"}`); r["ok"] != false {
		t.Fatalf("topic in a non-forum = %v", r)
	}
}

func TestDownAnswersLikeAProxyUntilUp(t *testing.T) {
	s := New(t, "1:tok")
	s.Down()
	resp, err := http.Post(s.URL()+"/bot1:tok/getMe", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadGateway || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
		t.Fatalf("down: %d %s, want a 502 HTML page", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	s.Up()
	if r := post(t, s, "getMe", "application/json", `{}`); r["ok"] != true {
		t.Fatalf("up again: %v", r)
	}
	calls := s.Calls()
	if len(calls) != 2 || calls[0].Status != 502 || calls[1].Status != 200 || calls[1].Method != "getMe" {
		t.Fatalf("calls = %+v", calls)
	}
}

func TestWaitConfirmedWakesWithoutPolling(t *testing.T) {
	s := New(t, "1:tok")
	id, _ := s.PushMessage(5, 0, User{ID: 5, FirstName: "A"}, "hi")
	done := make(chan error, 1)
	go func() { done <- s.WaitConfirmed(testutil.Context(t, 0), id+1) }()
	post(t, s, "getUpdates", "application/json", `{"offset":`+strconv.FormatInt(id+1, 10)+`,"timeout":0}`)
	if err := testutil.Receive(t, done, "WaitConfirmed to return"); err != nil {
		t.Fatalf("WaitConfirmed = %v", err)
	}
}

func TestWaitSentAfterReturnsOnlyNewMessages(t *testing.T) {
	s := New(t, "1:t")
	for _, text := range []string{"one", "two", "three"} {
		if r := post(t, s, "sendMessage", "application/json", `{"chat_id":7,"text":"`+text+`"}`); r["ok"] != true {
			t.Fatalf("send %s: %v", text, r)
		}
	}
	got, err := s.WaitSentAfter(t.Context(), 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Text != "two" || got[1].Text != "three" {
		t.Fatalf("after the first: %+v", got)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	if got, err := s.WaitSentAfter(ctx, 3); err == nil {
		t.Fatalf("nothing more was sent, yet it returned %+v", got)
	}
}
