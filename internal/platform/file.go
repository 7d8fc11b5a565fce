package platform

import (
	"context"
	"io"
	"strings"
	"time"
)

// File is a file baton sends to a place: one the agent made or chose
// (send_file), kept in the store before it is sent.
type File struct {
	// Name is the file name the person sees ("report.pdf").
	Name string
	// MediaType is the type sniffed from the bytes when the store kept
	// them ("image/png"): trusted, unlike an Attachment's.
	MediaType string
	// Size is the file's size in bytes.
	Size int64
	// Caption is markdown sent with the file ("" for none), at most a
	// line or two.
	Caption string
	// Open reads the bytes from the store; it may be called again for
	// another try.
	Open func(ctx context.Context) (io.ReadCloser, error)
	// Voice marks a spoken answer (Ogg Opus): sent as the service's voice
	// message where it has one (Telegram's sendVoice, WhatsApp's PTT),
	// else as an audio file.
	Voice bool
}

// IsImage reports whether the file is a picture a service may show
// inline: PNG, JPEG, GIF or WebP. Never SVG (a picture that runs code
// in a page) nor anything else.
func (f File) IsImage() bool {
	switch strings.ToLower(f.MediaType) {
	case "image/png", "image/jpeg", "image/gif", "image/webp":
		return true
	}
	return false
}

// FileSender sends a file to an address in one try, as Send sends text:
// the same failure classes (Classify), the same delivery key
// (DeliveryToken with part 0 for the file) where the service drops a
// repeat. A picture (File.IsImage) goes as the service shows pictures,
// anything else as a document, its name and bytes as they are. A file
// over MaxUpload is refused with a *TooLargeError (CheckUpload) before
// anything is sent.
type FileSender interface {
	SendFile(ctx context.Context, to Address, f File) (msgID string, err error)
	// MaxUpload is the largest file, in bytes, the service takes from
	// baton.
	MaxUpload() int64
}

// CheckUpload refuses f over limit, before it is sent.
func CheckUpload(service string, f File, limit int64) error {
	if limit > 0 && f.Size > limit {
		return &TooLargeError{Service: service, Name: f.Name, Size: f.Size, Limit: limit, Sending: true}
	}
	return nil
}

// UploadTimeout bounds one try of sending a file of size bytes: base (the
// adapter's RequestTimeout) and the time the bytes take at a slow
// uplink's 256 kB/s, so a large file on a phone's hotspot is not cut
// while a stalled one still ends.
func UploadTimeout(base time.Duration, size int64) time.Duration {
	return base + time.Duration(size/(256<<10))*time.Second
}

// UploadName is the file's name as an upload carries it: printable,
// without quotes, backslashes or a path (a multipart filename, a name a
// service keeps), never empty.
func (f File) UploadName() string {
	name := strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || r == '"' || r == '\\' || r == '/' {
			return '_'
		}
		return r
	}, strings.TrimSpace(f.Name))
	if name == "" {
		return "file"
	}
	return name
}
