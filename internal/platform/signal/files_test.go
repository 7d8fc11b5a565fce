package signal_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/baton-agent/baton/internal/platform"
	"github.com/baton-agent/baton/internal/platform/platformtest"
	"github.com/baton-agent/baton/internal/platform/signal"
	"github.com/baton-agent/baton/internal/platform/signal/signaltest"
	"github.com/baton-agent/baton/internal/testutil"
)

// waitEvent waits until the event with id was handed over.
func waitEvent(t *testing.T, fake *signaltest.Server, c *collector, id string) platform.Event {
	t.Helper()
	var ev platform.Event
	testutil.Eventually(t, testutil.Patience, func() bool {
		for _, e := range c.all() {
			if e.ID == id {
				ev = e
				return true
			}
		}
		return false
	}, "event "+id)
	return ev
}

func readAll(t *testing.T, att platform.Attachment) []byte {
	t.Helper()
	rc, err := att.Open(testutil.Context(t, 0))
	if err != nil {
		t.Fatalf("open %s: %v", att.Name, err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("read %s: %v", att.Name, err)
	}
	return b
}

// getAttachmentChats is the chat each getAttachment call named:
// "recipient:<number>" or "group:<id>".
func getAttachmentChats(t *testing.T, fake *signaltest.Server) []string {
	t.Helper()
	var out []string
	for _, call := range fake.Calls() {
		if call.Method != "getAttachment" {
			continue
		}
		var p struct {
			Recipient string `json:"recipient"`
			GroupID   string `json:"groupId"`
		}
		if err := json.Unmarshal([]byte(call.Params["params"]), &p); err != nil {
			t.Fatal(err)
		}
		if p.GroupID != "" {
			out = append(out, "group:"+p.GroupID)
		} else {
			out = append(out, "recipient:"+p.Recipient)
		}
	}
	return out
}

// Files arrive from a person, in a group and in Note to Self, each read
// from the daemon naming the chat it came in; a photo, a voice note (audio
// without a name) and a document each as what they are; a file larger
// than one JSON-RPC answer baton reads whole (3 MB) arrives intact.
func TestFilesArrive(t *testing.T) {
	fake := signaltest.New(t, account)
	a := newAdapter(t, fake)
	c := &collector{}
	run(t, a, c)
	streaming(t, fake)

	big := bytes.Repeat([]byte("0123456789abcdef\x00\xff"), 3<<20/18)
	png := platformtest.SamplePNG()
	id := fake.PushFiles(owner, "Owner", "", "",
		signaltest.File{ContentType: "image/png", Data: png},
		signaltest.File{ContentType: "audio/aac", Data: []byte("aac")},
		signaltest.File{Filename: "dump.bin", ContentType: "application/octet-stream", Data: big})
	ev := waitEvent(t, fake, c, id)
	if ev.Text != "" || len(ev.Attachments) != 3 {
		t.Fatalf("arrived as %+v", ev)
	}
	kinds := []platform.AttachmentKind{platform.KindPhoto, platform.KindVoice, platform.KindDocument}
	for i, want := range [][]byte{png, []byte("aac"), big} {
		att := ev.Attachments[i]
		if att.Kind != kinds[i] {
			t.Errorf("attachment %d is a %s, want a %s", i, att.Kind, kinds[i])
		}
		if got := readAll(t, att); !bytes.Equal(got, want) {
			t.Errorf("attachment %d read back as %d bytes, want %d intact", i, len(got), len(want))
		}
	}

	group := "Z3JvdXAtaWQ="
	gid := fake.PushFiles(owner, "Owner", group, "in the group", signaltest.File{Filename: "a.txt", ContentType: "text/plain", Data: []byte("g")})
	gev := waitEvent(t, fake, c, gid)
	if gev.At.Kind != platform.Group || gev.Text != "in the group" || len(gev.Attachments) != 1 || string(readAll(t, gev.Attachments[0])) != "g" {
		t.Errorf("group file arrived as %+v", gev)
	}
	sid := fake.PushSentFiles(account, "", signaltest.File{Filename: "note.txt", ContentType: "text/plain", Data: []byte("self")})
	sev := waitEvent(t, fake, c, sid)
	if sev.At.Chat != account || len(sev.Attachments) != 1 || string(readAll(t, sev.Attachments[0])) != "self" {
		t.Errorf("Note to Self file arrived as %+v", sev)
	}
	want := []string{"recipient:" + owner, "recipient:" + owner, "recipient:" + owner, "group:" + group, "recipient:" + account}
	if got := getAttachmentChats(t, fake); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("getAttachment named %v, want %v", got, want)
	}
}

// An attachment the daemon does not have (run with --ignore-attachments,
// or gone) is refused for good, in one line.
func TestMissingAttachmentIsPermanent(t *testing.T) {
	fake := signaltest.New(t, account)
	a := newAdapter(t, fake)
	c := &collector{}
	run(t, a, c)
	streaming(t, fake)
	fake.Push(map[string]any{"account": account, "envelope": map[string]any{
		"source": owner, "sourceNumber": owner, "timestamp": 5,
		"dataMessage": map[string]any{"timestamp": 5, "attachments": []map[string]any{{"contentType": "application/pdf", "id": "nope.pdf", "filename": "x.pdf", "size": 3}}},
	}})
	ev := waitEvent(t, fake, c, owner+":5")
	if len(ev.Attachments) != 1 {
		t.Fatalf("arrived as %+v", ev)
	}
	_, err := ev.Attachments[0].Open(context.Background())
	if cl, _ := platform.Classify(err); cl != platform.ClassPermanent || !strings.Contains(err.Error(), "Could not find attachment") {
		t.Errorf("missing attachment: %v (%v), want permanent", err, cl)
	}
}

// A file goes out as a data URI signal-cli reads back as it was sent:
// the name however odd, the type without its parameters, the caption as
// styled text.
func TestSendFileAsSignalCliReadsIt(t *testing.T) {
	fake := signaltest.New(t, account)
	a := newAdapter(t, fake)
	ctx := testutil.Context(t, 0)
	data := []byte("one\ntwo\n")
	to := platform.Address{Platform: signal.Name, Kind: platform.Group, Chat: "Z3JvdXAtaWQ="}
	id, err := a.SendFile(ctx, to, platform.File{Name: "my report; v2+final,ok.txt", MediaType: "text/plain; charset=utf-8", Size: int64(len(data)),
		Caption: "**read** this", Open: func(context.Context) (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil }})
	if err != nil {
		t.Fatal(err)
	}
	sent := fake.Sent()
	if len(sent) != 1 || len(sent[0].Attachments) != 1 {
		t.Fatalf("sent %+v", sent)
	}
	s, f := sent[0], sent[0].Attachments[0]
	if f.Filename != "my report; v2+final,ok.txt" || f.ContentType != "text/plain" || !bytes.Equal(f.Data, data) {
		t.Errorf("file sent as %q %q %q", f.Filename, f.ContentType, f.Data)
	}
	if s.GroupID != to.Chat || s.Message != "read this" || strings.Join(s.TextStyle, ",") != "0:4:BOLD" || id == "" {
		t.Errorf("sent to %q with %q %v, id %q", s.GroupID, s.Message, s.TextStyle, id)
	}
}
