// Package tools holds baton's built-in tools: shell, read_file, write_file,
// edit_file and list_dir. Relative paths resolve against a working
// directory fixed at construction.
package tools

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
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
	c.Dir = abs
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
	return []agent.Tool{shell(cfg), readFile(cfg), listDir(cfg), writeFile(cfg), editFile(cfg)}, nil
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

// resolve makes p absolute: "~/" is the home directory, relative paths
// are under dir.
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
	return filepath.Clean(p), nil
}

// display is p as shown to people and matched by allowlist prefixes:
// relative to dir when inside it, else absolute.
func display(dir, p string) string {
	if rel, err := filepath.Rel(dir, p); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return rel
	}
	return p
}

// pathSubject is the Subject of tools whose arguments carry a "path".
func pathSubject(dir string) func(json.RawMessage) string {
	return func(raw json.RawMessage) string {
		var a struct {
			Path string `json:"path"`
		}
		if json.Unmarshal(raw, &a) != nil {
			return ""
		}
		p, err := resolve(dir, a.Path)
		if err != nil {
			return ""
		}
		return display(dir, p)
	}
}
