// Package tools holds baton's built-in tools: shell, read_file, write_file,
// edit_file and list_dir. Relative paths resolve against a working
// directory fixed at construction; symlinks are resolved before a path is
// shown, matched or used, so a link cannot carry a call somewhere its
// subject does not say.
package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/baton-agent/baton/internal/agent"
)

// Defaults for zero-valued Config fields.
const (
	DefaultShellTimeout    = 60 * time.Second
	DefaultMaxShellTimeout = 10 * time.Minute
	DefaultMaxOutput       = 32 << 10
	DefaultMaxRead         = 48 << 10
	DefaultReadLines       = 2000
)

// Config sets up the built-in tools.
type Config struct {
	Dir             string        // working directory; "": the process's
	ShellTimeout    time.Duration // per command unless the model asks otherwise
	MaxShellTimeout time.Duration // the most a model may ask for
	MaxOutput       int           // bytes of shell output kept
	MaxRead         int           // bytes read_file returns per call
	// Paths are directories besides Dir where file tools act freely
	// (reads without asking, writes when the allowlist names the tool).
	Paths []string
	// Files keeps what send_file sends (the store); nil: send_file is
	// not offered.
	Files FileKeeper
}

func (c Config) withDefaults() (Config, error) {
	if c.Dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return c, fmt.Errorf("tools: working directory: %w", err)
		}
		c.Dir = wd
	}
	abs, err := filepath.Abs(c.Dir)
	if err != nil {
		return c, fmt.Errorf("tools: working directory %s: %w", c.Dir, err)
	}
	if fi, err := os.Stat(abs); err != nil {
		return c, fmt.Errorf("tools: working directory: %w", err)
	} else if !fi.IsDir() {
		return c, fmt.Errorf("tools: working directory %s is not a directory", abs)
	}
	if c.Dir, err = realPath(abs); err != nil {
		return c, fmt.Errorf("tools: working directory %s: %w", abs, err)
	}
	roots := make([]string, 0, len(c.Paths))
	for _, p := range c.Paths {
		r, err := resolve(c.Dir, p)
		if err != nil {
			return c, fmt.Errorf("tools: path %q: %w", p, err)
		}
		roots = append(roots, r)
	}
	c.Paths = roots
	if c.ShellTimeout <= 0 {
		c.ShellTimeout = DefaultShellTimeout
	}
	if c.MaxShellTimeout <= 0 {
		c.MaxShellTimeout = DefaultMaxShellTimeout
	}
	if c.MaxOutput <= 0 {
		c.MaxOutput = DefaultMaxOutput
	}
	if c.MaxRead <= 0 {
		c.MaxRead = DefaultMaxRead
	}
	return c, nil
}

// Builtin returns every built-in tool.
func Builtin(cfg Config) ([]agent.Tool, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	ts := []agent.Tool{shell(cfg), readFile(cfg), listDir(cfg), writeFile(cfg), editFile(cfg)}
	if cfg.Files != nil {
		ts = append(ts, sendFile(cfg))
	}
	return ts, nil
}

// NewRegistry is a registry holding the built-in tools.
func NewRegistry(cfg Config) (*agent.Registry, error) {
	ts, err := Builtin(cfg)
	if err != nil {
		return nil, err
	}
	return agent.NewRegistry(ts...)
}

// decode reads a tool's arguments strictly, so a misnamed field is
// reported to the model instead of silently ignored.
func decode[T any](tool string, raw json.RawMessage) (T, error) {
	var v T
	if len(bytes.TrimSpace(raw)) == 0 {
		raw = json.RawMessage("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil {
		return v, fmt.Errorf("invalid arguments for %s: %w", tool, err)
	}
	return v, nil
}

// resolve makes p absolute with every symlink resolved: "~/" is the home
// directory, relative paths are under dir. A part that does not exist yet
// is kept as written.
func resolve(dir, p string) (string, error) {
	if strings.TrimSpace(p) == "" {
		return "", errors.New("path is required")
	}
	if p == "~" || strings.HasPrefix(p, "~/") {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("expand ~: %w", err)
		}
		p = filepath.Join(home, p[1:])
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(dir, p)
	}
	return realPath(filepath.Clean(p))
}

// maxLinks bounds the symlinks followed in one path, as the kernel does.
const maxLinks = 40

// realPath resolves every symlink in the absolute, clean path p, also a
// dangling one (whose target does not exist yet: a write would create
// it there), keeping parts that do not exist as they are.
func realPath(p string) (string, error) {
	vol := filepath.VolumeName(p)
	parts := strings.Split(strings.TrimPrefix(p[len(vol):], string(filepath.Separator)), string(filepath.Separator))
	root := vol + string(filepath.Separator)
	cur := root
	links := 0
	for i := 0; i < len(parts); i++ {
		if parts[i] == "" || parts[i] == "." {
			continue
		}
		next := filepath.Join(cur, parts[i])
		fi, err := os.Lstat(next)
		if errors.Is(err, fs.ErrNotExist) {
			return filepath.Join(append([]string{next}, parts[i+1:]...)...), nil
		}
		if err != nil {
			return "", err
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			cur = next
			continue
		}
		if links++; links > maxLinks {
			return "", fmt.Errorf("%s: too many symlinks", p)
		}
		target, err := os.Readlink(next)
		if err != nil {
			return "", err
		}
		if !filepath.IsAbs(target) {
			target = filepath.Join(cur, target)
		}
		target = filepath.Clean(target)
		rest := strings.Split(strings.TrimPrefix(target[len(filepath.VolumeName(target)):], string(filepath.Separator)), string(filepath.Separator))
		parts = append(rest, parts[i+1:]...)
		cur, i = filepath.VolumeName(target)+string(filepath.Separator), -1
	}
	return cur, nil
}

