package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/baton-agent/baton/internal/platform"
)

// Files both ways: the page uploads what the person attaches (POST
// /upload, multipart), and shows what baton sends (GET /file/{ref}): a
// picture as a picture, anything else as a download.

const (
	// DefaultMaxFile is the per-file bound, both ways, unless
	// Config.MaxFile says otherwise.
	DefaultMaxFile = 25 << 20
	// MaxFilesPerMessage is how many files one message may carry.
	MaxFilesPerMessage = 10
	// maxFileName bounds a file name, in bytes.
	maxFileName = 255
	// display names the web chat in a refusal ("over the 25 MB limit for
	// files from the web chat").
	display = "the web chat"
	// spoolPattern names an upload waiting in Config.SpoolDir.
	spoolPattern = "baton-upload-*"
)

// pageFile is a file as the page shows it: URL serves its bytes (none
// for one the page itself attached, shown from the browser's copy).
type pageFile struct {
	Name  string `json:"name"`
	Type  string `json:"type,omitempty"`
	Size  int64  `json:"size"`
	URL   string `json:"url,omitempty"`
	Image bool   `json:"image,omitempty"` // shown as a picture: PNG, JPEG, GIF or WebP only
}

// served is a file baton sent this run, kept (its Open, not its bytes)
// so the page can fetch it.
type served struct {
	key  string
	file platform.File
}

func (a *Adapter) maxFile() int64 { return a.cfg.MaxFile }

// MaxUpload is the largest file baton sends to the page: the same bound
// as for a file the page sends.
func (a *Adapter) MaxUpload() int64 { return a.maxFile() }

// SendFile shows a file in every open page, as Send shows text (the same
// delivery: once a page says it showed it, one id for every try): a
// picture (File.IsImage) as a preview, anything else as a download link
// with its name and size. The page fetches the bytes from the adapter,
// which reads them from the store (File.Open) when asked.
func (a *Adapter) SendFile(ctx context.Context, to platform.Address, f platform.File) (string, error) {
	if err := platform.CheckUpload(display, f, a.MaxUpload()); err != nil {
		return "", err
	}
	id := messageID(ctx, to)
	a.mu.Lock()
	makeRoom(a.served, id)
	a.served[id] = served{key: to.Key(), file: f}
	a.mu.Unlock()
	fr := frame{Type: "message", Key: to.Key(), Role: "assistant", Text: f.Caption, HTML: renderMarkdown(f.Caption), ID: id, At: time.Now().UnixMilli(),
		File: &pageFile{Name: f.Name, Type: f.MediaType, Size: f.Size, URL: fileURL(to.Key(), id), Image: f.IsImage()}}
	return a.deliver(ctx, to, fr)
}

func fileURL(key, ref string) string {
	return "/file/" + url.PathEscape(ref) + "?key=" + url.QueryEscape(key)
}

// pageFiles are a line's stored files as the page shows them.
func pageFiles(key string, files []platform.LineFile) []pageFile {
	var out []pageFile
	for _, f := range files {
		pf := pageFile{Name: f.Name, Type: f.MediaType, Size: f.Size, URL: fileURL(key, f.Ref)}
		pf.Image = platform.File{MediaType: f.MediaType}.IsImage()
		out = append(out, pf)
	}
	return out
}

// view is the transcript of key as the page shows it, with its files
// where the store keeps them (served when Transcripts is a
// platform.FileOpener).
func (a *Adapter) view(ctx context.Context, key string) ([]pageLine, error) {
	lines, err := a.cfg.Transcripts.View(ctx, key)
	if err != nil {
		return nil, err
	}
	out := pageLines(key, lines)
	for i, l := range lines {
		out[i].Files = pageFiles(key, l.Files)
	}
	return out, nil
}

