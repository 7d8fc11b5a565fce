package tools

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sort"
	"strings"

	"github.com/baton-agent/baton/internal/agent"

	"github.com/baton-agent/baton/internal/plural"
)

type readArgs struct {
	Path   string `json:"path"`
	Offset int    `json:"offset"`
	Limit  int    `json:"limit"`
}

func readFile(cfg Config) agent.Tool {
	return agent.Tool{
		Name: "read_file",
		Description: fmt.Sprintf("Read a text file. offset is the first line to show (1-based, default 1), limit the number of lines (default %d). "+
			"At most %d bytes come back per call; a note says where to continue.", DefaultReadLines, cfg.MaxRead),
		Schema: json.RawMessage(`{"type":"object","properties":{` +
			`"path":{"type":"string","description":"File path, relative to the working directory or absolute."},` +
			`"offset":{"type":"integer","minimum":1},"limit":{"type":"integer","minimum":1}},"required":["path"]}`),
		ReadOnly: true,
		Run: func(ctx context.Context, raw json.RawMessage) (string, error) {
			a, err := decode[readArgs]("read_file", raw)
			if err != nil {
				return "", err
			}
			p, err := checked(ctx, cfg, a.Path)
			if err != nil {
				return "", err
			}
			return readLines(p, a, cfg.MaxRead)
		},
		Subject:     pathSubject(cfg, ""),
		SubjectKind: agent.SubjectPath,
		Inside:      readInside(cfg, ""),
	}
}

func readLines(path string, a readArgs, maxBytes int) (string, error) {
	if a.Offset < 0 || a.Limit < 0 {
		return "", errors.New("offset and limit must be positive")
	}
	offset, limit := max(a.Offset, 1), a.Limit
	if limit == 0 {
		limit = DefaultReadLines
	}
	f, err := openResolved(path, os.O_RDONLY, 0, false)
	if err != nil {
		return "", err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil {
		return "", err
	} else if fi.IsDir() {
		return "", fmt.Errorf("%s is a directory; use list_dir", path)
	}
	r := bufio.NewReader(f)
	if head, _ := r.Peek(8000); bytes.IndexByte(head, 0) >= 0 {
		return "", fmt.Errorf("%s looks binary; not shown", path)
	}
	var out strings.Builder
	line, last := 0, 0
	for {
		text, err := r.ReadString('\n')
		if text != "" {
			line++
			if line >= offset {
				if line >= offset+limit {
					fmt.Fprintf(&out, "\n[lines %d-%d shown; more follow: read with offset=%d]", offset, last, line)
					return out.String(), nil
				}
				if out.Len()+len(text) > maxBytes {
					if last == 0 { // one huge line: show its start
						out.WriteString(strings.ToValidUTF8(text[:maxBytes], "\uFFFD"))
						fmt.Fprintf(&out, "\n[line %d is %d bytes; cut at %d]", line, len(text), maxBytes)
						return out.String(), nil
					}
					fmt.Fprintf(&out, "\n[lines %d-%d shown (size limit); more follow: read with offset=%d]", offset, last, line)
					return out.String(), nil
				}
				out.WriteString(text)
				last = line
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return out.String(), err
		}
	}
	switch {
	case line == 0:
		return "[empty file]", nil
	case last == 0:
		return fmt.Sprintf("[the file has only %s]", plural.Count(line, "line", "lines")), nil
	}
	return out.String(), nil
}

type writeArgs struct {
	Path    string `json:"path"`
	Content string `json:"content"`
}

func writeFile(cfg Config) agent.Tool {
	return agent.Tool{
		Name:        "write_file",
		Description: "Write content to a file, replacing it if it exists and creating missing parent directories. Prefer edit_file for changing part of a file.",
		Schema: json.RawMessage(`{"type":"object","properties":{` +
			`"path":{"type":"string","description":"File path, relative to the working directory or absolute."},` +
			`"content":{"type":"string","description":"The complete new content."}},"required":["path","content"]}`),
		Run: func(ctx context.Context, raw json.RawMessage) (string, error) {
			a, err := decode[writeArgs]("write_file", raw)
			if err != nil {
				return "", err
			}
			p, err := checked(ctx, cfg, a.Path)
			if err != nil {
				return "", err
			}
			created, err := writeKeepingMode(p, []byte(a.Content))
			if err != nil {
				return "", err
			}
			verb := "overwrote"
			if created {
				verb = "created"
			}
			return fmt.Sprintf("%s %s (%s)", verb, display(cfg.Dir, p), plural.Count(len(a.Content), "byte", "bytes")), nil
		},
		Subject:     pathSubject(cfg, ""),
		SubjectKind: agent.SubjectPath,
		Inside:      writeInside(cfg),
		Control:     writeGuard(cfg),
	}
}

// writeKeepingMode writes data to path (resolved, every link followed
// already), creating parents, through one handle opened without following
// links; a file that exists keeps its mode. created says it was new.
func writeKeepingMode(path string, data []byte) (created bool, err error) {
	f, err := openResolved(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644, true)
	if errors.Is(err, fs.ErrExist) {
		f, err = openResolved(path, os.O_WRONLY, 0, false)
	} else {
		created = true
	}
	if err != nil {
		return false, err
	}
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		f.Close()
		return false, fmt.Errorf("%s is not a regular file", path)
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Truncate(int64(len(data)))
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return created, err
}

type listArgs struct {
	Path string `json:"path"`
}

// maxEntries caps list_dir output for huge directories.
const maxEntries = 1000

func listDir(cfg Config) agent.Tool {
	return agent.Tool{
		Name:        "list_dir",
		Description: "List a directory: subdirectories end in /, files show their size. path defaults to the working directory.",
		Schema: json.RawMessage(`{"type":"object","properties":{` +
			`"path":{"type":"string","description":"Directory path; default the working directory."}}}`),
		ReadOnly: true,
		Run: func(ctx context.Context, raw json.RawMessage) (string, error) {
			a, err := decode[listArgs]("list_dir", raw)
			if err != nil {
				return "", err
			}
			if a.Path == "" {
				a.Path = "."
			}
			p, err := checked(ctx, cfg, a.Path)
			if err != nil {
				return "", err
			}
			entries, err := os.ReadDir(p)
			if err != nil {
				return "", err
			}
			if len(entries) == 0 {
				return "[empty directory]", nil
			}
			sort.Slice(entries, func(i, j int) bool { return entries[i].Name() < entries[j].Name() })
			var b strings.Builder
			for i, e := range entries {
				if i == maxEntries {
					fmt.Fprintf(&b, "[%s more not shown]\n", plural.Count(len(entries)-maxEntries, "entry", "entries"))
					break
				}
				switch {
				case e.IsDir():
					fmt.Fprintf(&b, "%s/\n", e.Name())
				case e.Type()&fs.ModeSymlink != 0:
					fmt.Fprintf(&b, "%s@\n", e.Name())
				default:
					size := int64(-1)
					if fi, err := e.Info(); err == nil {
						size = fi.Size()
					}
					fmt.Fprintf(&b, "%s (%s)\n", e.Name(), plural.Count(int(size), "byte", "bytes"))
				}
			}
			return strings.TrimSuffix(b.String(), "\n"), nil
		},
		Subject:     pathSubject(cfg, "."),
		SubjectKind: agent.SubjectPath,
		Inside:      readInside(cfg, "."),
	}
}
