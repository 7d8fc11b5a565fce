package telegramtest

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

func TestFilesServedByGetFileAndTheDownloadRoute(t *testing.T) {
	s := New(t, "1:tok")
	s.PushDocument(7, 0, User{ID: 7, FirstName: "A"}, "log.txt", "text/plain", []byte("the log"), "see this")
	s.PushFile(7, 0, User{ID: 7, FirstName: "A"}, File{Kind: Document, Name: "huge.iso", Data: []byte("x"), Size: MaxDownload + 1})
	r := post(t, s, "getUpdates", "application/x-www-form-urlencoded", "")
	updates := r["result"].([]any)
	if len(updates) != 2 {
		t.Fatalf("updates %v", updates)
	}
	doc := updates[0].(map[string]any)["message"].(map[string]any)["document"].(map[string]any)
	if doc["file_name"] != "log.txt" || doc["mime_type"] != "text/plain" || doc["file_size"] != float64(7) || doc["file_unique_id"] == "" {
		t.Errorf("document %v", doc)
	}
	form := "application/x-www-form-urlencoded"
	got := post(t, s, "getFile", form, url.Values{"file_id": {doc["file_id"].(string)}}.Encode())
	file, _ := got["result"].(map[string]any)
	path, _ := file["file_path"].(string)
	if !strings.HasPrefix(path, "documents/") || !strings.HasSuffix(path, ".txt") {
		t.Fatalf("getFile %v", got)
	}
	resp, err := http.Get(s.URL() + "/file/bot1:tok/" + path)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != "the log" {
		t.Errorf("download: %d %q", resp.StatusCode, body)
	}
	if resp, err := http.Get(s.URL() + "/file/bot9:other/" + path); err != nil || resp.StatusCode != 404 {
		t.Errorf("download with another token: %v %v", resp, err)
	}
	if n := s.Downloads(); n != 2 {
		t.Errorf("Downloads = %d, want 2", n)
	}
	huge := updates[1].(map[string]any)["message"].(map[string]any)["document"].(map[string]any)
	got = post(t, s, "getFile", form, url.Values{"file_id": {huge["file_id"].(string)}}.Encode())
	if got["ok"] != false || got["description"] != "Bad Request: file is too big" {
		t.Errorf("getFile over the limit: %v", got)
	}
}
