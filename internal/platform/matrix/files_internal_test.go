package matrix

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/baton-agent/baton/internal/platform"
)

func fileEvent(t *testing.T, content map[string]any) wireEvent {
	t.Helper()
	raw, err := json.Marshal(content)
	if err != nil {
		t.Fatal(err)
	}
	return wireEvent{Type: "m.room.message", EventID: "$ev", Sender: "@owner:localhost", OriginServerTS: 1, Content: raw}
}

// A file message arrives as its attachment, with the spec's caption rule
// (body is a caption only when filename is set and differs), the kind
// the message type says, and a message that is only a file still
// arriving.
func TestFileMessagesArriveAsAttachments(t *testing.T) {
	a, err := New(Config{HomeserverURL: "http://127.0.0.1:1", AccessToken: "tok"})
	if err != nil {
		t.Fatal(err)
	}
	info := map[string]any{"mimetype": "application/pdf", "size": 1234}
	cases := []struct {
		name    string
		content map[string]any
		kind    platform.AttachmentKind
		file    string
		text    string
	}{
		{"file alone", map[string]any{"msgtype": "m.file", "body": "a.pdf", "filename": "a.pdf", "url": "mxc://localhost/abc", "info": info}, platform.KindDocument, "a.pdf", ""},
		{"file with caption", map[string]any{"msgtype": "m.file", "body": "read this", "filename": "a.pdf", "url": "mxc://localhost/abc", "info": info}, platform.KindDocument, "a.pdf", "read this"},
		{"older client: body is the name", map[string]any{"msgtype": "m.file", "body": "a.pdf", "url": "mxc://localhost/abc", "info": info}, platform.KindDocument, "a.pdf", ""},
		{"picture", map[string]any{"msgtype": "m.image", "body": "IMG_1.jpg", "url": "mxc://localhost/abc", "info": info}, platform.KindPhoto, "IMG_1.jpg", ""},
		{"voice message", map[string]any{"msgtype": "m.audio", "body": "Voice message", "url": "mxc://localhost/abc", "org.matrix.msc3245.voice": map[string]any{}}, platform.KindVoice, "Voice message", ""},
		{"audio", map[string]any{"msgtype": "m.audio", "body": "song.mp3", "url": "mxc://localhost/abc"}, platform.KindAudio, "song.mp3", ""},
		{"video", map[string]any{"msgtype": "m.video", "body": "clip.mp4", "url": "mxc://localhost/abc"}, platform.KindVideo, "clip.mp4", ""},
	}
	for _, c := range cases {
		ev, ok := a.decode("!r:localhost", fileEvent(t, c.content))
		if !ok {
			t.Errorf("%s: no event", c.name)
			continue
		}
		if ev.Text != c.text || len(ev.Attachments) != 1 {
			t.Errorf("%s: text %q, attachments %+v", c.name, ev.Text, ev.Attachments)
			continue
		}
		att := ev.Attachments[0]
		if att.Kind != c.kind || att.Name != c.file || att.ID != "mxc://localhost/abc" || att.Open == nil {
			t.Errorf("%s: attachment %+v", c.name, att)
		}
	}
	enc, ok := a.decode("!r:localhost", fileEvent(t, map[string]any{"msgtype": "m.file", "body": "s.pdf", "file": map[string]any{"url": "mxc://localhost/enc"}}))
	if !ok || len(enc.Attachments) != 1 {
		t.Fatalf("encrypted file arrived as %+v", enc)
	}
	if _, err := enc.Attachments[0].Open(context.Background()); !errors.Is(err, platform.ErrPermanent) || !strings.Contains(err.Error(), "encrypted") {
		t.Errorf("encrypted file opened: %v, want refused for good, saying why", err)
	}
	if _, ok := a.decode("!r:localhost", fileEvent(t, map[string]any{"msgtype": "m.notice", "body": "a bot's words"})); ok {
		t.Error("a notice was handed over")
	}
}

// A file is read only through the homeserver's authenticated media, with
// the bot's token, and only for an mxc:// URI: a link to anywhere else,
// or a URI that would steer the request elsewhere on the homeserver, is
// refused for good without any request.
func TestFileLinksAreMxcOnly(t *testing.T) {
	var mu sync.Mutex
	var paths, auths []string
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		paths, auths = append(paths, r.URL.EscapedPath()), append(auths, r.Header.Get("Authorization"))
		mu.Unlock()
		_, _ = io.WriteString(w, "bytes")
	}))
	defer hs.Close()
	a, err := New(Config{HomeserverURL: hs.URL, AccessToken: "tok"})
	if err != nil {
		t.Fatal(err)
	}
	open := func(url string) (string, error) {
		ev, ok := a.decode("!r:localhost", fileEvent(t, map[string]any{"msgtype": "m.file", "body": "a.pdf", "url": url}))
		if !ok || len(ev.Attachments) != 1 {
			t.Fatalf("%s: arrived as %+v", url, ev)
		}
		rc, err := ev.Attachments[0].Open(context.Background())
		if err != nil {
			return "", err
		}
		defer rc.Close()
		b, err := io.ReadAll(rc)
		return string(b), err
	}
	for _, bad := range []string{hs.URL + "/evil", "mxc://localhost/../../v3/account/whoami", "mxc://evil.example/a/b", "mxc://ev il/abc", "mxc://"} {
		if _, err := open(bad); !errors.Is(err, platform.ErrPermanent) {
			t.Errorf("%s: %v, want refused for good", bad, err)
		}
	}
	mu.Lock()
	if len(paths) != 0 {
		t.Errorf("bad links made requests: %v", paths)
	}
	mu.Unlock()
	// Another server's file is fetched by the homeserver, not by baton.
	if got, err := open("mxc://other.example:8448/AbC_12-x"); err != nil || got != "bytes" {
		t.Fatalf("good link: %q, %v", got, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(paths) != 1 || paths[0] != "/_matrix/client/v1/media/download/other.example:8448/AbC_12-x" || auths[0] != "Bearer tok" {
		t.Errorf("download asked %v with %v", paths, auths)
	}
}
