package matrix

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"image"
	_ "image/gif" // decoders for the size of a picture sent (m.image's info.w/h)
	_ "image/jpeg"
	_ "image/png"
	"io"
	"mime"
	"net/http"
	"regexp"
	"strings"
	"time"

	_ "golang.org/x/image/webp"
	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/id"

	"github.com/baton-agent/baton/internal/platform"
)

// DefaultMaxMedia is the file size limit assumed when the homeserver
// does not say its own (m.upload.size): Synapse's default, 50 MB.
const DefaultMaxMedia = 50 << 20

// display is how people know the service, in refusals.
const display = "Matrix"

var (
	_ platform.DownloadLimiter = (*Adapter)(nil)
	_ platform.FileSender      = (*Adapter)(nil)
)

// MaxDownload is the homeserver's m.upload.size, as Run last read it from
// the media config, or DefaultMaxMedia: a file larger than the homeserver
// takes cannot have been sent through it.
func (a *Adapter) MaxDownload() int64 { return a.mediaLimit() }

// MaxUpload is the homeserver's m.upload.size (see MaxDownload).
func (a *Adapter) MaxUpload() int64 { return a.mediaLimit() }

func (a *Adapter) mediaLimit() int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.uploadSize > 0 {
		return a.uploadSize
	}
	return DefaultMaxMedia
}

// readMediaConfig asks the homeserver its upload limit (GET
// /_matrix/client/v1/media/config). A homeserver that does not say keeps
// the default: the limit is a courtesy to the person, not a safeguard
// (LimitDownload bounds every download anyway).
func (a *Adapter) readMediaConfig(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, a.cfg.RequestTimeout)
	defer cancel()
	var resp struct {
		UploadSize int64 `json:"m.upload.size"`
	}
	_, err := a.cli.MakeFullRequest(ctx, mautrix.FullRequest{
		Method:       http.MethodGet,
		URL:          a.cli.BuildClientURL("v1", "media", "config"),
		ResponseJSON: &resp,
	})
	if err != nil {
		a.log.Debug("matrix: the media config is not known; files are bounded by the default", "limit", DefaultMaxMedia, "err", failure("media config", err, true))
		return
	}
	if resp.UploadSize > 0 {
		a.mu.Lock()
		a.uploadSize = resp.UploadSize
		a.mu.Unlock()
	}
}

// fileInfo is a file message's info, as the spec names its fields.
type fileInfo struct {
	MimeType string `json:"mimetype,omitempty"`
	Size     int64  `json:"size,omitempty"`
	W        int    `json:"w,omitempty"`
	H        int    `json:"h,omitempty"`
}

// fileKinds are the message types that carry a file, and what each is.
var fileKinds = map[string]platform.AttachmentKind{
	"m.image": platform.KindPhoto,
	"m.file":  platform.KindDocument,
	"m.audio": platform.KindAudio,
	"m.video": platform.KindVideo,
}

// fileOf reads a file message: its attachment and its caption. The spec's
// caption rule (v1.10): when filename is set and differs from body, body
// is a caption; otherwise body is the file's name. ok is false for a
// message that carries no file.
func (a *Adapter) fileOf(c messageContent) (att platform.Attachment, caption string, ok bool) {
	kind, isFile := fileKinds[c.MsgType]
	if !isFile {
		return att, "", false
	}
	if c.MsgType == "m.audio" && (c.Voice != nil || c.VoiceMSC != nil) {
		kind = platform.KindVoice // Element's voice message
	}
	name := c.Body
	if c.FileName != "" {
		name = c.FileName
		if c.Body != c.FileName {
			caption = c.Body
		}
	}
	att = platform.Attachment{Kind: kind, Name: name}
	if c.Info != nil {
		att.MediaType, att.Size = c.Info.MimeType, max(c.Info.Size, 0)
	}
	label := name
	if label == "" {
		label = "the " + string(kind)
	}
	mxc, err := contentURI(c.URL)
	switch {
	case c.URL == "" && len(c.File) > 0:
		err = errors.New("it is encrypted (encrypted rooms are not supported)")
	case err == nil:
		att.ID = c.URL // the same upload forwarded keeps its mxc URI
	}
	att.Open = func(ctx context.Context) (io.ReadCloser, error) {
		if err != nil {
			return nil, platform.Permanent(fmt.Errorf("matrix: download %s: %w", label, err))
		}
		return a.download(ctx, mxc, att.Size, label)
	}
	return att, caption, true
}

