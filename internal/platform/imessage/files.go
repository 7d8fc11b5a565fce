package imessage

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/baton-agent/baton/internal/formstream"
	"github.com/baton-agent/baton/internal/platform"
	"github.com/baton-agent/baton/internal/platform/styled"
)

// MaxDownload and MaxUpload bound the files baton takes from and sends
// through BlueBubbles: 100 MB. iMessage itself carries files of several
// gigabytes (larger ones through iCloud), but a file the Mac must hold,
// convert and relay whole is kept to a size a phone sends in a chat.
const (
	MaxDownload = 100 << 20
	MaxUpload   = 100 << 20
)

// display is how people know the service, in refusals.
const display = "iMessage"

var (
	_ platform.DownloadLimiter = (*Adapter)(nil)
	_ platform.FileSender      = (*Adapter)(nil)
)

// MaxDownload is 100 MB (see the constant).
func (a *Adapter) MaxDownload() int64 { return MaxDownload }

// MaxUpload is 100 MB (see the constant).
func (a *Adapter) MaxUpload() int64 { return MaxUpload }

// wireAttachment is the part of a BlueBubbles attachment baton reads.
type wireAttachment struct {
	GUID           string `json:"guid"`
	TransferName   string `json:"transferName"`
	MimeType       string `json:"mimeType"`
	TotalBytes     int64  `json:"totalBytes"`
	HideAttachment bool   `json:"hideAttachment"` // a link preview's payload, not a file someone sent
}

// attachments lists a message's files, each opened through this adapter.
func (a *Adapter) attachments(m message) []platform.Attachment {
	var out []platform.Attachment
	for _, w := range m.Attachments {
		if w.GUID == "" || w.HideAttachment {
			continue
		}
		att := platform.Attachment{Kind: kindOf(w.MimeType, m.IsAudioMessage), Name: w.TransferName,
			MediaType: w.MimeType, Size: w.TotalBytes}
		label := w.TransferName
		if label == "" {
			label = "the " + string(att.Kind)
		}
		att.Open = func(ctx context.Context) (io.ReadCloser, error) { return a.download(ctx, w, label) }
		out = append(out, att)
	}
	return out
}

// kindOf is what a file was sent as, by the type the server tells: an
// audio message recorded in Messages is a voice message.
func kindOf(mimeType string, audioMessage bool) platform.AttachmentKind {
	major, _, _ := strings.Cut(strings.ToLower(mimeType), "/")
	switch {
	case major == "audio" && audioMessage:
		return platform.KindVoice
	case major == "audio":
		return platform.KindAudio
	case major == "image":
		return platform.KindPhoto
	case major == "video":
		return platform.KindVideo
	}
	return platform.KindDocument
}

// download reads an attachment's bytes from the configured server's
// /api/v1/attachment/{guid}/download, the one place BlueBubbles serves
// them. The server converts what phones cannot show elsewhere (HEIC
// pictures to JPEG, CAF audio to MP3) on the way.
func (a *Adapter) download(ctx context.Context, w wireAttachment, label string) (io.ReadCloser, error) {
	if err := platform.CheckDownload(display, label, w.TotalBytes, MaxDownload); err != nil {
		return nil, err
	}
	path := "/api/v1/attachment/" + url.PathEscape(w.GUID) + "/download"
	resp, err := a.request(ctx, http.MethodGet, path, "", nil)
	if err != nil {
		return nil, fmt.Errorf("imessage: download %s: %w", label, err)
	}
	if resp.StatusCode == http.StatusNotFound {
		// Deleted on the Mac: no retry brings it back.
		resp.Body.Close()
		return nil, platform.Permanent(fmt.Errorf("imessage: download %s: the server no longer has it (HTTP 404)", label))
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		return nil, fmt.Errorf("imessage: download %s: %w", label, a.answer(path, resp, nil))
	}
	return platform.LimitDownload(resp.Body, display, label, MaxDownload), nil
}