// serveFile answers GET /file/{ref}?key=: a file sent this run, or one
// the store keeps. A picture is shown inline; anything else (SVG and HTML
// included) only downloads, under a policy that runs nothing.
func (a *Adapter) serveFile(w http.ResponseWriter, r *http.Request) {
	ref, key := r.PathValue("ref"), r.URL.Query().Get("key")
	a.mu.Lock()
	s, ok := a.served[ref]
	a.mu.Unlock()
	f := s.file
	switch {
	case ok && s.key == key:
	case len(key) <= MaxKey && len(ref) <= MaxKey:
		ft, can := a.cfg.Transcripts.(platform.FileOpener)
		if !can {
			http.Error(w, "404: no such file (it was sent before the gateway restarted)", http.StatusNotFound)
			return
		}
		var err error
		if f, err = ft.OpenFile(r.Context(), key, ref); err != nil {
			a.log.Debug("web: open a stored file", "key", key, "err", err)
			http.Error(w, "404: no such file", http.StatusNotFound)
			return
		}
	default:
		http.Error(w, "404: no such file", http.StatusNotFound)
		return
	}
	body, err := f.Open(r.Context())
	if err != nil {
		a.log.Warn("web: read a file to serve", "name", f.Name, "err", err)
		http.Error(w, "503: the file cannot be read now: "+err.Error(), http.StatusServiceUnavailable)
		return
	}
	defer body.Close()
	h := w.Header()
	// Nothing served here runs: no script, no plugin, no framing, and
	// the type is never guessed from the bytes.
	h.Set("Content-Security-Policy", "default-src 'none'; img-src 'self'; style-src 'unsafe-inline'; sandbox; frame-ancestors 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	disposition, ctype := "attachment", "application/octet-stream"
	if f.IsImage() {
		disposition, ctype = "inline", strings.ToLower(f.MediaType)
	}
	h.Set("Content-Type", ctype)
	h.Set("Content-Disposition", mime.FormatMediaType(disposition, map[string]string{"filename": f.Name}))
	if f.Size > 0 {
		h.Set("Content-Length", fmt.Sprint(f.Size))
	}
	if _, err := io.Copy(w, body); err != nil {
		a.log.Debug("web: serve a file", "name", f.Name, "err", err)
	}
}

// sameOrigin reports whether a request signed in by its cookie comes from
// the page itself: a page on another local port is the same site to the
// cookie (SameSite does not keep it out) but not the same origin. A
// program with the token in its Authorization header needs no Origin.
func sameOrigin(r *http.Request) bool {
	if _, bearer := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); bearer {
		return true
	}
	o, err := url.Parse(r.Header.Get("Origin"))
	return err == nil && o.Host != "" && strings.EqualFold(o.Host, r.Host)
}

// upload is one message from the page with files, spooled.
type pageUpload struct {
	key, id, text, tab string
	files              []spooled
}

type spooled struct {
	path string
	att  platform.Attachment
}

// uploadError is a refusal of an upload, with its HTTP status; its text
// is the one line the page shows.
type uploadError struct {
	status int
	err    error
}

func (e *uploadError) Error() string { return e.err.Error() }
func (e *uploadError) Unwrap() error { return e.err }

func refuse(status int, format string, args ...any) error {
	return &uploadError{status: status, err: fmt.Errorf(format, args...)}
}

// serveUpload answers POST /upload: a message with files, multipart
// (fields key, id, text, tab; files under "file", a pasted picture under
// "photo"). Each file is spooled to a temporary file, bounded; the
// message goes to the gateway, whose Receive reads the files (Open) as it
// stores the event; the spool is removed once Receive returned; only then
// is the request answered, with the stored time.
func (a *Adapter) serveUpload(w http.ResponseWriter, r *http.Request) {
	up, err := a.readUpload(w, r)
	defer func() {
		for _, f := range up.files {
			_ = os.Remove(f.path)
		}
	}()
	if err == nil {
		err = a.receiveUpload(r.Context(), up)
	}
	if err != nil {
		status := http.StatusBadRequest
		var ue *uploadError
		if errors.As(err, &ue) {
			status = ue.status
		}
		var tl *platform.TooLargeError
		if errors.As(err, &tl) {
			status = http.StatusRequestEntityTooLarge
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, oneLine(err.Error())+"\n")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(frame{Type: "ack", Key: up.key, ID: up.id, At: time.Now().UnixMilli()})
}

// oneLine is s on one line, for a refusal the page shows as it is.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// readUpload reads and spools an upload; what it spooled is returned
// even with an error, to be removed.
func (a *Adapter) readUpload(w http.ResponseWriter, r *http.Request) (pageUpload, error) {
	var up pageUpload
	max := a.maxFile()
	// Bounded as a whole too: the files, the text and the form around them.
	r.Body = http.MaxBytesReader(w, r.Body, MaxFilesPerMessage*(max+1)+2*MaxText+64<<10)
	mr, err := r.MultipartReader()
	if err != nil {
		return up, refuse(http.StatusBadRequest, "upload: want a multipart form: %v", err)
	}
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			return up, nil
		}
		if err != nil {
			var mbe *http.MaxBytesError
			if errors.As(err, &mbe) {
				return up, refuse(http.StatusRequestEntityTooLarge, "the message's files are over %s together", platform.FormatSize(mbe.Limit))
			}
			return up, refuse(http.StatusBadRequest, "upload: read the form: %v", err)
		}
		field := part.FormName()
		if field == "file" || field == "photo" {
			if len(up.files) == MaxFilesPerMessage {
				return up, refuse(http.StatusRequestEntityTooLarge, "at most %d files go with one message", MaxFilesPerMessage)
			}
			s, err := a.spool(part, field, max)
			if s.path != "" {
				up.files = append(up.files, s)
			}
			if err != nil {
				return up, err
			}
			continue
		}
		v, err := io.ReadAll(io.LimitReader(part, MaxText+1))
		if err != nil {
			return up, refuse(http.StatusBadRequest, "upload: read %s: %v", field, err)
		}
		switch field {
		case "key":
			up.key = string(v)
		case "id":
			up.id = string(v)
		case "text":
			up.text = string(v)
		case "tab":
			up.tab = string(v)
		}
	}
}