// mediaIDChars are what a media id and a server name may hold (the
// spec's media id grammar; a server name's host, port and IPv6 brackets),
// so a URI cannot steer the download elsewhere on the homeserver.
var (
	mediaIDChars    = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)
	serverNameChars = regexp.MustCompile(`^[A-Za-z0-9.:\[\]-]+$`)
)

// contentURI reads an mxc://server/media-id URI: the only kind of file
// link baton follows, and only through the homeserver it talks to.
func contentURI(raw string) (id.ContentURI, error) {
	if !strings.HasPrefix(raw, "mxc://") {
		return id.ContentURI{}, errors.New("its link is not an mxc:// URI")
	}
	u, err := id.ParseContentURI(raw)
	if err != nil || !serverNameChars.MatchString(u.Homeserver) || !mediaIDChars.MatchString(u.FileID) {
		return id.ContentURI{}, errors.New("its mxc:// URI is malformed")
	}
	return u, nil
}

// download reads a file through the homeserver's authenticated media
// (GET /_matrix/client/v1/media/download/{server}/{id}, with the bot's
// token): the homeserver fetches a remote server's file itself. A file
// over the limit is refused before anything is asked when its size was
// told, and cut off past it when not.
func (a *Adapter) download(ctx context.Context, mxc id.ContentURI, size int64, label string) (io.ReadCloser, error) {
	limit := a.MaxDownload()
	if err := platform.CheckDownload(display, label, size, limit); err != nil {
		return nil, err
	}
	resp, err := a.cli.Download(ctx, mxc)
	if err != nil {
		if resp != nil {
			resp.Body.Close()
		}
		return nil, fmt.Errorf("matrix: download %s: %w", label, failure("download", err, false))
	}
	if resp.ContentLength > 0 {
		if err := platform.CheckDownload(display, label, resp.ContentLength, limit); err != nil {
			resp.Body.Close()
			return nil, err
		}
	}
	return platform.LimitDownload(resp.Body, display, label, limit), nil
}

// fileContent is a file message's content as baton sends it.
type fileContent struct {
	MsgType       string     `json:"msgtype"`
	Body          string     `json:"body"`
	FileName      string     `json:"filename"`
	Format        string     `json:"format,omitempty"`
	FormattedBody string     `json:"formatted_body,omitempty"`
	URL           string     `json:"url"`
	Info          fileInfo   `json:"info"`
	RelatesTo     *relatesTo `json:"m.relates_to,omitempty"`
	Mentions      struct{}   `json:"m.mentions"`
	// A spoken answer is an m.audio voice message, as Element marks its
	// own (MSC3245, with MSC1767's audio block).
	Voice *struct{} `json:"org.matrix.msc3245.voice,omitempty"`
	Audio *struct{} `json:"org.matrix.msc1767.audio,omitempty"`
}

