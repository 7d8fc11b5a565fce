package platform

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/baton-agent/baton/internal/plural"
)

// AttachmentKind says what a file was sent as on its service.
type AttachmentKind string

// Attachment kinds.
const (
	KindPhoto    AttachmentKind = "photo"    // a picture the service shows inline (often recompressed)
	KindDocument AttachmentKind = "document" // a file sent as a file, bytes as the sender had them
	KindVoice    AttachmentKind = "voice"    // a voice message recorded in the app
	KindVideo    AttachmentKind = "video"    // a video, or a round video note
	KindAudio    AttachmentKind = "audio"    // a music or audio file
)

// Attachment is a file that came with an event, as its service described
// it. Nothing here is trusted: the store sniffs the real media type from
// the bytes and measures them.
type Attachment struct {
	Kind AttachmentKind
	// Name is the file name the service gave; "" when it gave none (a
	// photo, a voice message).
	Name string
	// MediaType is the type the service claims ("application/pdf"); ""
	// when it claims none.
	MediaType string
	// Size is the size in bytes the service told; 0 when it did not.
	Size int64
	// ID is the service's lasting id of the file's content (Telegram's
	// file_unique_id), "" if it has none: the same file sent twice
	// carries the same ID.
	ID string
	// Open reads the file's bytes from the service, in one try, when the
	// gateway stores the event. It only reaches the service's own API
	// host, at the path its API gave: never a URL a person typed. A file
	// over the service's download limit is refused with a *TooLargeError
	// before anything is downloaded; other failures are classified as
	// Send's are (see Classify). The caller closes the reader, whose Read
	// also fails with a *TooLargeError past the limit when Size was not
	// told. Open may be called again after a failure.
	Open func(ctx context.Context) (io.ReadCloser, error)
}

// DownloadLimiter tells the largest file, in bytes, the service lets
// baton download (Telegram's bots: 20 MB through getFile).
type DownloadLimiter interface {
	MaxDownload() int64
}

// ErrTooLarge is wrapped by a *TooLargeError.
var ErrTooLarge = errors.New("file too large")

// TooLargeError refuses a file over a service's limit. Its message is one
// line the gateway can tell the person as it is. It is also ErrPermanent:
// no retry makes the file smaller.
type TooLargeError struct {
	Service string // the service's display name ("Telegram")
	Name    string // the file's name, or its kind when it has none
	Size    int64  // the file's size; 0 when only known to pass Limit
	Limit   int64  // the service's limit
	Sending bool   // a file baton sends to the service, not one from it
}

func (e *TooLargeError) Error() string {
	size := "more than " + FormatSize(e.Limit)
	if e.Size > 0 {
		size = FormatSize(e.Size)
	}
	dir := "from"
	if e.Sending {
		dir = "sent to"
	}
	return fmt.Sprintf("%s is %s, over the %s limit for files %s %s", e.Name, size, FormatSize(e.Limit), dir, e.Service)
}

// Unwrap makes errors.Is see ErrTooLarge and ErrPermanent.
func (e *TooLargeError) Unwrap() []error { return []error{ErrTooLarge, ErrPermanent} }

// CheckDownload refuses a file of size bytes (as the service told; 0 for
// unknown) over limit, before it is downloaded.
func CheckDownload(service, name string, size, limit int64) error {
	if limit > 0 && size > limit {
		return &TooLargeError{Service: service, Name: name, Size: size, Limit: limit}
	}
	return nil
}

// LimitDownload reads body and fails with a *TooLargeError once it gives
// more than limit bytes: the bound for a file whose size the service did
// not tell, so a service's word is not needed to keep a download bounded.
func LimitDownload(body io.ReadCloser, service, name string, limit int64) io.ReadCloser {
	return &limitedBody{body: body, left: limit, err: &TooLargeError{Service: service, Name: name, Limit: limit}}
}

type limitedBody struct {
	body io.ReadCloser
	left int64
	err  error
}

func (l *limitedBody) Read(p []byte) (int, error) {
	if l.left < 0 {
		return 0, l.err
	}
	// Read one byte past the limit to tell "exactly the limit" from more.
	if int64(len(p)) > l.left+1 {
		p = p[:l.left+1]
	}
	n, err := l.body.Read(p)
	l.left -= int64(n)
	if l.left < 0 {
		return n + int(l.left), l.err
	}
	return n, err
}

func (l *limitedBody) Close() error { return l.body.Close() }

// FormatSize writes a byte count for people (plural.Size): "812 bytes",
// "1.5 MB", "20 MB", in units of 1024 as services state their limits.
func FormatSize(n int64) string { return plural.Size(n) }
