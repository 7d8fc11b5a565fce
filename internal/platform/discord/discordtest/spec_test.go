package discordtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"slices"
	"strings"
	"testing"
)

// answered is every REST route the fake answers (see serve), with the
// path the description writes it under and a path to try it on.
var answered = []struct{ route, method, template, path string }{
	{RouteGetGatewayBot, "GET", "/gateway/bot", "/gateway/bot"},
	{RouteGetCurrentUser, "GET", "/users/@me", "/users/@me"},
	{RouteGetChannel, "GET", "/channels/{channel_id}", "/channels/1"},
	{RouteGetMessages, "GET", "/channels/{channel_id}/messages", "/channels/1/messages"},
	{RouteCreateMessage, "POST", "/channels/{channel_id}/messages", "/channels/1/messages"},
	{RouteEditMessage, "PATCH", "/channels/{channel_id}/messages/{message_id}", "/channels/1/messages/2"},
	{RouteTyping, "POST", "/channels/{channel_id}/typing", "/channels/1/typing"},
	{RouteStartThread, "POST", "/channels/{channel_id}/threads", "/channels/1/threads"},
}

func TestAnsweredRoutesAreInTheOpenAPI(t *testing.T) {
	api := Spec(t)
	for _, a := range answered {
		op, ok := api.Operation(a.method, a.template)
		if !ok {
			t.Errorf("the fake answers %s (%s %s), which Discord's description does not have", a.route, a.method, a.template)
			continue
		}
		r, _ := http.NewRequest(a.method, "http://x"+apiBase+a.path, nil)
		if got := routeOf(r); got != a.route {
			t.Errorf("%s %s is named %q by the fake, listed as %q", a.method, a.path, got, a.route)
		}
		t.Logf("%-30s %s %s (%s)", a.route, a.method, a.template, op.ID)
	}
}

func TestMalformedRequestsRefusedAsDiscordDoes(t *testing.T) {
	Spec(t)
	s := New(t, "tok")
	s.ExpectRefusals()
	home := s.Home()
	do := func(method, path, body string) (int, map[string]any) {
		t.Helper()
		req, _ := http.NewRequest(method, s.APIURL()+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bot "+s.Token())
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		return resp.StatusCode, out
	}
	formErr := func(field, code string) string {
		var errs any = map[string]any{"_errors": []any{map[string]any{"code": code}}}
		parts := strings.Split(field, ".")
		slices.Reverse(parts)
		for _, p := range parts {
			errs = map[string]any{p: errs}
		}
		return fmt.Sprint(errs)
	}
	cases := []struct {
		name, method, path, body string
		status                   int
		code                     float64
		errors                   string // the errors' fields and codes, messages left out
	}{
		{"unknown route", "GET", "/channels/" + home + "/telepathy", "", 404, 0, ""},
		{"method the route lacks", "DELETE", "/users/@me", "", 405, 0, ""},
		{"missing required field", "POST", "/channels/" + home + "/threads", `{"type":11}`, 400, 50035, formErr("name", "BASE_TYPE_REQUIRED")},
		{"wrong type", "POST", "/channels/" + home + "/messages", `{"content":5}`, 400, 50035, formErr("content", "BASE_TYPE_BAD_TYPE")},
		{"not a snowflake", "GET", "/channels/general", "", 400, 50035, formErr("channel_id", "BASE_TYPE_INVALID")},
		{"query out of range", "GET", "/channels/" + home + "/messages?after=1&limit=500", "", 400, 50035, formErr("limit", "BASE_TYPE_INVALID")},
		{"undescribed field", "POST", "/channels/" + home + "/messages", `{"content":"hi","contnet":"x"}`, 400, 50035, formErr("contnet", "UNKNOWN_FIELD")},
	}
	for _, c := range cases {
		status, out := do(c.method, c.path, c.body)
		if status != c.status || out["code"] != c.code {
			t.Errorf("%s: %d %v, want %d with code %v", c.name, status, out, c.status, c.code)
			continue
		}
		if c.errors == "" {
			if msg, _ := out["message"].(string); !strings.HasPrefix(msg, fmt.Sprint(c.status)+": ") {
				t.Errorf("%s: message %q", c.name, msg)
			}
			continue
		}
		if out["message"] != "Invalid Form Body" || fmt.Sprint(dropMessages(out["errors"])) != c.errors {
			t.Errorf("%s: %v, want errors %s", c.name, out, c.errors)
		}
	}
	if n := len(s.Refusals()); n != len(cases) {
		t.Errorf("%d refusals recorded, want %d: %v", n, len(cases), s.Refusals())
	}
	if len(s.Posts()) != 0 || len(s.Threads()) != 0 {
		t.Errorf("a refused request was carried out: %+v %+v", s.Posts(), s.Threads())
	}
	if status, out := do("POST", "/channels/"+home+"/messages", `{"content":"hi"}`); status != http.StatusOK {
		t.Errorf("well-formed create: %d %v", status, out)
	}
}

// dropMessages leaves the words out of an Invalid Form Body's errors.
func dropMessages(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, e := range x {
			if k != "message" {
				out[k] = dropMessages(e)
			}
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = dropMessages(e)
		}
		return out
	}
	return v
}

