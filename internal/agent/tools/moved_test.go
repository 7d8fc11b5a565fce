package tools_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/baton-agent/baton/internal/agent"
	"github.com/baton-agent/baton/internal/agent/tools"
)

// A folder checked as a folder and swapped for a link before the write:
// the write acts on what was checked or on nothing, never through the link.
func TestWriteActsOnlyOnTheCheckedPath(t *testing.T) {
	r, dir := registry(t, tools.Config{})
	outside := t.TempDir()
	sub := filepath.Join(dir, "docs", "sub")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"write_file", "edit_file", "read_file"} {
		tool, _ := r.Get(name)
		args := json.RawMessage(`{"path":"docs/sub/f.txt","old_string":"a","new_string":"b"}`)
		if name == "write_file" {
			args = json.RawMessage(`{"path":"docs/sub/f.txt","content":"x"}`)
		}
		if name == "read_file" {
			args = json.RawMessage(`{"path":"docs/sub/f.txt"}`)
		}
		subject := tool.Subject(args)
		if subject != "docs/sub/f.txt" {
			t.Fatalf("subject %q", subject)
		}
		// The folder becomes a link to a file of the same name elsewhere.
		if err := os.WriteFile(filepath.Join(outside, "f.txt"), []byte("a"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(sub, sub+".held"); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(outside, sub); err != nil {
			t.Fatal(err)
		}
		out, err := tool.Run(agent.WithSubject(context.Background(), subject), args)
		if !errors.Is(err, agent.ErrSubjectMoved) {
			t.Errorf("%s through a moved link: %q, %v; want ErrSubjectMoved", name, out, err)
		}
		if got, _ := os.ReadFile(filepath.Join(outside, "f.txt")); string(got) != "a" {
			t.Errorf("%s changed the file outside: %q", name, got)
		}
		if err := os.Remove(sub); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(sub+".held", sub); err != nil {
			t.Fatal(err)
		}
	}
}
