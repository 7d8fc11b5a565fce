package imessage_test

import (
	"bytes"
	"context"
	"io"
	"testing"

	"github.com/baton-agent/baton/internal/platform"
	"github.com/baton-agent/baton/internal/platform/imessage/imessagetest"
	"github.com/baton-agent/baton/internal/testutil"
)

// A file whose webhook never came is fetched with its attachment: the
// catch-up asks the server for attachments, which it leaves out unless
// asked.
func TestMissedFileIsFetchedWithItsAttachment(t *testing.T) {
	fake := imessagetest.New(t, password)
	a := newAdapter(t, fake, false)
	c := &collector{}
	run(t, a, c)
	testutil.Eventually(t, 0, func() bool { return fake.CallCount("message/query") > 0 }, "the adapter to be running")
	fake.SetWebhook("")
	id := fake.ReceiveFile(owner, imessagetest.DM(owner), imessagetest.Attachment{TransferName: "scan.pdf", MimeType: "application/pdf", Data: []byte("%PDF-1.4 scan")}, "")
	testutil.Eventually(t, 0, func() bool { return len(c.all()) == 1 }, "the missed file")
	ev := c.all()[0]
	if ev.ID != id || len(ev.Attachments) != 1 {
		t.Fatalf("fetched %+v", ev)
	}
	got, err := read(t, ev.Attachments[0])
	if err != nil || string(got) != "%PDF-1.4 scan" {
		t.Errorf("read %q: %v", got, err)
	}
}

// Each file is described by what the server tells: pictures as photos,
// audio messages recorded in Messages as voice, other audio as audio,
// video as video; a link preview's hidden payload is no file at all.
func TestAttachmentKinds(t *testing.T) {
	fake := imessagetest.New(t, password)
	a := newAdapter(t, fake, false)
	c := &collector{}
	run(t, a, c)
	dm := imessagetest.DM(owner)
	handle := &imessagetest.Handle{Address: owner, Service: "iMessage"}
	chats := []imessagetest.Chat{{GUID: dm, Style: 45}}
	fake.ReceiveMessage(imessagetest.Message{Text: "\ufffc", IsAudioMessage: true, Handle: handle, Chats: chats,
		Attachments: []imessagetest.Attachment{{GUID: "V1", TransferName: "Audio Message.caf", MimeType: "audio/x-caf"}}})
	fake.ReceiveMessage(imessagetest.Message{Text: "\ufffc\ufffc\ufffc", Handle: handle, Chats: chats,
		Attachments: []imessagetest.Attachment{
			{GUID: "S1", TransferName: "song.mp3", MimeType: "audio/mpeg"},
			{GUID: "M1", TransferName: "clip.mov", MimeType: "video/quicktime"},
			{GUID: "P1", TransferName: "IMG_2.jpeg", MimeType: "image/jpeg"},
		}})
	fake.ReceiveMessage(imessagetest.Message{Text: "https://example.com", Handle: handle, Chats: chats,
		Attachments: []imessagetest.Attachment{{GUID: "L1", TransferName: "preview.pluginPayloadAttachment", HideAttachment: true}}})
	testutil.Eventually(t, 0, func() bool { return len(c.all()) == 3 }, "three messages")
	var kinds []platform.AttachmentKind
	for _, ev := range c.all() {
		for _, att := range ev.Attachments {
			kinds = append(kinds, att.Kind)
		}
	}
	want := []platform.AttachmentKind{platform.KindVoice, platform.KindAudio, platform.KindVideo, platform.KindPhoto}
	if !equal(kinds, want) {
		t.Errorf("kinds %v, want %v", kinds, want)
	}
}

// A download always goes to the configured server's download route, the
// guid kept inside its path; a file the server no longer has (404) is
// refused for good.
func TestDownloadRoute(t *testing.T) {
	fake := imessagetest.New(t, password)
	a := newAdapter(t, fake, false)
	c := &collector{}
	run(t, a, c)
	dm := imessagetest.DM(owner)
	fake.ReceiveMessage(imessagetest.Message{Text: "\ufffc", Handle: &imessagetest.Handle{Address: owner}, Chats: []imessagetest.Chat{{GUID: dm}},
		Attachments: []imessagetest.Attachment{{GUID: "../../message/text", TransferName: "odd.pdf", Data: []byte("odd")}}})
	testutil.Eventually(t, 0, func() bool { return len(c.all()) == 1 }, "the message")
	att := c.all()[0].Attachments[0]
	if got, err := read(t, att); err != nil || string(got) != "odd" || fake.Downloads() != 1 || fake.CallCount("message/text") != 0 {
		t.Errorf("read %q, %v; calls %+v", got, err, fake.Calls())
	}
	fake.FailNext("attachment/download", 404, 0)
	_, err := read(t, att)
	if cl, _ := platform.Classify(err); cl != platform.ClassPermanent {
		t.Errorf("download of a file the server lost: %v (%v), want permanent", err, cl)
	}
}

// A caption goes as a text after the file; when it fails, the next try
// of the delivery sends the caption alone, not the file again.
func TestCaptionRetriedWithoutTheFile(t *testing.T) {
	fake := imessagetest.New(t, password)
	a := newAdapter(t, fake, false)
	ctx := platform.WithDeliveryKey(testutil.Context(t, 0), "out:7")
	home := platform.Address{Platform: "imessage", Kind: platform.DM, Chat: imessagetest.DM(owner)}
	f := platform.File{Name: "log.txt", MediaType: "text/plain", Size: 4, Caption: "the **log**",
		Open: func(context.Context) (io.ReadCloser, error) {
			return io.NopCloser(bytes.NewReader([]byte("logs"))), nil
		}}
	fake.FailNext("message/text", 500, 0)
	if _, err := a.SendFile(ctx, home, f); err == nil {
		t.Fatal("SendFile whose caption failed succeeded")
	}
	id, err := a.SendFile(ctx, home, f)
	if err != nil {
		t.Fatal(err)
	}
	sent := fake.Sent()
	if len(sent) != 2 || len(sent[0].Attachments) != 1 || sent[0].GUID != id || sent[1].Text != "the log" {
		t.Fatalf("sent %+v, want the file once and its caption", sent)
	}
	if a := sent[0].Attachments[0]; a.TransferName != "log.txt" || string(a.Data) != "logs" || a.MimeType != "text/plain" {
		t.Errorf("the file arrived as %+v", a)
	}
}

// Without the Private API, a file goes by AppleScript, which BlueBubbles
// only takes with a tempGuid; a file without a name gets one, which
// BlueBubbles needs.
func TestFileByAppleScript(t *testing.T) {
	fake := imessagetest.New(t, password)
	a := newAdapter(t, fake, false)
	home := platform.Address{Platform: "imessage", Kind: platform.DM, Chat: imessagetest.DM(owner)}
	f := platform.File{MediaType: "image/png", Size: 3,
		Open: func(context.Context) (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader([]byte("png"))), nil }}
	if _, err := a.SendFile(testutil.Context(t, 0), home, f); err != nil {
		t.Fatal(err)
	}
	if s := fake.Sent(); len(s) != 1 || len(s[0].Attachments) != 1 || s[0].Attachments[0].TransferName != "file" {
		t.Errorf("sent %+v", s)
	}
}

func read(t *testing.T, att platform.Attachment) ([]byte, error) {
	t.Helper()
	rc, err := att.Open(testutil.Context(t, 0))
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return io.ReadAll(rc)
}

func equal[T comparable](a, b []T) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
