package platformtest

import (
	"bytes"
	"context"
	"errors"
	"image"
	"image/color"
	"image/png"
	"io"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/baton-agent/baton/internal/platform"
	"github.com/baton-agent/baton/internal/testutil"
)

// testFileOut: a file baton sends shows once where it was sent, its bytes
// intact: a picture as a picture with its caption, a document as a
// document with its name, in a thread when sent to one; one over the
// service's upload limit is refused in one line without reading it; one
// whose answer was lost and is sent again (also by a restarted adapter)
// with the same delivery key shows once.
func testFileOut(t *testing.T, h Harness) {
	fs, ok := h.Adapter.(platform.FileSender)
	if !ok || h.Files == nil {
		t.Skip("the adapter cannot send files yet (not a platform.FileSender, or Harness.Files is nil)")
	}
	r := newRecorder()
	supervise(t, h, r)
	r.state(t, platform.StateLive, 1)
	ctx := testutil.Context(t, 0)

	picture := SamplePNG()
	doc := append([]byte("%PDF-1.4\n"), bytes.Repeat([]byte{0, 1, 2, 0xff, '\n'}, 3000)...)
	send := func(ctx context.Context, a platform.FileSender, at platform.Address, name, media, caption string, data []byte) string {
		t.Helper()
		id, err := a.SendFile(ctx, at, fileOf(name, media, caption, data, nil))
		if err != nil {
			t.Fatalf("SendFile %s to %s: %v", name, at.Key(), err)
		}
		if id == "" {
			t.Errorf("SendFile %s gave no message id", name)
		}
		return id
	}
	send(ctx, fs, h.Home, "chart.png", "image/png", "the chart", picture)
	send(ctx, fs, h.Home, "report.pdf", "application/pdf", "", doc)
	want := []ShownFile{
		{Name: "chart.png", Data: picture, Caption: "the chart", Image: true},
		{Name: "report.pdf", Data: doc},
	}
	waitFiles(t, h, h.Home, want)

	if th, ok := h.Adapter.(platform.Threader); ok {
		addr, err := th.NewThread(ctx, h.Home, "Files")
		if err != nil {
			t.Fatalf("NewThread: %v", err)
		}
		send(ctx, fs, addr, "notes.txt", "text/plain; charset=utf-8", "in the thread", []byte("one\ntwo\n"))
		waitFiles(t, h, addr, []ShownFile{{Name: "notes.txt", Data: []byte("one\ntwo\n"), Caption: "in the thread"}})
	}

	var opened atomic.Int32
	big := fileOf("disk.iso", "application/octet-stream", "", []byte("only the start"), &opened)
	big.Size = fs.MaxUpload() + 1
	_, err := fs.SendFile(ctx, h.Home, big)
	var tl *platform.TooLargeError
	if !errors.As(err, &tl) || !errors.Is(err, platform.ErrPermanent) {
		t.Errorf("SendFile of a file over the %d-byte limit: %v, want a *platform.TooLargeError", fs.MaxUpload(), err)
	} else if msg := err.Error(); strings.Contains(msg, "\n") || !strings.Contains(msg, "disk.iso") || !strings.Contains(msg, platform.FormatSize(fs.MaxUpload())) {
		t.Errorf("refusal %q: want one line naming the file and the limit", msg)
	}
	if n := opened.Load(); n != 0 {
		t.Errorf("the file over the limit was read %d times", n)
	}

	if h.LoseSend != nil {
		restarted, ok := h.Restarted(t).(platform.FileSender)
		if !ok {
			t.Fatal("the restarted adapter is not a platform.FileSender")
		}
		once := platform.WithDeliveryKey(ctx, "suite:file")
		h.LoseSend()
		if _, err := fs.SendFile(once, h.Home, fileOf("once.txt", "text/plain", "", []byte("once"), nil)); err == nil {
			t.Fatal("a SendFile whose answer was lost succeeded")
		}
		first := send(once, fs, h.Home, "once.txt", "text/plain", "", []byte("once"))
		if again := send(once, restarted, h.Home, "once.txt", "text/plain", "", []byte("once")); again != first {
			t.Errorf("one delivery of a file made messages %q and %q", first, again)
		}
		want = append(want, ShownFile{Name: "once.txt", Data: []byte("once")})
	}
	waitFiles(t, h, h.Home, want)
}

// fileOf is a platform.File of data; opened, when set, counts its Opens.
func fileOf(name, media, caption string, data []byte, opened *atomic.Int32) platform.File {
	return platform.File{Name: name, MediaType: media, Size: int64(len(data)), Caption: caption,
		Open: func(context.Context) (io.ReadCloser, error) {
			if opened != nil {
				opened.Add(1)
			}
			return io.NopCloser(bytes.NewReader(data)), nil
		}}
}

// waitFiles waits until the files shown at at are want (a service's
// history may lag its sends), then checks each.
func waitFiles(t *testing.T, h Harness, at platform.Address, want []ShownFile) {
	t.Helper()
	var got []ShownFile
	testutil.Eventually(t, testutil.Patience, func() bool {
		got = h.Files(at)
		return len(got) >= len(want)
	}, "the files sent to show")
	if len(got) != len(want) {
		t.Fatalf("%d files shown at %s, want %d", len(got), at.Key(), len(want))
	}
	for i, w := range want {
		g := got[i]
		if !bytes.Equal(g.Data, w.Data) {
			t.Errorf("file %d (%s) shown with %d bytes, want %d intact", i, w.Name, len(g.Data), len(w.Data))
		}
		if g.Image != w.Image {
			t.Errorf("file %d (%s) shown as a picture: %v, want %v", i, w.Name, g.Image, w.Image)
		}
		if g.Name != w.Name && !(w.Image && g.Name == "") {
			t.Errorf("file %d shown named %q, want %q", i, g.Name, w.Name)
		}
		if strings.TrimSpace(g.Caption) != w.Caption {
			t.Errorf("file %d (%s) shown with caption %q, want %q", i, w.Name, g.Caption, w.Caption)
		}
	}
}

// SamplePNG is a small real PNG (6×4, a gradient), for fakes and checks.
func SamplePNG() []byte {
	img := image.NewRGBA(image.Rect(0, 0, 6, 4))
	for x := range 6 {
		for y := range 4 {
			img.Set(x, y, color.RGBA{uint8(40 * x), uint8(60 * y), 128, 255})
		}
	}
	var b bytes.Buffer
	_ = png.Encode(&b, img)
	return b.Bytes()
}
