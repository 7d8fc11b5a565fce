package telegram_test

import (
	"bytes"
	"errors"
	"io"
	"strconv"
	"strings"
	"testing"

	"github.com/baton-agent/baton/internal/platform"
	"github.com/baton-agent/baton/internal/platform/telegram"
	"github.com/baton-agent/baton/internal/platform/telegram/telegramtest"
)

// fileBytes are bytes no text decoding would keep as they are.
func fileBytes(head string) []byte {
	b := []byte(head)
	for i := 0; i < 3000; i++ {
		b = append(b, byte(i), byte(255-i%256))
	}
	return b
}

func readAll(t *testing.T, att platform.Attachment) ([]byte, error) {
	t.Helper()
	if att.Open == nil {
		t.Fatalf("attachment %+v has no Open", att)
	}
	rc, err := att.Open(ctxT(t))
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return io.ReadAll(rc)
}

func TestPhotoWithoutCaptionIsHandedOver(t *testing.T) {
	f := setup(t)
	photo := fileBytes("\xff\xd8\xff\xe0JFIF")
	_, msg := f.srv.PushPhoto(5001, 0, owner, photo, "")
	c := newCollector()
	f.run(t, c.handle)
	ev := c.waitFor(t, func(ev platform.Event) bool { return len(ev.Attachments) > 0 })
	if ev.Text != "" || ev.At.Key() != "telegram:dm:5001" || ev.SenderID != "5001" || ev.ID != "5001:"+strconv.Itoa(msg) {
		t.Errorf("photo event %+v", ev)
	}
	if len(ev.Attachments) != 1 {
		t.Fatalf("attachments %+v, want the photo once (its largest size)", ev.Attachments)
	}
	att := ev.Attachments[0]
	if att.Kind != platform.KindPhoto || att.Size != int64(len(photo)) || att.ID == "" {
		t.Errorf("photo attachment %+v", att)
	}
	got, err := readAll(t, att)
	if err != nil || !bytes.Equal(got, photo) {
		t.Errorf("photo bytes: %d bytes (want %d), %v", len(got), len(photo), err)
	}
	if n := f.srv.Downloads(); n != 1 {
		t.Errorf("%d downloads, want 1", n)
	}
}

func TestCaptionedDocumentCarriesBoth(t *testing.T) {
	f := setup(t)
	pdf := fileBytes("%PDF-1.7\n")
	f.srv.PushDocument(5001, 0, owner, "report.pdf", "application/pdf", pdf, "what does page 2 say?")
	c := newCollector()
	f.run(t, c.handle)
	ev := c.waitFor(t, textIs("what does page 2 say?"))
	if len(ev.Attachments) != 1 {
		t.Fatalf("attachments %+v, want the document", ev.Attachments)
	}
	att := ev.Attachments[0]
	if att.Kind != platform.KindDocument || att.Name != "report.pdf" || att.MediaType != "application/pdf" || att.Size != int64(len(pdf)) {
		t.Errorf("document attachment %+v", att)
	}
	got, err := readAll(t, att)
	if err != nil || !bytes.Equal(got, pdf) {
		t.Errorf("document bytes: %d bytes (want %d), %v", len(got), len(pdf), err)
	}
}

func TestVoiceAndVideoNoteAreFiles(t *testing.T) {
	f := setup(t)
	f.srv.PushVoice(5001, 0, owner, fileBytes("OggS"))
	f.srv.PushFile(5001, 0, owner, telegramtest.File{Kind: telegramtest.VideoNote, Data: fileBytes("note")})
	f.srv.PushFile(5001, 0, owner, telegramtest.File{Kind: telegramtest.Audio, Name: "song.mp3", MimeType: "audio/mpeg", Data: fileBytes("ID3")})
	c := newCollector()
	f.run(t, c.handle)
	for _, kind := range []platform.AttachmentKind{platform.KindVoice, platform.KindVideo, platform.KindAudio} {
		ev := c.waitFor(t, func(ev platform.Event) bool { return len(ev.Attachments) == 1 && ev.Attachments[0].Kind == kind })
		if _, err := readAll(t, ev.Attachments[0]); err != nil {
			t.Errorf("%s: %v", kind, err)
		}
	}
	if ev := c.waitFor(t, func(ev platform.Event) bool { return len(ev.Attachments) == 1 && ev.Attachments[0].Name == "song.mp3" }); ev.Attachments[0].MediaType != "audio/mpeg" {
		t.Errorf("audio %+v", ev.Attachments[0])
	}
}

func TestFileOverTheLimitRefusedBeforeDownload(t *testing.T) {
	f := setup(t)
	f.srv.PushFile(5001, 0, owner, telegramtest.File{Kind: telegramtest.Document, Name: "disk.iso", Data: []byte("x"), Size: telegram.MaxDownload + 1})
	c := newCollector()
	f.run(t, c.handle)
	ev := c.waitFor(t, func(ev platform.Event) bool { return len(ev.Attachments) > 0 })
	att := ev.Attachments[0]
	if att.Size != telegram.MaxDownload+1 || att.Name != "disk.iso" {
		t.Errorf("attachment %+v", att)
	}
	_, err := readAll(t, att)
	var tl *platform.TooLargeError
	if !errors.As(err, &tl) || !errors.Is(err, platform.ErrTooLarge) || !errors.Is(err, platform.ErrPermanent) {
		t.Fatalf("Open of a file over 20 MB: %v, want a *platform.TooLargeError", err)
	}
	if msg := err.Error(); strings.Contains(msg, "\n") || !strings.Contains(msg, "disk.iso") || !strings.Contains(msg, "20 MB") || !strings.Contains(msg, "Telegram") {
		t.Errorf("reason %q: want one line naming the file, the limit and the service", msg)
	}
	if n, d := f.srv.CallCount("getFile"), f.srv.Downloads(); n != 0 || d != 0 {
		t.Errorf("getFile called %d times, %d downloads: want neither", n, d)
	}
	if got := f.tg.MaxDownload(); got != 20<<20 {
		t.Errorf("MaxDownload = %d", got)
	}
}

func TestDownloadFailureKeepsTheTokenOut(t *testing.T) {
	f := setup(t)
	f.srv.PushDocument(5001, 0, owner, "a.txt", "text/plain", []byte("a"), "")
	c := newCollector()
	f.run(t, c.handle)
	att := c.waitFor(t, func(ev platform.Event) bool { return len(ev.Attachments) > 0 }).Attachments[0]
	f.srv.FailNext("GET /file", 500, 0)
	_, err := readAll(t, att)
	if err == nil || strings.Contains(err.Error(), token) {
		t.Errorf("a failed download: %v", err)
	}
	if cl, _ := platform.Classify(err); cl != platform.ClassTransient {
		t.Errorf("a 500 from the file server is %v, want transient", cl)
	}
	f.srv.FailNext("GET /file", 404, 0)
	if _, err := readAll(t, att); err == nil || strings.Contains(err.Error(), token) || !errors.Is(err, platform.ErrPermanent) {
		t.Errorf("a download answered 404: %v", err)
	}
	if got, err := readAll(t, att); err != nil || string(got) != "a" {
		t.Errorf("Open again after the failures: %q, %v", got, err)
	}
}
