package discord

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"net/url"
	"path"
	"strings"

	"github.com/disgoorg/disgo/discord"
	"github.com/disgoorg/disgo/rest"

	"github.com/baton-agent/baton/internal/platform"
)

// MaxDownload is the largest file a person can attach on Discord (500
// MB, with Nitro): Discord puts no other bound on what a bot downloads.
const MaxDownload = 500 << 20

// MaxUpload is Discord's default upload limit, 10 MB a message, what a
// bot may send in any channel (boosted servers allow more).
const MaxUpload = 10 << 20

// DefaultCDNURL is where Discord keeps attachments.
const DefaultCDNURL = "https://cdn.discordapp.com"

// display is how people know the service, in refusals.
const display = "Discord"

// MaxDownload is 500 MB (see the constant).
func (a *Adapter) MaxDownload() int64 { return MaxDownload }

// MaxUpload is 10 MB (see the constant).
func (a *Adapter) MaxUpload() int64 { return MaxUpload }

// wireAttachment is the part of a message's attachment baton reads.
type wireAttachment struct {
	ID          string `json:"id"`
	Filename    string `json:"filename"`
	ContentType string `json:"content_type"`
	Size        int64  `json:"size"`
	URL         string `json:"url"`
	// A voice message (recorded in the app) has a waveform and a length.
	Waveform     string  `json:"waveform"`
	DurationSecs float64 `json:"duration_secs"`
}

// attachments lists a message's files, each read from the URL Discord
// gave for it when the event is stored.
func (a *Adapter) attachments(m wireMessage) []platform.Attachment {
	var out []platform.Attachment
	for _, w := range m.Attachments {
		if w.ID == "" {
			continue
		}
		kind := platform.KindDocument
		switch {
		case (platform.File{MediaType: mediaType(w.ContentType)}).IsImage():
			kind = platform.KindPhoto
		case w.Waveform != "" && w.DurationSecs > 0:
			kind = platform.KindVoice
		}
		label := w.Filename
		if label == "" {
			label = "the " + string(kind)
		}
		out = append(out, platform.Attachment{
			Kind: kind, Name: w.Filename, MediaType: w.ContentType, Size: w.Size,
			Open: func(ctx context.Context) (io.ReadCloser, error) { return a.download(ctx, w, label) },
		})
	}
	return out
}

// mediaType is a Content-Type without its parameters.
func mediaType(ct string) string {
	t, _, _ := strings.Cut(ct, ";")
	return strings.TrimSpace(t)
}

// download reads an attachment from the URL Discord gave for it, only
// when that URL is on Discord's CDN (Config.CDNURL) under /attachments/:
// a message's attachment list comes from Discord, but baton never
// fetches a place anything else names. The URL is signed, so no token
// goes with the request. A file over MaxDownload is refused first.
func (a *Adapter) download(ctx context.Context, w wireAttachment, label string) (io.ReadCloser, error) {
	if err := platform.CheckDownload(display, label, w.Size, MaxDownload); err != nil {
		return nil, err
	}
	if !a.onCDN(w.URL) {
		return nil, platform.Permanent(fmt.Errorf("discord: download %s: its URL is not on Discord's CDN", label))
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, w.URL, nil)
	if err != nil {
		return nil, platform.Permanent(fmt.Errorf("discord: download %s: %w", label, withoutURL(err)))
	}
	resp, err := a.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("discord: download %s: %w", label, withoutURL(err))
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		err := fmt.Errorf("discord: download %s: %s", label, resp.Status)
		if resp.StatusCode >= 400 && resp.StatusCode < 500 && resp.StatusCode != http.StatusTooManyRequests && resp.StatusCode != http.StatusRequestTimeout {
			// A link past its expiry (ex=) answers 404 for good.
			return nil, platform.Permanent(err)
		}
		return nil, err
	}
	return platform.LimitDownload(resp.Body, display, label, MaxDownload), nil
}

// onCDN reports whether raw is an attachment's address on Discord's CDN.
func (a *Adapter) onCDN(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil || u.User != nil {
		return false
	}
	return strings.EqualFold(u.Scheme, a.cdn.Scheme) && strings.EqualFold(u.Host, a.cdn.Host) &&
		strings.HasPrefix(u.EscapedPath(), strings.TrimRight(a.cdn.EscapedPath(), "/")+"/attachments/")
}

// withoutURL drops the URL a failed request names (its signature opens
// the file to anyone) and keeps why it failed.
func withoutURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return fmt.Errorf("%s: %w", ue.Op, ue.Err)
	}
	return err
}

// fileMessage is the payload_json of a message carrying one file.
type fileMessage struct {
	Content         string                   `json:"content,omitempty"`
	AllowedMentions *discord.AllowedMentions `json:"allowed_mentions"`
	Attachments     []fileMessageAttachment  `json:"attachments"`
	Nonce           string                   `json:"nonce,omitempty"`
	EnforceNonce    bool                     `json:"enforce_nonce,omitempty"`
}

type fileMessageAttachment struct {
	ID       string `json:"id"` // the index of its files[n] part
	Filename string `json:"filename"`
}

