package web

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/baton-agent/baton/internal/platform"
	"github.com/baton-agent/baton/internal/platform/platformtest"
	"github.com/baton-agent/baton/internal/testutil"
)

type uploadPart struct {
	field, name, media string
	data               []byte
}

type response struct {
	*http.Response
	body string
}

// upload posts a message with files as the page does, with the token as
// a program would (a page's cookie is checked in TestUploadOnlyFromThePage).
func upload(ctx context.Context, a *Adapter, fields map[string]string, parts ...uploadPart) (response, error) {
	return uploadWith(ctx, a, http.Header{"Authorization": {"Bearer " + testToken}}, fields, parts...)
}

func uploadWith(ctx context.Context, a *Adapter, hdr http.Header, fields map[string]string, parts ...uploadPart) (response, error) {
	var b bytes.Buffer
	mw := multipart.NewWriter(&b)
	for _, k := range []string{"key", "id", "text", "tab"} {
		if v, ok := fields[k]; ok {
			_ = mw.WriteField(k, v)
		}
	}
	for _, p := range parts {
		h := textproto.MIMEHeader{}
		h.Set("Content-Disposition", fmt.Sprintf(`form-data; name=%q; filename=%q`, p.field, p.name))
		h.Set("Content-Type", p.media)
		w, _ := mw.CreatePart(h)
		_, _ = w.Write(p.data)
	}
	_ = mw.Close()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+a.Addr()+"/upload", &b)
	if err != nil {
		return response{}, err
	}
	req.Header = hdr.Clone()
	req.Header.Set("Content-Type", mw.FormDataContentType())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return response{}, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return response{Response: resp, body: string(body)}, err
}

// fetch gets a path of the adapter with the token.
func fetch(t *testing.T, a *Adapter, path string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequestWithContext(testutil.Context(t, 0), http.MethodGet, "http://"+a.Addr()+path, nil)
	req.Header.Set("Authorization", "Bearer "+testToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// received is a Receiver that reads every file of an event while it
// receives it, as the gateway stores it, and keeps what it read.
type received struct {
	mu     sync.Mutex
	events []platform.Event
	data   [][][]byte
	fail   error
	opens  []func(context.Context) (io.ReadCloser, error)
}

func (r *received) Receive(ctx context.Context, ev platform.Event) error {
	var files [][]byte
	for _, att := range ev.Attachments {
		rc, err := att.Open(ctx)
		if err != nil {
			return err
		}
		b, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			return err
		}
		files = append(files, b)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fail != nil {
		return r.fail
	}
	r.events = append(r.events, ev)
	r.data = append(r.data, files)
	for _, att := range ev.Attachments {
		r.opens = append(r.opens, att.Open)
	}
	return nil
}

func (r *received) Live() {}

func (r *received) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.events)
}