// within reports whether p is root or below it.
func within(root, p string) bool {
	rel, err := filepath.Rel(root, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// display is p as shown to people and matched by allowlist rules:
// relative to dir when inside it, else absolute.
func display(dir, p string) string {
	if within(dir, p) {
		rel, _ := filepath.Rel(dir, p)
		return filepath.ToSlash(rel)
	}
	return p
}

// pathArg is the resolved "path" argument of a call, or "" if it has none
// that resolves.
func pathArg(cfg Config, raw json.RawMessage, def string) string {
	var a struct {
		Path string `json:"path"`
	}
	if json.Unmarshal(raw, &a) != nil {
		return ""
	}
	if a.Path == "" {
		a.Path = def
	}
	p, err := resolve(cfg.Dir, a.Path)
	if err != nil {
		return ""
	}
	return p
}

// pathSubject is the Subject of tools whose arguments carry a "path".
func pathSubject(cfg Config, def string) func(json.RawMessage) string {
	return func(raw json.RawMessage) string {
		if p := pathArg(cfg, raw, def); p != "" {
			return display(cfg.Dir, p)
		}
		return ""
	}
}

// readInside is the Inside of tools that read: the path is under the
// working directory or one of the configured paths, and is not a file
// with other names (a hard link may be a file from anywhere).
func readInside(cfg Config, def string) func(json.RawMessage) bool {
	return func(raw json.RawMessage) bool {
		p := pathArg(cfg, raw, def)
		return p != "" && cfg.free(p) && !hardLinked(p)
	}
}

// writeInside is the Inside of tools that write: as for reading, and not
// in a repository's control directory, whose config and hooks run
// commands.
func writeInside(cfg Config) func(json.RawMessage) bool {
	return func(raw json.RawMessage) bool {
		p := pathArg(cfg, raw, "")
		return p != "" && cfg.free(p) && !hardLinked(p) && controlDir(p) == ""
	}
}

// writeGuard is the Control of tools that write: the repository control
// directory the path is in, or the path itself when it is a hard-linked
// file, so that only a rule naming it covers the call.
func writeGuard(cfg Config) func(json.RawMessage) string {
	return func(raw json.RawMessage) string {
		p := pathArg(cfg, raw, "")
		if p == "" {
			return ""
		}
		if dir := controlDir(p); dir != "" {
			return display(cfg.Dir, dir)
		}
		if hardLinked(p) {
			return display(cfg.Dir, p)
		}
		return ""
	}
}

// hardLinked reports whether p is a file with more than one name.
func hardLinked(p string) bool {
	fi, err := os.Lstat(p)
	return err == nil && fi.Mode().IsRegular() && linkCount(fi) > 1
}

// controlDir is the nearest directory holding p that is a repository's
// control directory: one named .git, or any directory git would take for
// one (a bare repository such as x.git/: HEAD, objects/ and refs/). "" if
// none.
func controlDir(p string) string {
	for dir := filepath.Dir(p); ; dir = filepath.Dir(dir) {
		if strings.EqualFold(filepath.Base(dir), ".git") || isGitDir(dir) {
			return dir
		}
		if parent := filepath.Dir(dir); parent == dir {
			return ""
		}
	}
}

// isGitDir reports whether dir looks to git like a repository's control
// directory, as git's own is_git_directory decides.
func isGitDir(dir string) bool {
	head, err := os.Lstat(filepath.Join(dir, "HEAD"))
	if err != nil || head.IsDir() {
		return false
	}
	for _, sub := range []string{"objects", "refs"} {
		if fi, err := os.Stat(filepath.Join(dir, sub)); err != nil || !fi.IsDir() {
			return false
		}
	}
	return true
}

// checked resolves a call's path and refuses it when it is not the one
// its approval was checked with: a link moved in between.
func checked(ctx context.Context, cfg Config, path string) (string, error) {
	p, err := resolve(cfg.Dir, path)
	if err != nil {
		return "", err
	}
	if want, ok := agent.CheckedSubject(ctx); ok && display(cfg.Dir, p) != want {
		return "", agent.ErrSubjectMoved
	}
	return p, nil
}

func (c Config) free(p string) bool {
	if within(c.Dir, p) {
		return true
	}
	for _, r := range c.Paths {
		if within(r, p) {
			return true
		}
	}
	return false
}