// SendFile posts a file, with its caption as the message's content, as
// multipart/form-data: payload_json and files[0]; a caption longer than
// a message follows in messages of its own. Discord shows a picture
// inline by its name (see pictureName). A file of a stored delivery
// carries the nonce Send would give its first message, enforced, so a
// try after a lost answer or a restart posts it once (and the rest of
// its caption, under nonces of their own). A file over MaxUpload is
// refused before it is read; one that turns out larger than it said is
// cut off mid-request, never posted.
func (a *Adapter) SendFile(ctx context.Context, to platform.Address, f platform.File) (string, error) {
	ch, err := channelOf(to)
	if err != nil {
		return "", err
	}
	if err := platform.CheckUpload(display, f, MaxUpload); err != nil {
		return "", err
	}
	name := pictureName(f)
	if f.Open == nil {
		return "", platform.Permanent(fmt.Errorf("discord: send %s: nothing to read it from", name))
	}
	msg := fileMessage{AllowedMentions: noMentionsPtr(), Attachments: []fileMessageAttachment{{ID: "0", Filename: name}}}
	parts := platform.Split(f.Caption, MaxMessageLen, platform.UTF16Len)
	if len(parts) > 0 {
		msg.Content = parts[0]
	}
	if nonce, ok := deliveryNonce(ctx, to, 0); ok {
		msg.Nonce, msg.EnforceNonce = nonce, true
	}
	id, err := a.postFile(ctx, rest.CreateMessage.Compile(nil, ch), msg, name, f)
	var ae *apiError
	switch {
	case errors.As(err, &ae) && ae.Status == http.StatusRequestEntityTooLarge:
		// A channel's limit below the default (none is, today).
		return "", &platform.TooLargeError{Service: display, Name: name, Size: f.Size, Limit: MaxUpload, Sending: true}
	case err != nil:
		return "", fmt.Errorf("discord: send %s: %w", name, err)
	}
	if len(parts) > 1 {
		rest := strings.Join(parts[1:], "\n\n")
		if key := platform.DeliveryKey(ctx); key != "" {
			ctx = platform.WithDeliveryKey(ctx, key+"\x00caption")
		}
		if _, err := a.Send(ctx, to, rest); err != nil {
			return id, err
		}
	}
	return id, nil
}

// pictureName is the name a file goes under: a picture's ends in its
// type's extension, as Discord shows a picture inline by its name alone.
func pictureName(f platform.File) string {
	name := f.UploadName()
	if !f.IsImage() {
		return name
	}
	ext := map[string]string{"image/png": ".png", "image/jpeg": ".jpg", "image/gif": ".gif", "image/webp": ".webp"}[strings.ToLower(f.MediaType)]
	if got := strings.ToLower(path.Ext(name)); got == ext || ext == ".jpg" && got == ".jpeg" {
		return name
	}
	return name + ext
}

// userAgent is what Discord asks a bot's requests to say.
const userAgent = "DiscordBot (https://github.com/baton-agent/baton, 1)"

// postFile makes the create request itself, rather than through the REST
// client, which would hold the whole body, and a copy of it for its
// debug log: here the file streams from the store to Discord.
func (a *Adapter) postFile(ctx context.Context, ep *rest.CompiledEndpoint, msg fileMessage, name string, f platform.File) (string, error) {
	const route = "POST /channels/{id}/messages"
	payload, err := json.Marshal(msg)
	if err != nil {
		return "", platform.Permanent(err)
	}
	rc, err := f.Open(ctx)
	if err != nil {
		return "", fmt.Errorf("read it: %w", err)
	}
	defer rc.Close()
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	written := make(chan error, 1)
	go func() {
		err := writeParts(mw, payload, name, f.MediaType, rc)
		pw.CloseWithError(err)
		written <- err
	}()
	ctx, cancel := context.WithTimeout(ctx, platform.UploadTimeout(a.cfg.RequestTimeout, f.Size))
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.cfg.APIURL+ep.URL, pr)
	if err != nil {
		pr.Close()
		<-written
		return "", platform.Permanent(err)
	}
	req.Header.Set("Authorization", "Bot "+a.cfg.Token)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set("User-Agent", userAgent)
	resp, err := a.http.Do(req)
	pr.Close() // the writer stops if the answer came before it was done
	if werr := <-written; werr != nil && !errors.Is(werr, io.ErrClosedPipe) {
		if resp != nil {
			resp.Body.Close()
		}
		return "", werr
	}
	if err != nil {
		return "", fmt.Errorf("%s: %w", route, withoutURL(err))
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return "", fmt.Errorf("%s: read the answer: %w", route, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		re := &rest.Error{Request: req, Response: resp, RsBody: body}
		_ = json.Unmarshal(body, re)
		return "", final(classify(route, re))
	}
	var m struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(body, &m); err != nil || m.ID == "" {
		return "", fmt.Errorf("%s: an answer without a message id", route)
	}
	return m.ID, nil
}

// writeParts writes the body: the payload, then the file's bytes, at
// most MaxUpload of them (more is a file larger than it said).
func writeParts(mw *multipart.Writer, payload []byte, name, mediaType string, r io.Reader) error {
	part, err := mw.CreatePart(textproto.MIMEHeader{
		"Content-Disposition": {`form-data; name="payload_json"`},
		"Content-Type":        {"application/json"},
	})
	if err != nil {
		return err
	}
	if _, err := part.Write(payload); err != nil {
		return err
	}
	if mediaType == "" {
		mediaType = "application/octet-stream"
	}
	part, err = mw.CreatePart(textproto.MIMEHeader{
		"Content-Disposition": {fmt.Sprintf(`form-data; name="files[0]"; filename=%q`, name)},
		"Content-Type":        {mediaType},
	})
	if err != nil {
		return err
	}
	n, err := io.Copy(part, io.LimitReader(r, MaxUpload+1))
	if err != nil {
		return fmt.Errorf("read it: %w", err)
	}
	if n > MaxUpload {
		return &platform.TooLargeError{Service: display, Name: name, Limit: MaxUpload, Sending: true}
	}
	return mw.Close()
}