func spoolLeft(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// Files the page sends reach the gateway with the message, their bytes
// read through Open while it is received; a message of files alone is a
// message too; the spool is empty once answered, and an Open after
// Receive finds nothing.
func TestUploadReachesTheGatewayWithItsFiles(t *testing.T) {
	spool := t.TempDir()
	r := &received{}
	a := serve(t, Config{SpoolDir: spool}, r)
	ctx := testutil.Context(t, 0)
	pdf := append([]byte("%PDF-1.7\n"), bytes.Repeat([]byte{0, 1, 2, 0xff}, 40<<10)...)
	png := platformtest.SamplePNG()
	resp, err := upload(ctx, a, map[string]string{"key": Home.Key(), "id": "u1", "text": "look"},
		uploadPart{"file", "report.pdf", "application/pdf", pdf}, uploadPart{"photo", "image.png", "image/png", png})
	if err != nil || resp.StatusCode != http.StatusOK || !strings.Contains(resp.body, `"type":"ack"`) {
		t.Fatalf("upload: %v %v %s", err, resp.Response, resp.body)
	}
	if r.count() != 1 {
		t.Fatalf("%d events received, want 1 before the upload is answered", r.count())
	}
	ev := r.events[0]
	if ev.Text != "look" || ev.ID != eventID(Home.Key(), "u1") || ev.At.Key() != Home.Key() || ev.SenderID != Owner || len(ev.Attachments) != 2 {
		t.Fatalf("event %+v", ev)
	}
	want := []struct {
		kind        platform.AttachmentKind
		name, media string
		data        []byte
	}{{platform.KindDocument, "report.pdf", "application/pdf", pdf}, {platform.KindPhoto, "image.png", "image/png", png}}
	for i, w := range want {
		att := ev.Attachments[i]
		if att.Kind != w.kind || att.Name != w.name || att.MediaType != w.media || att.Size != int64(len(w.data)) || !bytes.Equal(r.data[0][i], w.data) {
			t.Errorf("attachment %d: %+v with %d bytes, want %s %s %s of %d bytes intact", i, att, len(r.data[0][i]), w.kind, w.name, w.media, len(w.data))
		}
	}
	if left := spoolLeft(t, spool); len(left) != 0 {
		t.Errorf("spooled uploads left after the answer: %v", left)
	}
	if _, err := r.opens[0](ctx); err == nil {
		t.Error("an attachment opened after Receive returned: its spool is kept too long")
	}

	resp, err = upload(ctx, a, map[string]string{"key": Home.Key(), "id": "u2"}, uploadPart{"file", "../../etc/notes.txt", "text/plain", []byte("just this")})
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("a message of a file alone: %v %v %s", err, resp.Response, resp.body)
	}
	if ev := r.events[1]; ev.Text != "" || len(ev.Attachments) != 1 || ev.Attachments[0].Name != "notes.txt" {
		t.Errorf("a file alone arrived as %+v", ev)
	}
	resp, _ = upload(ctx, a, map[string]string{"key": Home.Key(), "id": "u3"})
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(resp.body, "needs text or a file") {
		t.Errorf("an empty upload: %d %s", resp.StatusCode, resp.body)
	}
}

// A file over the bound is refused with one line naming it and the
// limit; nothing reaches the gateway and nothing stays spooled. So is a
// message the gateway could not store: the page is told to send again.
func TestUploadRefusals(t *testing.T) {
	spool := t.TempDir()
	r := &received{}
	a := serve(t, Config{SpoolDir: spool, MaxFile: 1 << 10}, r)
	ctx := testutil.Context(t, 0)
	resp, err := upload(ctx, a, map[string]string{"key": Home.Key(), "id": "big", "text": "here"},
		uploadPart{"file", "small.txt", "text/plain", []byte("fits")}, uploadPart{"file", "big.bin", "application/octet-stream", make([]byte, 2<<10)})
	if err != nil {
		t.Fatal(err)
	}
	line := strings.TrimSuffix(resp.body, "\n")
	if resp.StatusCode != http.StatusRequestEntityTooLarge || strings.Contains(line, "\n") || !strings.Contains(line, "big.bin") || !strings.Contains(line, "1 kB limit") {
		t.Errorf("a file over the limit: %d %q, want 413 and one line naming it and the limit", resp.StatusCode, resp.body)
	}
	if r.count() != 0 {
		t.Error("a message with a file over the limit reached the gateway")
	}
	if left := spoolLeft(t, spool); len(left) != 0 {
		t.Errorf("spooled uploads left after a refusal: %v", left)
	}
	many := make([]uploadPart, MaxFilesPerMessage+1)
	for i := range many {
		many[i] = uploadPart{"file", fmt.Sprintf("f%d.txt", i), "text/plain", []byte("x")}
	}
	resp, _ = upload(ctx, a, map[string]string{"key": Home.Key(), "id": "many"}, many...)
	if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(resp.body, fmt.Sprintf("at most %d files", MaxFilesPerMessage)) {
		t.Errorf("too many files: %d %q", resp.StatusCode, resp.body)
	}
	r.mu.Lock()
	r.fail = errors.New("disk full")
	r.mu.Unlock()
	resp, _ = upload(ctx, a, map[string]string{"key": Home.Key(), "id": "fail"}, uploadPart{"file", "a.txt", "text/plain", []byte("x")})
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(resp.body, "not stored, please send again: disk full") {
		t.Errorf("an unstored upload: %d %q, want 503 saying to send again", resp.StatusCode, resp.body)
	}
	if left := spoolLeft(t, spool); len(left) != 0 {
		t.Errorf("spooled uploads left after a failed Receive: %v", left)
	}
	resp, _ = uploadWith(ctx, a, http.Header{}, map[string]string{"key": Home.Key(), "id": "anon", "text": "hi"})
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("an upload without a sign-in: %d", resp.StatusCode)
	}
	if r.count() != 0 {
		t.Errorf("%d refused uploads reached the gateway", r.count())
	}
}