// SendFile sends f as an attachment (POST /api/v1/message/attachment, a
// multipart form): iMessage shows a picture as a picture and anything
// else as a file with its name. BlueBubbles takes no text with an
// attachment, so a caption follows as a text message. The tempGuid of a
// stored delivery comes from its key, so the server refuses a try while
// another of it is still being sent; BlueBubbles keeps no record of sends
// it finished, so a try after a lost answer may show the file twice.
func (a *Adapter) SendFile(ctx context.Context, to platform.Address, f platform.File) (string, error) {
	if err := check(to); err != nil {
		return "", err
	}
	if err := platform.CheckUpload(display, f, MaxUpload); err != nil {
		return "", err
	}
	guid, sent := a.sentFiles.get(ctx, to)
	if !sent {
		var err error
		if guid, err = a.upload(ctx, to, f); err != nil {
			return "", fmt.Errorf("imessage: send %s: %w", f.Name, err)
		}
		a.sentFiles.put(ctx, to, guid)
	}
	caption := strings.TrimSpace(styled.Render(f.Caption, nil).Plain)
	if caption == "" {
		return guid, nil
	}
	// The file is sent: a try after the caption failed sends the caption
	// alone (in this run; see sentFiles).
	if _, err := a.sendText(ctx, to, tempGUIDFor(ctx, to, 1), caption); err != nil {
		return "", fmt.Errorf("imessage: send the caption of %s: %w", f.Name, err)
	}
	return guid, nil
}

// upload posts f's bytes as they are read from the store, in one try.
func (a *Adapter) upload(ctx context.Context, to platform.Address, f platform.File) (string, error) {
	body, err := f.Open(ctx)
	if err != nil {
		return "", fmt.Errorf("read it: %w", err)
	}
	name := f.Name
	if strings.TrimSpace(name) == "" {
		name = "file" // BlueBubbles needs a name
	}
	defer body.Close()
	form, contentType := formstream.New(formstream.Field("chatGuid", to.Chat), formstream.Field("tempGuid", tempGUIDFor(ctx, to, 0)),
		formstream.Field("name", name), formstream.Field("method", a.method()),
		formstream.Part{Name: "attachment", Filename: name, MediaType: f.MediaType, Body: body})
	defer form.Close() // a request that ends early stops the writer
	// The server answers once Messages has sent the file on to Apple:
	// three seconds more per megabyte (about 3 Mbit/s up from the Mac).
	ctx, cancel := context.WithTimeout(ctx, a.cfg.RequestTimeout+time.Duration(f.Size>>20)*3*time.Second)
	defer cancel()
	const path = "/api/v1/message/attachment"
	resp, err := a.request(ctx, http.MethodPost, path, contentType, form)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var sent struct {
		GUID string `json:"guid"`
	}
	if err := a.answer(path, resp, &sent); err != nil {
		return "", err
	}
	return sent.GUID, nil
}

// safeName keeps a file name from breaking the part's header.
func safeName(name string) string {
	return strings.Map(func(r rune) rune {
		if r < ' ' || r == '"' || r == '\\' {
			return '_'
		}
		return r
	}, name)
}

// method is how the server sends: through the Private API when it has it.
func (a *Adapter) method() string {
	if a.cfg.PrivateAPI {
		return "private-api"
	}
	return "apple-script"
}

// tempGUIDFor is the tempGuid of part of a stored delivery (the same on
// every try of it), or a new one for a send not stored.
func tempGUIDFor(ctx context.Context, to platform.Address, part int) string {
	if tok, ok := platform.DeliveryToken(ctx, to, part, 24); ok {
		return "baton-" + tok
	}
	return tempGUID()
}

// sentFiles remembers, by delivery, the files this run sent whose
// caption is still to go, so a try after a failed caption does not send
// the file again.
type sentFiles struct {
	mu   sync.Mutex
	guid map[string]string
}

// maxSentFiles bounds the deliveries remembered.
const maxSentFiles = 64

func (s *sentFiles) get(ctx context.Context, to platform.Address) (string, bool) {
	tok, ok := platform.DeliveryToken(ctx, to, 0, 64)
	if !ok {
		return "", false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	g, ok := s.guid[tok]
	return g, ok
}

func (s *sentFiles) put(ctx context.Context, to platform.Address, guid string) {
	tok, ok := platform.DeliveryToken(ctx, to, 0, 64)
	if !ok {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.guid == nil || len(s.guid) >= maxSentFiles {
		s.guid = map[string]string{}
	}
	s.guid[tok] = guid
}
