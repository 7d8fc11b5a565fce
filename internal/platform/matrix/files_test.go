package matrix_test

import (
	"bytes"
	"context"
	"io"
	"testing"

	"github.com/baton-agent/baton/internal/platform"
	"github.com/baton-agent/baton/internal/platform/matrix"
	"github.com/baton-agent/baton/internal/platform/matrix/matrixtest"
	"github.com/baton-agent/baton/internal/platform/platformtest"
	"github.com/baton-agent/baton/internal/testutil"
)

// The file limit is the homeserver's m.upload.size once the adapter has
// asked (the test homeserver's 10 MB), the default before.
func TestMediaLimitIsTheHomeserversUploadSize(t *testing.T) {
	w := newWorld(t)
	a := w.adapter(t, w.hs.URL(), newMemory())
	if a.MaxDownload() != matrix.DefaultMaxMedia || a.MaxUpload() != matrix.DefaultMaxMedia {
		t.Errorf("limits before asking: %d, %d", a.MaxDownload(), a.MaxUpload())
	}
	run(t, a, newInbox())
	if a.MaxDownload() != 10<<20 || a.MaxUpload() != 10<<20 {
		t.Errorf("limits after asking: %d, %d, want the homeserver's 10 MB", a.MaxDownload(), a.MaxUpload())
	}
}

// A picture is posted as m.image with its size in pixels, its type and
// its bytes; a picture a person posts arrives as a photo whose bytes
// read back intact.
func TestPicturesBothWays(t *testing.T) {
	w := newWorld(t)
	a := w.adapter(t, w.hs.URL(), newMemory())
	in := newInbox()
	run(t, a, in)
	ctx := testutil.Context(t, 0)
	png := platformtest.SamplePNG()
	_, err := a.SendFile(ctx, w.home, platform.File{Name: "chart.png", MediaType: "image/png", Size: int64(len(png)),
		Open: func(context.Context) (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(png)), nil }})
	if err != nil {
		t.Fatal(err)
	}
	msgs, err := w.Owner.Messages(ctx, w.Room)
	if err != nil {
		t.Fatal(err)
	}
	var shown []matrixtest.File
	for _, m := range msgs {
		if f, ok := matrixtest.FileOf(m); ok {
			shown = append(shown, f)
		}
	}
	if len(shown) != 1 {
		t.Fatalf("files shown: %+v", shown)
	}
	f := shown[0]
	if f.MsgType != "m.image" || f.W != 6 || f.H != 4 || f.MimeType != "image/png" || f.Size != int64(len(png)) || f.Name != "chart.png" || f.Caption != "" {
		t.Errorf("picture shown as %s %q (caption %q) %s %d bytes %dx%d", f.MsgType, f.Name, f.Caption, f.MimeType, f.Size, f.W, f.H)
	}

	mxc, err := w.Owner.Upload(ctx, "IMG_2.png", "image/png", png)
	if err != nil {
		t.Fatal(err)
	}
	id, err := w.Owner.Send(ctx, w.Room, map[string]any{"msgtype": "m.image", "body": "IMG_2.png", "url": mxc,
		"info": map[string]any{"mimetype": "image/png", "size": len(png), "w": 6, "h": 4}})
	if err != nil {
		t.Fatal(err)
	}
	var ev platform.Event
	testutil.Eventually(t, testutil.Patience, func() bool {
		in.mu.Lock()
		defer in.mu.Unlock()
		for _, e := range in.events {
			if e.ID == id {
				ev = e
				return true
			}
		}
		return false
	}, "the picture to arrive")
	if len(ev.Attachments) != 1 || ev.Attachments[0].Kind != platform.KindPhoto || ev.Attachments[0].ID != mxc || ev.Text != "" {
		t.Fatalf("picture arrived as %+v", ev)
	}
	rc, err := ev.Attachments[0].Open(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	if got, err := io.ReadAll(rc); err != nil || !bytes.Equal(got, png) {
		t.Errorf("picture read back as %d bytes: %v", len(got), err)
	}
}