// SendFile uploads a file to the homeserver (POST /_matrix/media/v3/upload)
// and posts it as m.image (a picture, with its width and height when its
// header tells them) or m.file, into the thread when sent to one. The
// caption follows the spec's rule: body is the caption and filename the
// name; without a caption body is the name. With a delivery key the
// event's transaction id is derived from it, so a try after a lost answer
// or a restart shows the file once (the upload is repeated; the event is
// not). A file over the homeserver's limit is refused before it is read.
func (a *Adapter) SendFile(ctx context.Context, to platform.Address, f platform.File) (string, error) {
	r, err := room(to)
	if err != nil {
		return "", err
	}
	if err := platform.CheckUpload(display, f, a.MaxUpload()); err != nil {
		return "", err
	}
	if f.Open == nil {
		return "", platform.Permanent(fmt.Errorf("matrix: send %s to %s: no content", f.Name, to.Key()))
	}
	name := f.Name
	if strings.TrimSpace(name) == "" {
		name = "file"
	}
	mediaType := f.MediaType
	if mt, _, err := mime.ParseMediaType(mediaType); err != nil || !strings.Contains(mt, "/") {
		mediaType = "application/octet-stream"
	}
	c := fileContent{MsgType: "m.file", Body: name, FileName: name, Info: fileInfo{MimeType: mediaType, Size: f.Size}, RelatesTo: a.threadRelation(to)}
	if caption := strings.TrimSpace(f.Caption); caption != "" {
		t := formatted(caption, false)
		c.Body, c.Format, c.FormattedBody = t.Body, t.Format, t.FormattedBody
	}

	rc, err := f.Open(ctx)
	if err != nil {
		return "", fmt.Errorf("matrix: send %s to %s: read the file: %w", name, to.Key(), err)
	}
	defer rc.Close()
	body := bufio.NewReaderSize(rc, 64<<10)
	if f.Voice && strings.HasPrefix(mediaType, "audio/") {
		c.MsgType, c.Voice, c.Audio = "m.audio", &struct{}{}, &struct{}{}
	}
	if f.IsImage() {
		c.MsgType = "m.image"
		// The header is in the first bytes of every format shown inline;
		// peeking keeps them for the upload.
		head, _ := body.Peek(64 << 10)
		if cfg, _, err := image.DecodeConfig(bytes.NewReader(head)); err == nil {
			c.Info.W, c.Info.H = cfg.Width, cfg.Height
		}
	}
	mxc, err := a.upload(ctx, body, f.Size, mediaType, name)
	if err != nil {
		return "", fmt.Errorf("matrix: send %s to %s: %w", name, to.Key(), err)
	}
	c.URL = mxc
	data, err := encode(c)
	if err != nil {
		return "", platform.Permanent(fmt.Errorf("matrix: send %s to %s: encode: %w", name, to.Key(), err))
	}
	ev, err := a.sendEvent(ctx, r, a.txnID(ctx, to, 0), data)
	if err != nil {
		return "", fmt.Errorf("matrix: send %s to %s: %w", name, to.Key(), failure("send", err, false))
	}
	if to.Thread != "" {
		a.remember(to.Key(), ev)
	}
	return string(ev), nil
}

// upload posts a file's bytes to the homeserver's media repository and
// returns its mxc:// URI. It may take a while: RequestTimeout, and a
// second more for every MB.
func (a *Adapter) upload(ctx context.Context, body io.Reader, size int64, mediaType, name string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, a.cfg.RequestTimeout+time.Duration(size>>20)*time.Second)
	defer cancel()
	var resp struct {
		ContentURI string `json:"content_uri"`
	}
	_, err := a.cli.MakeFullRequest(ctx, mautrix.FullRequest{
		Method:        http.MethodPost,
		URL:           a.cli.BuildURLWithQuery(mautrix.MediaURLPath{"v3", "upload"}, map[string]string{"filename": name}),
		Headers:       http.Header{"Content-Type": {mediaType}},
		RequestBody:   body,
		RequestLength: cmp.Or(size, -1), // 0 would be read as "not said"
		ResponseJSON:  &resp,
	})
	if err != nil {
		// An M_TOO_LARGE here means the homeserver's limit is lower than
		// it said: refused for good, with its words.
		return "", failure("upload", err, false)
	}
	if _, err := contentURI(resp.ContentURI); err != nil {
		return "", fmt.Errorf("upload: the answer's content_uri %q: %w", resp.ContentURI, err)
	}
	return resp.ContentURI, nil
}