// A signed-in browser's cookie is sent by any page on the same host (a
// page on another local port is the same site): an upload counts only
// from the chat's own page, by its Origin.
func TestUploadOnlyFromThePage(t *testing.T) {
	r := &received{}
	a := serve(t, Config{}, r)
	ctx := testutil.Context(t, 0)
	cookie := cookieName + "=" + a.signIn(time.Now())
	for _, c := range []struct {
		origin string
		want   int
	}{
		{"http://127.0.0.1:1", http.StatusForbidden},
		{"null", http.StatusForbidden},
		{"", http.StatusForbidden},
		{"http://" + a.Addr(), http.StatusOK},
	} {
		hdr := http.Header{"Cookie": {cookie}}
		if c.origin != "" {
			hdr.Set("Origin", c.origin)
		}
		resp, err := uploadWith(ctx, a, hdr, map[string]string{"key": Home.Key(), "id": "o" + c.origin, "text": "hi"})
		if err != nil || resp.StatusCode != c.want {
			t.Errorf("upload from origin %q: %v %v %s, want %d", c.origin, err, resp.Response, resp.body, c.want)
		}
	}
	if r.count() != 1 {
		t.Errorf("%d uploads reached the gateway, want only the page's own", r.count())
	}
}

// A file baton sends shows in the page: a picture inline with its type,
// anything else only as a download (SVG and HTML included), under a
// policy that runs nothing; the frame says which.
func TestSentFilesServedSafely(t *testing.T) {
	a, conn := start(t, func(context.Context, platform.Event) error { return nil })
	if f := roundTrip(t, conn, `{"type":"list"}`); f.Type != "conversations" || f.MaxFile != DefaultMaxFile {
		t.Fatalf("list: %+v, want the per-file bound told", f)
	}
	png := platformtest.SamplePNG()
	svg := []byte(`<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>`)
	for _, c := range []struct {
		name, media   string
		data          []byte
		image         bool
		ctype, inline string
	}{
		{"chart.png", "image/png", png, true, "image/png", "inline"},
		{"report.pdf", "application/pdf", []byte("%PDF-1.4\n"), false, "application/octet-stream", "attachment"},
		{"logo.svg", "image/svg+xml", svg, false, "application/octet-stream", "attachment"},
		{"page.html", "text/html; charset=utf-8", []byte("<script>alert(1)</script>"), false, "application/octet-stream", "attachment"},
	} {
		f := sendFileShown(t, a, conn, Home, platform.File{Name: c.name, MediaType: c.media, Size: int64(len(c.data)), Caption: "see " + c.name,
			Open: func(context.Context) (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(c.data)), nil }})
		if f.File == nil || f.File.Name != c.name || f.File.Size != int64(len(c.data)) || f.File.Image != c.image || f.Text != "see "+c.name {
			t.Errorf("%s sent as %+v (file %+v)", c.name, f, f.File)
			continue
		}
		resp, body := fetch(t, a, f.File.URL)
		h := resp.Header
		if resp.StatusCode != http.StatusOK || body != string(c.data) {
			t.Errorf("GET %s: %d, %d bytes", f.File.URL, resp.StatusCode, len(body))
		}
		if h.Get("Content-Type") != c.ctype || !strings.HasPrefix(h.Get("Content-Disposition"), c.inline+"; filename=") || h.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s served as %q, %q, nosniff %q; want %q, %s", c.name, h.Get("Content-Type"), h.Get("Content-Disposition"), h.Get("X-Content-Type-Options"), c.ctype, c.inline)
		}
		if csp := h.Values("Content-Security-Policy"); len(csp) != 1 || !strings.Contains(csp[0], "sandbox") || !strings.Contains(csp[0], "default-src 'none'") {
			t.Errorf("%s served under the policy %q, want one that runs nothing", c.name, csp)
		}
	}
	if resp, _ := fetch(t, a, "/file/nothing?key="+Home.Key()); resp.StatusCode != http.StatusNotFound {
		t.Errorf("an unknown file: %d", resp.StatusCode)
	}
	resp, err := http.Get("http://" + a.Addr() + "/file/x?key=" + Home.Key())
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("a file without a sign-in: %d", resp.StatusCode)
	}
}

