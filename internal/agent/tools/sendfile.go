package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/baton-agent/baton/internal/agent"
	"github.com/baton-agent/baton/internal/plural"
	"github.com/baton-agent/baton/internal/store"
)

// FileKeeper keeps a file's bytes where the transcript is (store.Files).
type FileKeeper interface {
	PutFile(ctx context.Context, r io.Reader, name string) (store.Attachment, error)
}

type sendArgs struct {
	Path    string `json:"path"`
	Caption string `json:"caption"`
}

// sendFile is send_file: a file under the working directory or the
// configured paths goes to the person, where the conversation is held. It
// sends a file off the machine, so it asks as a write does; a path
// elsewhere is refused, whatever the answer would be.
func sendFile(cfg Config) agent.Tool {
	return agent.Tool{
		Name: "send_file",
		Description: "Send a file to the person you are talking with, where the conversation is (their phone, the web chat, the terminal): " +
			"a picture shows as a picture, anything else as a file. caption is a short line sent with it. " +
			"Only files under the working directory or the configured paths.",
		Schema: json.RawMessage(`{"type":"object","properties":{` +
			`"path":{"type":"string","description":"File path, relative to the working directory or absolute."},` +
			`"caption":{"type":"string","description":"A short line sent with the file; optional."}},"required":["path"]}`),
		Run: func(ctx context.Context, raw json.RawMessage) (string, error) {
			a, err := decode[sendArgs]("send_file", raw)
			if err != nil {
				return "", err
			}
			p, err := checked(ctx, cfg, a.Path)
			if err != nil {
				return "", err
			}
			if !cfg.free(p) {
				return "", fmt.Errorf("%s is outside the working directory and the configured paths (tools.paths): only files there can be sent", display(cfg.Dir, p))
			}
			if cfg.Files == nil {
				return "", errors.New("files cannot be sent from here (no store keeps them)")
			}
			f, err := openResolved(p, os.O_RDONLY, 0, false)
			if err != nil {
				return "", err
			}
			defer f.Close()
			if fi, err := f.Stat(); err != nil {
				return "", err
			} else if !fi.Mode().IsRegular() {
				return "", fmt.Errorf("%s is not a regular file", display(cfg.Dir, p))
			}
			att, err := cfg.Files.PutFile(ctx, f, filepath.Base(p))
			if err != nil {
				return "", fmt.Errorf("keep %s: %w", display(cfg.Dir, p), err)
			}
			att.Name = filepath.Base(p)
			if !agent.SendFile(ctx, att, a.Caption) {
				return "", errors.New("files cannot be sent from here (not in a conversation turn)")
			}
			return fmt.Sprintf("%s (%s, %s) will be sent to the person with your answer", att.Name, att.MediaType, plural.Size(att.Size)), nil
		},
		Subject:     pathSubject(cfg, ""),
		SubjectKind: agent.SubjectPath,
		Inside:      readInside(cfg, ""),
		Sends:       true,
	}
}
