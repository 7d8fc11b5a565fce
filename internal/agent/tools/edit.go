package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/baton-agent/baton/internal/agent"

	"github.com/baton-agent/baton/internal/plural"
)

type editArgs struct {
	Path       string `json:"path"`
	OldString  string `json:"old_string"`
	NewString  string `json:"new_string"`
	ReplaceAll bool   `json:"replace_all"`
}

func editFile(cfg Config) agent.Tool {
	return agent.Tool{
		Name: "edit_file",
		Description: "Replace old_string with new_string in a file. old_string must match exactly, whitespace included, and occur exactly once " +
			"unless replace_all is true; include surrounding lines to make it unique.",
		Schema: json.RawMessage(`{"type":"object","properties":{` +
			`"path":{"type":"string","description":"File path, relative to the working directory or absolute."},` +
			`"old_string":{"type":"string","description":"Exact text to replace."},` +
			`"new_string":{"type":"string","description":"Replacement text."},` +
			`"replace_all":{"type":"boolean","description":"Replace every occurrence."}},` +
			`"required":["path","old_string","new_string"]}`),
		Run: func(ctx context.Context, raw json.RawMessage) (string, error) {
			a, err := decode[editArgs]("edit_file", raw)
			if err != nil {
				return "", err
			}
			p, err := checked(ctx, cfg, a.Path)
			if err != nil {
				return "", err
			}
			n, err := edit(p, a)
			if err != nil {
				return "", err
			}
			return fmt.Sprintf("replaced %s in %s", plural.Count(n, "occurrence", "occurrences"), display(cfg.Dir, p)), nil
		},
		Subject:     pathSubject(cfg, ""),
		SubjectKind: agent.SubjectPath,
		Inside:      writeInside(cfg),
		Control:     writeGuard(cfg),
	}
}

func edit(path string, a editArgs) (int, error) {
	if a.OldString == "" {
		return 0, errors.New("old_string is empty; use write_file to create or replace a whole file")
	}
	if a.OldString == a.NewString {
		return 0, errors.New("old_string and new_string are the same; nothing to change")
	}
	f, err := openResolved(path, os.O_RDONLY, 0, false)
	if err != nil {
		return 0, err
	}
	data, err := io.ReadAll(f)
	f.Close()
	if err != nil {
		return 0, err
	}
	text := string(data)
	n := strings.Count(text, a.OldString)
	switch {
	case n == 0:
		return 0, fmt.Errorf("old_string not found in %s; it must match exactly, including whitespace and indentation (read the file again)", path)
	case n > 1 && !a.ReplaceAll:
		return 0, fmt.Errorf("old_string occurs %d times in %s; include more surrounding text to make it unique, or set replace_all", n, path)
	}
	if a.ReplaceAll {
		text = strings.ReplaceAll(text, a.OldString, a.NewString)
	} else {
		text = strings.Replace(text, a.OldString, a.NewString, 1)
	}
	if _, err := writeKeepingMode(path, []byte(text)); err != nil {
		return 0, err
	}
	return n, nil
}