// spool copies one file of an upload to a temporary file, refusing it
// past max bytes.
func (a *Adapter) spool(part *multipart.Part, field string, max int64) (spooled, error) {
	name, media := cleanName(part.FileName()), part.Header.Get("Content-Type")
	kind := platform.KindDocument
	if field == "photo" {
		kind = platform.KindPhoto
	}
	if name == "" {
		name = string(kind)
	}
	tmp, err := os.CreateTemp(a.cfg.SpoolDir, spoolPattern)
	if err != nil {
		return spooled{}, refuse(http.StatusServiceUnavailable, "not stored, please send again: cannot keep %s for now: %v", name, err)
	}
	s := spooled{path: tmp.Name()}
	n, err := io.Copy(tmp, io.LimitReader(part, max+1))
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	switch {
	case n > max:
		return s, &platform.TooLargeError{Service: display, Name: name, Limit: max}
	case err != nil:
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return s, refuse(http.StatusRequestEntityTooLarge, "the message's files are over %s together", platform.FormatSize(mbe.Limit))
		}
		return s, refuse(http.StatusBadRequest, "upload: read %s: %v", name, err)
	}
	path := s.path
	s.att = platform.Attachment{Kind: kind, Name: name, MediaType: media, Size: n,
		Open: func(context.Context) (io.ReadCloser, error) {
			f, err := os.Open(path)
			if err != nil {
				return nil, fmt.Errorf("web: the upload of %s is gone (read it while the event is received): %w", name, err)
			}
			return f, nil
		}}
	return s, nil
}

// cleanName is the base of a file name a browser gave, valid UTF-8,
// without control characters, at most maxFileName bytes.
func cleanName(name string) string {
	name = filepath.Base(strings.ReplaceAll(name, `\`, "/"))
	if name == "." || name == "/" {
		return ""
	}
	name = strings.ToValidUTF8(name, "�")
	name = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return -1
		}
		return r
	}, name)
	for len(name) > maxFileName {
		_, size := utf8.DecodeLastRuneInString(name)
		name = name[:len(name)-size]
	}
	return name
}

// receiveUpload hands the upload to the gateway as say does a message.
func (a *Adapter) receiveUpload(ctx context.Context, up pageUpload) error {
	f := frame{Type: "say", Key: up.key, ID: up.id, Text: up.text}
	if why := sayTooBig(f); why != "" {
		return refuse(http.StatusRequestEntityTooLarge, "%s", why)
	}
	addr, err := platform.ParseKey(up.key)
	if err != nil || addr.Platform != Name {
		return refuse(http.StatusBadRequest, "not a web conversation: %q", up.key)
	}
	if up.id == "" || (strings.TrimSpace(up.text) == "" && len(up.files) == 0) {
		return refuse(http.StatusBadRequest, "upload: needs text or a file, and an id")
	}
	a.mu.Lock()
	h := a.recv
	if h != nil && len(up.tab) <= MaxID {
		a.rememberAsker(up.key, up.tab)
	}
	a.mu.Unlock()
	if h == nil {
		return refuse(http.StatusServiceUnavailable, "not ready yet; try again")
	}
	ev := platform.Event{At: addr, SenderID: Owner, Sender: Owner, Text: up.text, ID: eventID(up.key, up.id), Time: time.Now()}
	files := make([]pageFile, 0, len(up.files))
	for _, s := range up.files {
		ev.Attachments = append(ev.Attachments, s.att)
		files = append(files, pageFile{Name: s.att.Name, Type: s.att.MediaType, Size: s.att.Size})
	}
	if err := h.Receive(ctx, ev); err != nil {
		var tl *platform.TooLargeError
		if errors.As(err, &tl) {
			return err
		}
		return refuse(http.StatusServiceUnavailable, "not stored, please send again: %v", err)
	}
	// Every other page shows what was said, its files by name and size.
	echo := frame{Type: "said", Key: up.key, ID: up.id, Text: up.text, At: ev.Time.UnixMilli(), Files: files}
	a.mu.Lock()
	for other := range a.clients {
		if other.tab != up.tab || up.tab == "" {
			other.send(echo)
		}
	}
	a.mu.Unlock()
	return nil
}
