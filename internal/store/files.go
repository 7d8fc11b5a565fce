package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/baton-agent/baton/internal/plural"
)

// Attachment is one file a message carries. Its bytes are kept once per
// content (SHA256) by the store's Files; the row names them.
type Attachment struct {
	ID        int64 // set when stored with a message
	MessageID int64 // the message carrying it; 0 until stored
	Ordinal   int   // its place among the message's attachments, from 0
	Name      string
	// MediaType is sniffed from the bytes (attach.Sniff), never taken
	// from the name or from what the sender claimed.
	MediaType string
	Size      int64
	SHA256    string // hex, lower case: the bytes' address
	Width     int    // images, when the header gives them; else 0
	Height    int
	Duration  time.Duration // Ogg Opus audio; 0 when unknown
	// Voice marks a voice note, as its service said (a recording made in
	// the app, not an audio file sent).
	Voice bool `json:",omitempty"`
	// Transcript is what a voice note says, as the transcription service
	// heard it; "" for other files, or a note not transcribed.
	Transcript string `json:",omitempty"`
}

// DefaultMaxFileBytes is the per-file bound a store keeps unless told
// otherwise (25 MiB).
const DefaultMaxFileBytes = 25 << 20

// ErrFileTooLarge is what a refused file's error Is: it branches callers.
var ErrFileTooLarge = errors.New("file too large")

// FileTooLargeError says how large a refused file is and the bound. When
// the file was streamed without a known size, Size is the bytes read
// before refusing (one more than Limit) and AtLeast is set.
type FileTooLargeError struct {
	Size    int64
	Limit   int64
	AtLeast bool
}

func (e *FileTooLargeError) Error() string {
	size, limit := plural.Size(e.Size-boolInt(e.AtLeast)), plural.Size(e.Limit)
	if e.AtLeast || size == limit {
		// Just over the bound reads as the bound itself when rounded.
		size = "more than " + limit
	}
	return fmt.Sprintf("file too large: %s, the bound is %s", size, limit)
}

// Is makes errors.Is(err, ErrFileTooLarge) hold.
func (e *FileTooLargeError) Is(target error) bool { return target == ErrFileTooLarge }

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// Files keeps attachments' bytes, content-addressed. A file is put
// first, then named by the message that carries it (Message.Attachments,
// stored by AppendMessages, which refuses an attachment whose bytes are
// not kept): no row ever names bytes the store does not hold. Bytes no
// row names are removed when the last session naming them is deleted;
// bytes put and never named are removed some time later.
type Files interface {
	// PutFile reads r to its end, keeps the bytes under their SHA-256
	// (once, however often they are put) and returns what they are, with
	// Name set to name (for people; never used to tell the type). More
	// bytes than the store's bound are refused with a *FileTooLargeError
	// (ErrFileTooLarge) and nothing is kept.
	PutFile(ctx context.Context, r io.Reader, name string) (Attachment, error)
	// OpenFile reads back the bytes kept under sha256 (hex); ErrNotFound
	// when none are.
	OpenFile(ctx context.Context, sha256 string) (io.ReadCloser, error)
	// SetTranscript records what the voice note stored as attachment id
	// says (heard later: /retry after a transcription service was set
	// up); ErrNotFound for no such attachment.
	SetTranscript(ctx context.Context, attachmentID int64, text string) error
}

// FilePather is the optional part of a Store that keeps files on this
// machine's disk, where people and the file tools can read them.
type FilePather interface {
	// FilePath is where the bytes kept under sha256 are; false when the
	// hash is malformed.
	FilePath(sha256 string) (string, bool)
}

// FilePathOf is where st keeps the bytes of sha256 on disk, or "" when it
// keeps them elsewhere (a database server).
func FilePathOf(st any, sha256 string) string {
	if fp, ok := st.(FilePather); ok {
		if p, ok := fp.FilePath(sha256); ok {
			return p
		}
	}
	return ""
}

// SessionFiler is the optional part of a Store that shows each session's
// files in a folder of the session's own on this machine's disk: the
// path a person and the agent's file tools read a file at, stable for
// the session's life.
type SessionFiler interface {
	// SessionFolder is the session's own folder of files.
	SessionFolder(sessionID string) string
	// SessionFile is where a (an attachment of the session) is readable
	// in SessionFolder, made on first use without copying its bytes.
	SessionFile(ctx context.Context, sessionID string, a Attachment) (string, error)
}

// SessionFileOf is where st shows a of the session on disk, or "" where
// it shows none (a store on a database server, or the file cannot be
// shown: the caller names it without a path).
func SessionFileOf(ctx context.Context, st any, sessionID string, a Attachment) string {
	sf, ok := st.(SessionFiler)
	if !ok || sessionID == "" {
		return ""
	}
	p, err := sf.SessionFile(ctx, sessionID, a)
	if err != nil {
		return ""
	}
	return p
}
