package slack

import (
	"errors"
	"strings"
	"testing"

	"github.com/baton-agent/baton/internal/platform"
)

// A message's files are described as Slack tells them: a picture as a
// photo, anything else as a document, a deleted file (a tombstone) left
// out; a message that is only files is a message.
func TestFilesOfAMessage(t *testing.T) {
	raw := []byte(`{"type":"event_callback","event":{"type":"message","subtype":"file_share","channel":"C1","user":"U1","text":"","ts":"1.3","files":[
		{"id":"F1","name":"a.png","mimetype":"image/png","size":4,"mode":"hosted"},
		{"id":"F2","mode":"tombstone"},
		{"id":"F3","name":"b.svg","mimetype":"image/svg+xml","size":9,"mode":"hosted"},
		{"id":"F4","name":"audio_message.webm","mimetype":"audio/webm","size":7,"mode":"hosted","subtype":"slack_audio"}]}}`)
	ev, ok, err := decodeEvent(raw, "UBOT", nil)
	if err != nil || !ok {
		t.Fatalf("a message of files alone: %v, %v", ok, err)
	}
	want := []platform.Attachment{
		{Kind: platform.KindPhoto, Name: "a.png", MediaType: "image/png", Size: 4, ID: "F1"},
		{Kind: platform.KindDocument, Name: "b.svg", MediaType: "image/svg+xml", Size: 9, ID: "F3"},
		{Kind: platform.KindVoice, Name: "audio_message.webm", MediaType: "audio/webm", Size: 7, ID: "F4"}, // a clip recorded in Slack
	}
	if len(ev.Attachments) != len(want) {
		t.Fatalf("attachments %+v, want %+v", ev.Attachments, want)
	}
	for i, w := range want {
		if g := ev.Attachments[i]; g.Kind != w.Kind || g.Name != w.Name || g.MediaType != w.MediaType || g.Size != w.Size || g.ID != w.ID {
			t.Errorf("attachment %d: %+v, want %+v", i, g, w)
		}
	}
}

// A file Slack hides (past a free plan's reach) or keeps elsewhere (an
// external file) is refused in one line saying so, without a request.
func TestFilesOutOfReach(t *testing.T) {
	a, err := New(Config{BotToken: "xoxb-1", AppToken: "xapp-1", APIURL: "http://127.0.0.1:1/api/", FilesURL: "http://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		f    wireFile
		want string
	}{
		{wireFile{ID: "F1", Name: "old.pdf", Mode: "hidden_by_limit"}, "out of reach"},
		{wireFile{ID: "F2", Name: "doc", Mode: "external", URLPrivate: "https://docs.google.com/x"}, "outside Slack"},
		{wireFile{ID: "F3", Name: "x.txt", Mode: "hosted", URLPrivateDownload: "https://example.com/files-pri/x"}, "not on Slack's file host"},
	} {
		_, err := a.download(t.Context(), c.f, c.f.Name)
		if !errors.Is(err, platform.ErrPermanent) || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v, want a permanent refusal saying %q", c.f.Name, err, c.want)
		}
	}
}
