package sqlite

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/baton-agent/baton/internal/store"
)

// SessionsDir is the folder beside the store holding each session's own
// folder of files (SessionFolder).
const SessionsDir = "sessions"

// SessionFolder is $BATON_HOME/sessions/<id>: the session's files, by
// name, for people and the file tools. It holds links to the bytes the
// store keeps (files/), never the only copy: deleting a session removes
// it.
func (s *Store) SessionFolder(sessionID string) string {
	return filepath.Join(filepath.Dir(s.path), SessionsDir, filepath.Base(filepath.Clean("/"+sessionID)))
}

// SessionFile is a's bytes at SessionFolder/<first 8 of its hash>-<name>:
// a hard link to the kept bytes (a copy where the disk allows no link),
// made once.
func (s *Store) SessionFile(ctx context.Context, sessionID string, a store.Attachment) (string, error) {
	if !validSHA(a.SHA256) || sessionID == "" {
		return "", fmt.Errorf("session %s file %q: %w", sessionID, a.Name, store.ErrInvalid)
	}
	dir := s.SessionFolder(sessionID)
	p := filepath.Join(dir, a.SHA256[:8]+"-"+safeName(a))
	src := s.filePath(a.SHA256)
	if fi, err := os.Stat(p); err == nil {
		if sfi, err := os.Stat(src); err != nil || os.SameFile(fi, sfi) || fi.Size() == a.Size {
			return p, nil
		}
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("session %s: %w", sessionID, err)
	}
	_ = os.Remove(p) // a copy cut short, or another file
	if err := os.Link(src, p); err == nil {
		return p, nil
	} else if errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("session %s file %s: %w", sessionID, a.Name, store.ErrNotFound)
	}
	if err := copyFile(src, p); err != nil {
		return "", fmt.Errorf("session %s file %s: %w", sessionID, a.Name, err)
	}
	return p, nil
}

// safeName is a's name as a file name: no path, no control characters;
// for a file sent without one, its kind and an extension for its type.
func safeName(a store.Attachment) string {
	name := strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || r == '/' || r == '\\' {
			return '_'
		}
		return r
	}, filepath.Base(strings.TrimSpace(a.Name)))
	if name == "" || name == "." || name == ".." {
		kind, _, _ := strings.Cut(a.MediaType, "/")
		if kind == "" || kind == "application" || kind == "text" {
			kind = "file"
		}
		name = kind + extension(a.MediaType)
	}
	return name
}

func extension(mediaType string) string {
	mt, _, _ := strings.Cut(mediaType, ";")
	switch mt {
	case "image/jpeg":
		return ".jpg"
	case "image/png":
		return ".png"
	case "image/gif":
		return ".gif"
	case "image/webp":
		return ".webp"
	case "application/pdf":
		return ".pdf"
	case "audio/ogg":
		return ".ogg"
	case "video/mp4":
		return ".mp4"
	case "text/plain":
		return ".txt"
	}
	return ""
}