// sendFileShown sends f as the gateway does and acknowledges it as a page.
func sendFileShown(t *testing.T, a *Adapter, c *websocket.Conn, at platform.Address, f platform.File) frame {
	t.Helper()
	sent := make(chan error, 1)
	go func() {
		_, err := a.SendFile(testutil.Context(t, 0), at, f)
		sent <- err
	}()
	fr := readFrame(t, c)
	writeFrame(t, c, frame{Type: "ack", ID: fr.ID})
	if err := testutil.Receive(t, sent, "SendFile to return"); err != nil {
		t.Errorf("SendFile of a file the page showed: %v", err)
	}
	return fr
}

// Every try of one delivery of a file is one message to the page (one
// id, one file kept to serve), as for text.
func TestSentFileOnceByItsDeliveryKey(t *testing.T) {
	a, conn := start(t, func(context.Context, platform.Event) error { return nil })
	ctx := platform.WithDeliveryKey(t.Context(), "out:7")
	file := platform.File{Name: "log.txt", MediaType: "text/plain", Size: 3,
		Open: func(context.Context) (io.ReadCloser, error) { return io.NopCloser(strings.NewReader("log")), nil }}
	var ids []string
	for range 2 {
		sent := make(chan error, 1)
		go func() {
			_, err := a.SendFile(ctx, Home, file)
			sent <- err
		}()
		f := readFrame(t, conn)
		writeFrame(t, conn, frame{Type: "ack", ID: f.ID})
		if err := testutil.Receive(t, sent, "SendFile to return"); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, f.ID)
	}
	a.mu.Lock()
	kept := len(a.served)
	a.mu.Unlock()
	if ids[0] != ids[1] || !strings.HasPrefix(ids[0], "d") || kept != 1 {
		t.Errorf("two tries of one delivery sent as %q, %d files kept; want one id and one file", ids, kept)
	}
}

// What a tab sends with files shows in the other tabs (by name and size:
// the bytes are the store's), not again in its own.
func TestUploadShownInOtherTabs(t *testing.T) {
	a := serve(t, Config{}, &received{})
	own, other := connectTab(t, a, "tab-a"), connectTab(t, a, "tab-b")
	settled(t, own)
	settled(t, other)
	resp, err := upload(testutil.Context(t, 0), a, map[string]string{"key": Home.Key(), "id": "u9", "text": "see", "tab": "tab-a"},
		uploadPart{"file", "a.txt", "text/plain", []byte("abc")})
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("upload: %v %s", err, resp.body)
	}
	f := readFrame(t, other)
	if f.Type != "said" || f.ID != "u9" || f.Text != "see" || len(f.Files) != 1 || f.Files[0].Name != "a.txt" || f.Files[0].Size != 3 || f.Files[0].URL != "" {
		t.Errorf("the other tab was told %+v", f)
	}
	// The tab that sent it hears nothing of it: the next frame it reads
	// answers what it asks now.
	if f := roundTrip(t, own, `{"type":"list"}`); f.Type != "conversations" {
		t.Errorf("the sending tab was told %+v", f)
	}
}
