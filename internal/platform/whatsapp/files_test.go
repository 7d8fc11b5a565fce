package whatsapp_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"os"
	"testing"

	"github.com/baton-agent/baton/internal/platform"
	"github.com/baton-agent/baton/internal/platform/whatsapp"
	"github.com/baton-agent/baton/internal/platform/whatsapp/whatsapptest"
	"github.com/baton-agent/baton/internal/testutil"
)

// pattern is n bytes that differ from chunk to chunk.
func pattern(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*31 + i>>16)
	}
	return b
}

// receiveOne runs a over its client until one event arrives and returns
// it.
func receiveOne(t *testing.T, a *whatsapp.Adapter) platform.Event {
	t.Helper()
	got := make(chan platform.Event, 1)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		done <- a.Run(ctx, platform.ReceiverFunc(func(_ context.Context, ev platform.Event) error {
			got <- ev
			return nil
		}))
	}()
	t.Cleanup(func() { cancel(); <-done })
	return testutil.Receive(t, got, "the event")
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

// Files of several chunks cross baton-whatsapp's pipe both ways intact,
// and the temporary files the device process keeps them in are gone
// once they are sent or read.
func TestFilesCrossThePipe(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	fake := whatsapptest.New(self)
	p, _, err := whatsapp.StartPiped(t.Context(), fake, nil, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	a, err := whatsapp.New(whatsapp.Config{Client: p, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	in := pattern(1300 << 10)
	fake.PushFile(whatsapp.Message{Chat: self, Sender: self, FromMe: true},
		whatsapp.Media{Kind: platform.KindDocument, Name: "dump.bin", MediaType: "application/octet-stream"}, in)
	ev := receiveOne(t, a)
	if len(ev.Attachments) != 1 {
		t.Fatalf("event %+v", ev)
	}
	got, err := read(t, ev.Attachments[0])
	if err != nil || !bytes.Equal(got, in) {
		t.Fatalf("read %d bytes (want %d intact): %v", len(got), len(in), err)
	}

	out := pattern(1700 << 10)
	f := platform.File{Name: "big.log", MediaType: "text/plain", Size: int64(len(out)),
		Open: func(context.Context) (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(out)), nil }}
	if _, err := a.SendFile(testutil.Context(t, 0), whatsapp.HomeAddress(self), f); err != nil {
		t.Fatal(err)
	}
	if s := fake.Sent(); len(s) != 1 || s[0].File == nil || !bytes.Equal(s[0].File.Data, out) || s[0].File.Name != "big.log" {
		t.Fatalf("sent %d messages, the file not intact", len(s))
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

// A download whose device process died fails (for a later try) rather
// than waiting for ever.
func TestDownloadFailsWhenTheProcessDies(t *testing.T) {
	fake := whatsapptest.New(self)
	p, kill, err := whatsapp.StartPiped(t.Context(), fake, nil, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	fake.PushFile(whatsapp.Message{Chat: self, Sender: self, FromMe: true}, whatsapp.Media{Kind: platform.KindPhoto, MediaType: "image/png"}, pattern(100))
	var media whatsapp.Media
	err = fake.Listen(t.Context(), func() {}, func(_ context.Context, m whatsapp.Message) error {
		media = m.Files[0]
		return context.Canceled // leave it; stop listening
	})
	if err == nil {
		t.Fatal("Listen did not stop")
	}
	rc, err := p.Download(t.Context(), media)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	kill()
	if _, err := io.ReadAll(rc); err == nil {
		t.Error("a download from a dead process read to the end")
	}
}

// A photo arrives as a photo with its content's hash; media WhatsApp's
// servers no longer have is refused for good. A picture goes out as an
// image message, its caption in WhatsApp's formatting.
func TestPhotoInAndOut(t *testing.T) {
	fake := whatsapptest.New(self)
	a := newAdapter(t, fake, "")
	photo := pattern(500)
	fake.PushFile(whatsapp.Message{Chat: self, Sender: self, FromMe: true, Text: "the whiteboard"},
		whatsapp.Media{Kind: platform.KindPhoto, MediaType: "image/jpeg"}, photo)
	ev := receiveOne(t, a)
	if ev.Text != "the whiteboard" || len(ev.Attachments) != 1 {
		t.Fatalf("event %+v", ev)
	}
	att := ev.Attachments[0]
	if att.Kind != platform.KindPhoto || att.Name != "" || att.Size != 500 || len(att.ID) != 64 {
		t.Errorf("photo described as %+v", att)
	}
	if got, err := read(t, att); err != nil || !bytes.Equal(got, photo) {
		t.Errorf("photo read as %d bytes: %v", len(got), err)
	}
	fake.ExpireMedia()
	_, err := read(t, att)
	if cl, _ := platform.Classify(err); cl != platform.ClassPermanent {
		t.Errorf("download of media the servers let go: %v (%v), want permanent", err, cl)
	}

	png := pattern(64)
	f := platform.File{Name: "chart.png", MediaType: "image/png", Size: 64, Caption: "the **chart**",
		Open: func(context.Context) (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(png)), nil }}
	if _, err := a.SendFile(testutil.Context(t, 0), whatsapp.HomeAddress(self), f); err != nil {
		t.Fatal(err)
	}
	s := fake.Sent()
	if len(s) != 1 || s[0].File == nil || !s[0].File.Image || s[0].Text != "the *chart*" {
		t.Errorf("picture sent as %+v", s)
	}
}
