package telegram

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/baton-agent/baton/internal/platform"
)

// MaxDownload is the largest file a bot may download through getFile:
// the Bot API's "up to 20MB", 20 << 20 bytes on Telegram's servers.
const MaxDownload = 20 << 20

// display is how people know the service, in refusals.
const display = "Telegram"

// MaxDownload is 20 MB (see the constant).
func (a *Adapter) MaxDownload() int64 { return MaxDownload }

// wireFile is the part of a PhotoSize, Document, Voice, VideoNote, Audio
// or Video that baton reads.
type wireFile struct {
	FileID       string `json:"file_id"`
	FileUniqueID string `json:"file_unique_id"`
	FileName     string `json:"file_name"`
	MimeType     string `json:"mime_type"`
	FileSize     int64  `json:"file_size"`
	Width        int64  `json:"width"`
	Height       int64  `json:"height"`
}

// opener makes the Open of a file described as label; nil makes
// attachments without one (for tests of decoding alone).
type opener func(f wireFile, label string) func(context.Context) (io.ReadCloser, error)

// opener reads files through this adapter (see download).
func (a *Adapter) opener(f wireFile, label string) func(context.Context) (io.ReadCloser, error) {
	return func(ctx context.Context) (io.ReadCloser, error) { return a.download(ctx, f, label) }
}

// attachments lists a message's files (a message carries at most one of
// each kind, and a photo in several sizes).
func attachments(m *wireMessage, open opener) []platform.Attachment {
	var out []platform.Attachment
	add := func(kind platform.AttachmentKind, f *wireFile) {
		if f == nil || f.FileID == "" {
			return
		}
		att := platform.Attachment{Kind: kind, Name: f.FileName, MediaType: f.MimeType, Size: f.FileSize, ID: f.FileUniqueID}
		label := f.FileName
		if label == "" {
			label = "the " + string(kind) // "the photo is 25 MB, over…"
		}
		if open != nil {
			att.Open = open(*f, label)
		}
		out = append(out, att)
	}
	if p, ok := largestPhoto(m.Photo); ok {
		add(platform.KindPhoto, &p)
	}
	add(platform.KindDocument, m.Document)
	add(platform.KindVoice, m.Voice)
	add(platform.KindVideo, m.VideoNote)
	add(platform.KindAudio, m.Audio)
	add(platform.KindVideo, m.Video)
	return out
}

// largestPhoto picks, of the sizes Telegram made of one photo, the
// largest one a bot may download (the smallest when none may: it is then
// refused with the reason on Open).
func largestPhoto(sizes []wireFile) (wireFile, bool) {
	var best wireFile
	found := false
	area := func(f wireFile) int64 { return f.Width * f.Height }
	for _, s := range sizes {
		if s.FileID == "" {
			continue
		}
		fits, bestFits := s.FileSize <= MaxDownload, best.FileSize <= MaxDownload
		switch {
		case !found:
		case fits && !bestFits:
		case fits == bestFits && fits && (area(s) > area(best) || area(s) == area(best) && s.FileSize > best.FileSize):
		case fits == bestFits && !fits && s.FileSize < best.FileSize:
		default:
			continue
		}
		best, found = s, true
	}
	return best, found
}

// download asks getFile where the file is, then reads it from
// {server}/file/bot<token>/<file_path>: the one place the Bot API says
// files are, whatever a message's text says. A file over MaxDownload is
// refused before either call when the update told its size.
func (a *Adapter) download(ctx context.Context, f wireFile, label string) (io.ReadCloser, error) {
	if err := platform.CheckDownload(display, label, f.FileSize, MaxDownload); err != nil {
		return nil, err
	}
	var info struct {
		FileSize int64  `json:"file_size"`
		FilePath string `json:"file_path"`
	}
	callCtx, cancel := context.WithTimeout(ctx, a.cfg.RequestTimeout)
	err := a.rawCall(callCtx, "getFile", map[string]any{"file_id": f.FileID}, &info)
	cancel()
	if err != nil {
		var ae *apiError
		if errors.As(err, &ae) && ae.Code == http.StatusBadRequest && strings.Contains(strings.ToLower(ae.Description), "too big") {
			return nil, &platform.TooLargeError{Service: display, Name: label, Limit: MaxDownload}
		}
		return nil, fmt.Errorf("telegram: getFile for %s: %w", label, classifyFileErr(err))
	}
	if err := platform.CheckDownload(display, label, info.FileSize, MaxDownload); err != nil {
		return nil, err
	}
	rel, err := filePath(info.FilePath)
	if err != nil {
		return nil, platform.Permanent(fmt.Errorf("telegram: getFile for %s: %w", label, err))
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.cfg.ServerURL+"/file/bot"+a.cfg.Token+"/"+rel, nil)
	if err != nil {
		return nil, fmt.Errorf("telegram: download %s: %w", label, a.redact(err))
	}
	resp, err := a.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("telegram: download %s: %w", label, a.redact(err))
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		err := fmt.Errorf("telegram: download %s: %s", label, resp.Status)
		if resp.StatusCode >= 400 && resp.StatusCode < 500 && resp.StatusCode != http.StatusTooManyRequests {
			// A link past its hour answers 404; the next Open asks getFile anew.
			return nil, platform.Permanent(err)
		}
		return nil, err
	}
	return platform.LimitDownload(resp.Body, display, label, MaxDownload), nil
}

// classifyFileErr marks a getFile refusal (a file id Telegram does not
// know, 400) as one no retry fixes; a wait asked for stays a wait.
func classifyFileErr(err error) error {
	var ae *apiError
	var ra *platform.RetryAfterError
	if errors.As(err, &ae) && !errors.As(err, &ra) && ae.Code >= 400 && ae.Code < 500 && ae.Code != http.StatusTooManyRequests {
		return platform.Permanent(err)
	}
	return err
}

// filePath checks the file_path getFile gave — relative, within the bot's
// file area — and escapes it for the download URL.
func filePath(p string) (string, error) {
	if p == "" {
		return "", errors.New("no file_path in the answer")
	}
	if strings.HasPrefix(p, "/") || strings.Contains(p, "\\") || strings.Contains(p, "://") {
		// A local Bot API server (--local) gives an absolute path on its
		// own disk: there is nothing to download from it.
		return "", errors.New("file_path is not a relative path on the Bot API server")
	}
	parts := strings.Split(p, "/")
	for i, s := range parts {
		if s == "" || s == "." || s == ".." {
			return "", errors.New("file_path leaves the bot's files")
		}
		parts[i] = url.PathEscape(s)
	}
	return strings.Join(parts, "/"), nil
}
