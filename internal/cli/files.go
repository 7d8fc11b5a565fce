package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/baton-agent/baton/internal/plural"
	"github.com/baton-agent/baton/internal/store"
	"github.com/baton-agent/baton/internal/transcript"
)

// fileKeeper is the part of the store that keeps a file's bytes.
type fileKeeper interface {
	PutFile(ctx context.Context, r io.Reader, name string) (store.Attachment, error)
}

// attachFile keeps the file at path in the store, for a message to carry.
// The error says in one line what is wrong and what to do.
func attachFile(ctx context.Context, st fileKeeper, path string) (store.Attachment, error) {
	path = unquotePath(path)
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return store.Attachment{}, fmt.Errorf("cannot attach %s: there is no such file", path)
		}
		return store.Attachment{}, fmt.Errorf("cannot attach %s: %w", path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return store.Attachment{}, fmt.Errorf("cannot attach %s: %w", path, err)
	}
	if !fi.Mode().IsRegular() {
		return store.Attachment{}, fmt.Errorf("cannot attach %s: it is not a file (a folder? attach the files in it)", path)
	}
	att, err := st.PutFile(ctx, f, filepath.Base(path))
	var tl *store.FileTooLargeError
	if errors.As(err, &tl) {
		return store.Attachment{}, fmt.Errorf("cannot attach %s: %w (the bound is files.max_bytes in config.yaml)", path, err)
	}
	if err != nil {
		return store.Attachment{}, fmt.Errorf("cannot attach %s: %w", path, err)
	}
	att.Name = filepath.Base(path)
	return att, nil
}

// unquotePath is a path as a terminal pastes a dropped file: in quotes
// ('…' or "…"), with backslash-escaped spaces, or as a file:// URL.
func unquotePath(p string) string {
	p = strings.TrimSpace(p)
	if len(p) >= 2 && (p[0] == '\'' || p[0] == '"') && p[len(p)-1] == p[0] {
		return p[1 : len(p)-1]
	}
	if rest, ok := strings.CutPrefix(p, "file://"); ok {
		p = rest
	}
	if strings.HasPrefix(p, "~/") {
		if home, err := os.UserHomeDir(); err == nil {
			p = filepath.Join(home, p[2:])
		}
	}
	return strings.ReplaceAll(p, `\ `, " ")
}

// droppedFile reports whether line is only the path of an existing file,
// as a terminal types one dropped on it: to offer attaching it.
func droppedFile(line string) (string, bool) {
	line = strings.TrimSpace(line)
	if line == "" || strings.Contains(line, "\n") {
		return "", false
	}
	p := unquotePath(line)
	if !filepath.IsAbs(p) && !strings.HasPrefix(line, "~/") {
		return "", false
	}
	fi, err := os.Stat(p)
	if err != nil || !fi.Mode().IsRegular() {
		return "", false
	}
	return p, true
}

// fileLine shows a file a message carries: its name, type and size, and
// where it is kept, a link on a terminal that shows them (OSC 8).
func fileLine(out *renderer, a store.Attachment, path string) string {
	line := transcript.FileLine(a, path)
	if out.tty && path != "" && os.Getenv("NO_COLOR") == "" {
		line = strings.Replace(line, path, "\x1b]8;;file://"+path+"\x1b\\"+path+"\x1b]8;;\x1b\\", 1)
	}
	return line
}

// attach keeps files for the next message, each told in a line.
func (r *REPL) attach(ctx context.Context, paths []string) {
	for _, p := range paths {
		att, err := attachFile(ctx, r.app.Store, p)
		if err != nil {
			r.out.Printf("%v\n", err)
			continue
		}
		r.attached = append(r.attached, att)
		r.out.Printf("%s\n", transcript.FileLine(att, ""))
	}
	if len(r.attached) > 0 {
		r.out.Printf("Your next message carries %s; type it, or press Enter to send %s alone.\n",
			plural.Count(len(r.attached), "file", "files"), plural.Word(len(r.attached), "it", "them"))
	}
}

// offerAttach asks whether a file path typed alone (a file dropped on the
// terminal) is to be attached; false sends the line as it is.
func (r *REPL) offerAttach(ctx context.Context, path string) bool {
	ans, err := r.in.Ask(fmt.Sprintf("Attach %s to your next message? [Y/n] › ", path))
	if err != nil {
		return false
	}
	switch strings.ToLower(strings.TrimSpace(ans)) {
	case "", "y", "yes":
		r.attach(ctx, []string{path})
		return true
	}
	return false
}

// splitPaths splits /attach's arguments into paths: by spaces, except
// inside quotes or after a backslash, as a shell would.
func splitPaths(s string) []string {
	var out []string
	var cur strings.Builder
	quote, started := rune(0), false
	rs := []rune(s)
	for i := 0; i < len(rs); i++ {
		c := rs[i]
		switch {
		case quote != 0 && c == quote:
			quote = 0
		case quote != 0:
			cur.WriteRune(c)
		case c == '\\' && i+1 < len(rs):
			i++
			cur.WriteRune(rs[i])
			started = true
		case c == '\'' || c == '"':
			quote, started = c, true
		case c == ' ' || c == '\t':
			if started {
				out = append(out, cur.String())
				cur.Reset()
				started = false
			}
		default:
			cur.WriteRune(c)
			started = true
		}
	}
	if started {
		out = append(out, cur.String())
	}
	return out
}
