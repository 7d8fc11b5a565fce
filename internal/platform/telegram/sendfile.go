package telegram

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/baton-agent/baton/internal/formstream"
	"github.com/baton-agent/baton/internal/platform"
)

// Telegram's limits for files a bot sends: 50 MB for a document, 10 MB
// for a photo (a larger picture goes as a document), and 1024 characters
// of caption.
const (
	MaxUpload      = 50 << 20
	maxPhotoUpload = 10 << 20
	maxCaption     = 1024
)

// MaxUpload is 50 MB (see the constant).
func (a *Adapter) MaxUpload() int64 { return MaxUpload }

// SendFile uploads f (sendVoice for a spoken answer, sendPhoto for a
// picture under 10 MB, sendDocument otherwise) in one try, streaming its bytes from the store. The caption
// goes as Telegram HTML with the file; one longer than a caption may be
// follows as a message. Telegram has no key to drop a repeated send, so a
// try whose answer was lost may show the file twice, as with text.
func (a *Adapter) SendFile(ctx context.Context, to platform.Address, f platform.File) (string, error) {
	if err := platform.CheckUpload(display, f, MaxUpload); err != nil {
		return "", err
	}
	chat, thread, err := target(to)
	if err != nil {
		return "", err
	}
	method, field := "sendDocument", "document"
	switch {
	case f.Voice && strings.HasPrefix(f.MediaType, "audio/ogg"):
		method, field = "sendVoice", "voice" // Telegram shows OGG/Opus as a voice message
	case f.IsImage() && f.Size <= maxPhotoUpload:
		method, field = "sendPhoto", "photo"
	}
	caption, mode, rest := a.caption(f.Caption)
	fields := map[string]string{"chat_id": chat, "caption": caption, "parse_mode": mode}
	if thread != 0 {
		fields["message_thread_id"] = strconv.Itoa(thread)
	}
	var msg struct {
		MessageID int `json:"message_id"`
	}
	ctx, cancel := context.WithTimeout(ctx, platform.UploadTimeout(a.cfg.RequestTimeout, f.Size))
	defer cancel()
	err = a.upload(ctx, method, fields, field, f, &msg)
	if err != nil {
		return "", a.deliveryErr("send "+f.Name+" to "+to.Key(), classifyUploadErr(f, err))
	}
	id := strconv.Itoa(msg.MessageID)
	if rest != "" {
		if _, err := a.Send(ctx, to, rest); err != nil {
			return id, err
		}
	}
	return id, nil
}

// caption is md as a caption (HTML when it renders within the limit),
// or, when too long for one, no caption and the text to send after.
func (a *Adapter) caption(md string) (caption, mode, rest string) {
	if strings.TrimSpace(md) == "" {
		return "", "", ""
	}
	if h, ok := htmlFor(md); ok && platform.UTF16Len(visible(h)) <= maxCaption {
		return h, "HTML", ""
	}
	if platform.UTF16Len(md) <= maxCaption {
		return md, "", ""
	}
	return "", "", md
}

// upload posts fields and f (as the part called field) as
// multipart/form-data, streamed: the file is never held whole.
func (a *Adapter) upload(ctx context.Context, method string, fields map[string]string, field string, f platform.File, out any) error {
	src, err := f.Open(ctx)
	if err != nil {
		return fmt.Errorf("%s: read %s from the store: %w", method, f.Name, err)
	}
	defer src.Close()
	form := make([]formstream.Part, 0, len(fields)+1)
	for _, k := range []string{"chat_id", "message_thread_id", "caption", "parse_mode"} {
		form = append(form, formstream.Field(k, fields[k]))
	}
	form = append(form, formstream.Part{Name: field, Filename: f.UploadName(), MediaType: f.MediaType, Body: src})
	body, contentType := formstream.New(form...)
	defer body.Close() // the writer stops if the request ended early
	return a.rawPost(ctx, method, contentType, body, out)
}

// classifyUploadErr sorts a failed upload as Send's failures are: 401
// is a refusal, 413 the file over the limit, any other 4xx permanent.
func classifyUploadErr(f platform.File, err error) error {
	var ae *apiError
	var ra *platform.RetryAfterError
	if !errors.As(err, &ae) || errors.As(err, &ra) {
		return err
	}
	switch {
	case ae.Code == http.StatusUnauthorized:
		return platform.Refused(err)
	case ae.Code == http.StatusRequestEntityTooLarge:
		return &platform.TooLargeError{Service: display, Name: f.Name, Size: f.Size, Limit: MaxUpload, Sending: true}
	case ae.Code >= 400 && ae.Code < 500 && ae.Code != http.StatusTooManyRequests:
		return platform.Permanent(err)
	}
	return err
}
