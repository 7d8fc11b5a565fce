package web

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/baton-agent/baton/internal/platform"
	"github.com/baton-agent/baton/internal/platform/platformtest"
	"github.com/baton-agent/baton/internal/testutil"
	"github.com/baton-agent/baton/internal/testutil/browser"
)

// keepFiles reads the files of ev while it is received, as the gateway
// stores them, and gives ev attachments that read what was kept.
func keepFiles(ctx context.Context, ev *platform.Event) error {
	for i, att := range ev.Attachments {
		rc, err := att.Open(ctx)
		if err != nil {
			return err
		}
		data, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			return err
		}
		ev.Attachments[i].Open = func(context.Context) (io.ReadCloser, error) {
			return io.NopCloser(bytes.NewReader(data)), nil
		}
	}
	return nil
}

func attachmentData(t *testing.T, att platform.Attachment) []byte {
	t.Helper()
	rc, err := att.Open(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// fileStore is a store that keeps files with its lines
// (platform.FileOpener).
type fileStore struct {
	*memTranscripts
	mu    sync.Mutex
	files map[string][][]platform.LineFile // key → files of each line, by index
	data  map[string][]byte                // ref → bytes
}

func (s *fileStore) addWithFiles(key string, l Line, files ...platform.LineFile) {
	l.Files = files
	s.memTranscripts.add(key, l)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.files[key] = append(s.files[key], files)
}

func (s *fileStore) OpenFile(_ context.Context, key, ref string) (platform.File, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, files := range s.files[key] {
		for _, f := range files {
			if f.Ref == ref {
				data := s.data[ref]
				return platform.File{Name: f.Name, MediaType: f.MediaType, Size: int64(len(data)),
					Open: func(context.Context) (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil }}, nil
			}
		}
	}
	return platform.File{}, os.ErrNotExist
}

// TestPageFiles drives files in the page at a phone's width and a
// desktop's: attaching with the picker, pasting a picture, dropping a
// file, a file over the bound refused; a picture baton sends previewed, a
// PDF as a download link, an SVG never shown inline; files in the
// history kept by the store.
func TestPageFiles(t *testing.T) {
	tab := browser.Start(t)
	for _, w := range widths {
		t.Run(w.name, func(t *testing.T) {
			for _, part := range []struct {
				name string
				test func(*testing.T, context.Context, size)
			}{
				{"attach with the picker", attachWithPicker},
				{"paste a picture", pastePicture},
				{"drop a file", dropFile},
				{"a file over the bound is refused", overTheBound},
				{"files not stored come back", notStoredComesBack},
				{"a picture sent is previewed", pictureSentPreviewed},
				{"a PDF sent is a download link", pdfSentIsLink},
				{"an SVG sent is never inline", svgNeverInline},
				{"files in the history", filesInHistory},
				{"a file sent shows once when the store has it", sentFileOnceStored},
			} {
				t.Run(part.name, func(t *testing.T) { part.test(t, tab, w) })
			}
		})
	}
}

func attachWithPicker(t *testing.T, tab context.Context, w size) {
	dir := t.TempDir()
	notes, chart := filepath.Join(dir, "notes.txt"), filepath.Join(dir, "chart.png")
	png := platformtest.SamplePNG()
	if os.WriteFile(notes, []byte("one\ntwo\n"), 0o600) != nil || os.WriteFile(chart, png, 0o600) != nil {
		t.Fatal("write the files to attach")
	}
	c := openChat(t, tab, &memTranscripts{}, w.width, w.height)
	if b := c.box(t, "#attach"); !b.Visible || b.Right > float64(w.width) {
		t.Errorf("the attach button %+v, want it on screen", b)
	}
	c.do(t, chromedp.SetUploadFiles(chromedp.CSS("#files"), []string{notes, chart}))
	c.poll(t, "two chips with name and size", `(() => { const t = [...document.querySelectorAll("#chips .chip")].map((c) => c.innerText.replace(/\s+/g, " "));
		return t.length === 2 && t[0].includes("notes.txt") && t[0].includes("8 bytes") && t[1].includes("chart.png"); })()`)
	if b := c.box(t, "#chips"); !b.Visible || b.Right > float64(w.width)+0.5 {
		t.Errorf("the chips %+v, want them within the %d px screen", b, w.width)
	}
	c.do(t, chromedp.Click(chromedp.CSS("#chips .chip:first-child .chip-remove")))
	c.poll(t, "the removed chip to go", `document.querySelectorAll("#chips .chip").length === 1 && document.querySelector("#chips .chip").innerText.includes("chart.png")`)
	c.do(t, chromedp.SendKeys(chromedp.CSS("#input"), "the chart"), enter())
	ev := c.said(t)
	if ev.Text != "the chart" || len(ev.Attachments) != 1 {
		t.Fatalf("said %+v, want the text with the one file left", ev)
	}
	att := ev.Attachments[0]
	if att.Name != "chart.png" || att.MediaType != "image/png" || att.Kind != platform.KindDocument || !bytes.Equal(attachmentData(t, att), png) {
		t.Errorf("attached %+v, want chart.png intact as a document", att)
	}
	c.poll(t, "the message with its picture, the chips gone, stored", `(() => { const li = document.querySelector("#messages li.user");
		const img = li && li.querySelector(".file-image img");
		return img && img.complete && img.naturalWidth === 6 && li.innerText.includes("the chart")
			&& document.querySelectorAll("#chips .chip").length === 0 && document.getElementById("status").innerText === ""; })()`)
	if b := c.box(t, "#messages li.user .file-image img"); b.Right > float64(w.width) {
		t.Errorf("the picture %+v, want it within the screen", b)
	}
}

// pngFile is JavaScript making a File of the sample PNG named name.
func pngFile(name string) string {
	return `new File([Uint8Array.from(atob("` + base64.StdEncoding.EncodeToString(platformtest.SamplePNG()) + `"), (c) => c.charCodeAt(0))], "` + name + `", {type: "image/png"})`
}

func pastePicture(t *testing.T, tab context.Context, w size) {
	c := openChat(t, tab, &memTranscripts{}, w.width, w.height)
	c.do(t, js(`const dt = new DataTransfer(); dt.items.add(`+pngFile("image.png")+`);
		document.getElementById("input").dispatchEvent(new ClipboardEvent("paste", {clipboardData: dt, bubbles: true, cancelable: true}))`))
	c.poll(t, "the pasted picture as a chip", `document.querySelectorAll("#chips .chip img").length === 1 && document.querySelector("#chips .chip").innerText.includes("image.png")`)
	c.do(t, chromedp.Click(chromedp.CSS("#input")), enter())
	ev := c.said(t)
	if ev.Text != "" || len(ev.Attachments) != 1 {
		t.Fatalf("said %+v, want the picture alone", ev)
	}
	if att := ev.Attachments[0]; att.Kind != platform.KindPhoto || att.MediaType != "image/png" || !bytes.Equal(attachmentData(t, att), platformtest.SamplePNG()) {
		t.Errorf("pasted %+v, want a photo, intact", att)
	}
	c.poll(t, "the picture shown as said", `(() => { const img = document.querySelector("#messages li.user .file-image img"); return img && img.complete && img.naturalWidth === 6; })()`)
}

func dropFile(t *testing.T, tab context.Context, w size) {
	c := openChat(t, tab, &memTranscripts{}, w.width, w.height)
	c.do(t, js(`const dt = new DataTransfer(); dt.items.add(new File(["dropped\n"], "dropped.txt", {type: "text/plain"}));
		document.getElementById("messages").dispatchEvent(new DragEvent("dragover", {dataTransfer: dt, bubbles: true, cancelable: true}));
		document.getElementById("messages").dispatchEvent(new DragEvent("drop", {dataTransfer: dt, bubbles: true, cancelable: true}))`))
	c.poll(t, "the dropped file as a chip", `document.querySelectorAll("#chips .chip").length === 1 && document.querySelector("#chips .chip").innerText.includes("dropped.txt") && !document.body.classList.contains("dropping")`)
	c.do(t, chromedp.SendKeys(chromedp.CSS("#input"), "from the desk"), enter())
	ev := c.said(t)
	if ev.Text != "from the desk" || len(ev.Attachments) != 1 || ev.Attachments[0].Name != "dropped.txt" || string(attachmentData(t, ev.Attachments[0])) != "dropped\n" {
		t.Fatalf("said %+v, want the text with dropped.txt", ev)
	}
	c.poll(t, "the file shown by name and size in the message", `(() => { const f = document.querySelector("#messages li.user .file"); return f && f.innerText.includes("dropped.txt · 8 bytes"); })()`)
}

func overTheBound(t *testing.T, tab context.Context, w size) {
	big := filepath.Join(t.TempDir(), "big.bin")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(DefaultMaxFile + 1<<20); err != nil { // sparse: nothing written
		t.Fatal(err)
	}
	f.Close()
	c := openChat(t, tab, &memTranscripts{}, w.width, w.height)
	c.do(t, chromedp.SetUploadFiles(chromedp.CSS("#files"), []string{big}))
	c.poll(t, "the refusal in one line", `document.getElementById("status").innerText === "⚠ big.bin is 26 MB, over the 25 MB limit for files from the web chat"`)
	if n := browser.Eval[int](c.ctx, t, `document.querySelectorAll("#chips .chip").length`); n != 0 {
		t.Errorf("%d chips for a file over the bound", n)
	}
}

// sendFile sends a file to the page as the gateway does; the page says
// it showed it.
func (c *chat) sendFile(t *testing.T, name, media, caption string, data []byte) {
	t.Helper()
	_, err := c.a.SendFile(testutil.Context(t, 0), Home, platform.File{Name: name, MediaType: media, Size: int64(len(data)), Caption: caption,
		Open: func(context.Context) (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil }})
	if err != nil {
		t.Fatalf("SendFile %s: %v", name, err)
	}
}

func pictureSentPreviewed(t *testing.T, tab context.Context, w size) {
	c := openChat(t, tab, &memTranscripts{}, w.width, w.height)
	c.sendFile(t, "chart.png", "image/png", "the **chart**", platformtest.SamplePNG())
	c.poll(t, "the picture previewed with its caption", `(() => { const li = document.querySelector("#messages li.assistant");
		const img = li && li.querySelector(".file-image img");
		return img && img.complete && img.naturalWidth === 6 && img.alt === "chart.png" && li.querySelector("strong") && li.innerText.includes("the chart"); })()`)
	if b := c.box(t, "#messages li.assistant .file-image img"); b.Right > float64(w.width) {
		t.Errorf("the picture %+v, want it within the screen", b)
	}
}

func pdfSentIsLink(t *testing.T, tab context.Context, w size) {
	c := openChat(t, tab, &memTranscripts{}, w.width, w.height)
	pdf := append([]byte("%PDF-1.4\n"), bytes.Repeat([]byte("x"), 2039)...)
	c.sendFile(t, "report.pdf", "application/pdf", "", pdf)
	c.poll(t, "a download link with name and size", `(() => { const a = document.querySelector("#messages li.assistant a.file");
		return a && a.getAttribute("download") === "report.pdf" && a.innerText.includes("report.pdf · 2 kB") && a.getAttribute("href").startsWith("/file/"); })()`)
	if n := browser.Eval[int](c.ctx, t, `document.querySelectorAll("#messages img").length`); n != 0 {
		t.Errorf("%d pictures shown for a PDF", n)
	}
}

func svgNeverInline(t *testing.T, tab context.Context, w size) {
	c := openChat(t, tab, &memTranscripts{}, w.width, w.height)
	svg := []byte(`<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><script>document.title="ran"</script><rect width="10" height="10"/></svg>`)
	c.sendFile(t, "logo.svg", "image/svg+xml", "the logo", svg)
	c.poll(t, "the SVG as a download link", `(() => { const a = document.querySelector("#messages li.assistant a.file");
		return a && a.getAttribute("download") === "logo.svg" && a.innerText.includes("logo.svg"); })()`)
	shown := browser.Eval[int](c.ctx, t, `document.querySelectorAll("#messages img, #messages svg, #messages object, #messages embed, #messages iframe").length`)
	if shown != 0 || strings.Contains(c.text(t, `document.title`), "ran") {
		t.Errorf("the SVG was shown inline (%d elements) or ran", shown)
	}
}

func filesInHistory(t *testing.T, tab context.Context, w size) {
	store := &fileStore{memTranscripts: &memTranscripts{}, files: map[string][][]platform.LineFile{}, data: map[string][]byte{
		"sha-png": platformtest.SamplePNG(), "sha-pdf": []byte("%PDF-1.4\n"),
	}}
	now := time.Now()
	store.addWithFiles(Home.Key(), Line{Role: "user", Text: "", ID: eventID(Home.Key(), "p1"), Time: now},
		platform.LineFile{Ref: "sha-png", Name: "photo.png", MediaType: "image/png", Size: int64(len(platformtest.SamplePNG()))})
	store.addWithFiles(Home.Key(), Line{Role: "assistant", Text: "here it is", Time: now},
		platform.LineFile{Ref: "sha-pdf", Name: "notes.pdf", MediaType: "application/pdf", Size: 9})
	store.addWithFiles(Home.Key(), Line{Role: "tool", Tool: "send_file", Call: "call", CallID: "s1", Detail: `{"path":"out.png"}`, Time: now})
	store.addWithFiles(Home.Key(), Line{Role: "tool", Tool: "send_file", Call: "result", CallID: "s1", Detail: "sent", Time: now},
		platform.LineFile{Ref: "sha-png", Name: "out.png", MediaType: "image/png", Size: int64(len(platformtest.SamplePNG()))})
	c := openChatOn(t, tab, store, store.memTranscripts, w.width, w.height)
	c.poll(t, "the photo's thumbnail, the document's link and the picture a tool sent, from the store", `(() => {
		const img = document.querySelector("#messages li.user .file-image img"), a = document.querySelector("#messages li.assistant a.file");
		const sent = document.querySelector("#messages li.tool .tool-files .file-image img");
		return img && img.complete && img.naturalWidth === 6 && a && a.innerText.includes("notes.pdf · 9 bytes")
			&& sent && sent.complete && sent.naturalWidth === 6 && sent.alt === "out.png"; })()`)
}

func notStoredComesBack(t *testing.T, tab context.Context, w size) {
	c := openChat(t, tab, &memTranscripts{}, w.width, w.height)
	c.refuse <- errors.New("disk full")
	c.do(t, js(`const dt = new DataTransfer(); dt.items.add(`+pngFile("image.png")+`);
		document.getElementById("input").dispatchEvent(new ClipboardEvent("paste", {clipboardData: dt, bubbles: true, cancelable: true}))`))
	c.poll(t, "the chip", `document.querySelectorAll("#chips .chip").length === 1`)
	c.do(t, chromedp.SendKeys(chromedp.CSS("#input"), "look"), enter())
	c.poll(t, "the refusal in one line, the words and the picture back to send again", `document.getElementById("status").innerText === "⚠ not stored, please send again: disk full"
		&& document.getElementById("input").value === "look" && document.querySelectorAll("#chips .chip img").length === 1
		&& document.querySelectorAll("#messages li.user").length === 0`)
	first := testutil.Receive(t, c.refused, "the refused message")
	c.do(t, enter())
	if ev := c.said(t); ev.Text != "look" || len(ev.Attachments) != 1 || ev.ID != first.ID {
		t.Errorf("sent again as %+v, want it with the id %s it was first sent with (the gateway drops a repeat)", ev, first.ID)
	}
	c.poll(t, "the message shown once, stored", `document.querySelectorAll("#messages li.user").length === 1 && document.getElementById("status").innerText === ""`)
}

func sentFileOnceStored(t *testing.T, tab context.Context, w size) {
	store := &fileStore{memTranscripts: &memTranscripts{}, files: map[string][][]platform.LineFile{}, data: map[string][]byte{"sha-png": platformtest.SamplePNG()}}
	c := openChatOn(t, tab, store, store.memTranscripts, w.width, w.height)
	c.sendFile(t, "chart.png", "image/png", "", platformtest.SamplePNG())
	c.poll(t, "the picture sent", `document.querySelectorAll("#messages img[alt='chart.png']").length === 1`)
	// The turn goes on: the store has the file with the tool's result,
	// and the answer reloads the transcript.
	now := time.Now()
	store.addWithFiles(Home.Key(), Line{Role: "tool", Tool: "send_file", Call: "call", CallID: "s1", Detail: `{"path":"chart.png"}`, Time: now})
	store.addWithFiles(Home.Key(), Line{Role: "tool", Tool: "send_file", Call: "result", CallID: "s1", Detail: "sent", Time: now},
		platform.LineFile{Ref: "sha-png", Name: "chart.png", MediaType: "image/png", Size: int64(len(platformtest.SamplePNG()))})
	store.add(Home.Key(), Line{Role: "assistant", Text: "sent you the chart", Time: now})
	if _, err := c.a.Send(testutil.Context(t, 0), Home, "sent you the chart"); err != nil {
		t.Fatal(err)
	}
	c.poll(t, "the picture once, in the tool's card", `document.querySelectorAll("#messages img[alt='chart.png']").length === 1
		&& document.querySelectorAll("#messages li.tool .tool-files img[alt='chart.png']").length === 1 && document.body.innerText.includes("sent you the chart")`)
}