// multipartCreate posts a multipart create made of parts (name, file
// name or "", body) and returns the status and the answer.
func multipartCreate(t *testing.T, s *Server, channel string, parts [][3]string) (int, map[string]any) {
	t.Helper()
	var b bytes.Buffer
	mw := multipart.NewWriter(&b)
	for _, p := range parts {
		var w io.Writer
		var err error
		if p[1] != "" {
			w, err = mw.CreateFormFile(p[0], p[1])
		} else {
			w, err = mw.CreateFormField(p[0])
		}
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.WriteString(w, p[2])
	}
	_ = mw.Close()
	req, _ := http.NewRequest(http.MethodPost, s.APIURL()+"/channels/"+channel+"/messages", &b)
	req.Header.Set("Authorization", "Bot "+s.Token())
	req.Header.Set("Content-Type", mw.FormDataContentType())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

// A multipart create is held against the description part by part: a
// part the form does not have, a payload_json field it does not have or
// of the wrong type are refused as Discord does; a file over 10 MB is
// answered 413. A well-formed one is shown with its file, which the CDN
// serves at the URL the answer gives.
func TestMultipartCreatesAsDiscordTakesThem(t *testing.T) {
	Spec(t)
	s := New(t, "tok")
	s.ExpectRefusals()
	home := s.Home()
	cases := []struct {
		name   string
		parts  [][3]string
		status int
		code   float64
	}{
		{"a part the form lacks", [][3]string{{"payload_json", "", `{"content":"hi"}`}, {"file", "a.txt", "a"}}, 400, 50035},
		{"a payload field it lacks", [][3]string{{"payload_json", "", `{"content":"hi","caption":"x"}`}, {"files[0]", "a.txt", "a"}}, 400, 50035},
		{"attachments of the wrong type", [][3]string{{"payload_json", "", `{"attachments":[{"id":0,"filename":"a.txt"}]}`}, {"files[0]", "a.txt", "a"}}, 400, 50035},
		{"payload_json not JSON", [][3]string{{"payload_json", "", `{content`}, {"files[0]", "a.txt", "a"}}, 400, 50035},
		{"a file over 10 MB", [][3]string{{"payload_json", "", `{}`}, {"files[0]", "big.bin", strings.Repeat("x", MaxUpload+1)}}, 413, 40005},
	}
	for _, c := range cases {
		if status, out := multipartCreate(t, s, home, c.parts); status != c.status || out["code"] != c.code {
			t.Errorf("%s: %d %v, want %d with code %v", c.name, status, out, c.status, c.code)
		}
	}
	if n := len(s.Refusals()); n != len(cases)-1 {
		t.Errorf("%d refusals recorded, want %d: %v", n, len(cases)-1, s.Refusals())
	}
	if len(s.Posts()) != 0 {
		t.Fatalf("a refused create was carried out: %+v", s.Posts())
	}

	status, out := multipartCreate(t, s, home, [][3]string{
		{"payload_json", "", `{"content":"the log","attachments":[{"id":"0","filename":"run.txt"}]}`},
		{"files[0]", "ignored.bin", "line\n"},
	})
	atts, _ := out["attachments"].([]any)
	if status != http.StatusOK || len(atts) != 1 {
		t.Fatalf("well-formed multipart create: %d %v", status, out)
	}
	att := atts[0].(map[string]any)
	if att["filename"] != "run.txt" || att["size"] != float64(5) || !strings.HasPrefix(att["content_type"].(string), "text/plain") {
		t.Errorf("attachment %v", att)
	}
	resp, err := http.Get(att["url"].(string))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || string(body) != "line\n" || s.Downloads() != 1 {
		t.Errorf("the CDN served %d %q (downloads %d)", resp.StatusCode, body, s.Downloads())
	}
	// An unsigned URL is no longer available.
	resp, err = http.Get(strings.Split(att["url"].(string), "?")[0])
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("an unsigned CDN URL: %d", resp.StatusCode)
	}
	if p := s.Shown(); len(p) != 1 || p[0].Content != "the log" || len(p[0].Attachments) != 1 || string(p[0].Attachments[0].Data) != "line\n" {
		t.Errorf("shown %+v", p)
	}
}
