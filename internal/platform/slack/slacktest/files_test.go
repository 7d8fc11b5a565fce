package slacktest

import (
	"bytes"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// webCall makes a Web API call with the bot token and returns Slack's
// answer.
func webCall(t *testing.T, s *Server, method string, form url.Values) map[string]any {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, s.APIURL()+method, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Authorization", "Bearer xoxb-1")
	resp, err := http.DefaultClient.Do(req)
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

// upload posts data to an upload URL as a multipart form's "file" part.
func upload(t *testing.T, to string, data string) (int, string) {
	t.Helper()
	var b bytes.Buffer
	mw := multipart.NewWriter(&b)
	w, _ := mw.CreateFormFile("file", "x")
	_, _ = io.WriteString(w, data)
	_ = mw.Close()
	resp, err := http.Post(to, mw.FormDataContentType(), &b)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// The external upload flow as Slack runs it: an upload URL for a name
// and length, the bytes (exactly that length) to it, then the file
// completed into a channel's thread, where people see it with its
// comment and files.info tells where it is shared. A file completed
// before its bytes came, or completed twice, is not found; parameters
// the methods lack, or of the wrong type, are refused.
func TestExternalUploadFlow(t *testing.T) {
	s := New(t, "xoxb-1", "xapp-1")
	s.ExpectRefusals()
	for _, form := range []url.Values{
		{"filename": {"a.txt"}},                                     // no length
		{"filename": {"a.txt"}, "length": {"four"}},                 // not an integer
		{"filename": {"a.txt"}, "length": {"4"}, "channel": {"C1"}}, // not a parameter
	} {
		if r := webCall(t, s, "files.getUploadURLExternal", form); r["ok"] != false || r["error"] != "invalid_arguments" {
			t.Errorf("files.getUploadURLExternal %v: %v", form, r)
		}
	}
	if r := webCall(t, s, "files.completeUploadExternal", url.Values{"channel_id": {"C1"}}); r["error"] != "invalid_arguments" {
		t.Errorf("files.completeUploadExternal without files: %v", r)
	}
	if n := len(s.Refusals()); n != 4 {
		t.Errorf("%d refusals, want 4: %v", n, s.Refusals())
	}

	r := webCall(t, s, "files.getUploadURLExternal", url.Values{"filename": {"notes.txt"}, "length": {"4"}})
	id, _ := r["file_id"].(string)
	to, _ := r["upload_url"].(string)
	if r["ok"] != true || id == "" || to == "" {
		t.Fatalf("files.getUploadURLExternal: %v", r)
	}
	files := `[{"id":"` + id + `","title":"Notes"}]`
	complete := url.Values{"files": {files}, "channel_id": {"C1"}, "thread_ts": {"1700000000.000100"}, "initial_comment": {"read *this*"}}
	if r := webCall(t, s, "files.completeUploadExternal", complete); r["error"] != "file_not_found" {
		t.Errorf("completed before its bytes came: %v", r)
	}
	if r := webCall(t, s, "files.info", url.Values{"file": {id}}); r["error"] != "file_not_found" {
		t.Errorf("files.info before completion: %v", r)
	}
	if status, body := upload(t, to, "three"); status != http.StatusBadRequest {
		t.Errorf("bytes of another length: %d %s", status, body)
	}
	if status, body := upload(t, to, "four"); status != http.StatusOK || body != "OK - 4" {
		t.Errorf("the bytes: %d %s", status, body)
	}
	if r := webCall(t, s, "files.completeUploadExternal", complete); r["ok"] != true {
		t.Fatalf("files.completeUploadExternal: %v", r)
	}
	if r := webCall(t, s, "files.completeUploadExternal", complete); r["error"] != "file_not_found" {
		t.Errorf("completed twice: %v", r)
	}
	shared := s.Shares()
	if len(shared) != 1 || shared[0].Channel != "C1" || shared[0].ThreadTS != "1700000000.000100" || string(shared[0].Data) != "four" ||
		shared[0].Comment != "read *this*" || shared[0].Title != "Notes" || shared[0].Name != "notes.txt" || shared[0].IsImage() {
		t.Fatalf("shared %+v", shared)
	}
	r = webCall(t, s, "files.info", url.Values{"file": {id}})
	share, _ := json.Marshal(r["file"].(map[string]any)["shares"])
	if want := `{"public":{"C1":[{"channel_name":"C1","share_user_id":"U0BATON","source":"UNKNOWN","team_id":"T0BATON","thread_ts":"1700000000.000100","ts":"` + shared[0].TS + `"}]}}`; string(share) != want {
		t.Errorf("files.info shares %s, want %s", share, want)
	}
	// The file host gives its bytes with the bot token only.
	url := r["file"].(map[string]any)["url_private_download"].(string)
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("Authorization", "Bearer xoxb-1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || string(got) != "four" {
		t.Errorf("download: %d %q", resp.StatusCode, got)
	}
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err = noRedirect.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound || s.Downloads() != 2 {
		t.Errorf("download without the token: %d (downloads %d)", resp.StatusCode, s.Downloads())
	}
}
