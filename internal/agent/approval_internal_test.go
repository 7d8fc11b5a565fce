package agent

import (
	"context"
	"encoding/json"
	"testing"
)

func TestAllowed(t *testing.T) {
	shell := Tool{Name: "shell", SubjectKind: SubjectCommand}
	write := Tool{Name: "write_file", SubjectKind: SubjectPath}
	edit := Tool{Name: "edit_file", SubjectKind: SubjectPath}
	read := Tool{Name: "read_file", SubjectKind: SubjectPath}
	list := Tool{Name: "list_dir", SubjectKind: SubjectPath}
	allow := []string{"read_file", "shell:git status", "shell:ls *", "shell:go test ./...", "shell:find . *",
		"shell:echo 'a b'", "write_file:docs/", "write_file:notes.md", "edit_file:"}
	cases := []struct {
		tool    Tool
		subject string
		want    bool
	}{
		{read, "anything", true},
		{shell, "git status", true},
		{shell, "  git status  ", true},
		{shell, "git  status", true},
		{shell, "git 'status'", true},
		// What the old prefix rule let through.
		{shell, "git status -s", false},
		{shell, "git status --output=x", false},
		{shell, "git diff --output=x", false},
		{shell, "go test -exec=./evil ./...", false},
		{shell, "go test ./... -exec=./evil", false},
		{shell, "find . -exec rm {} +", false}, // a prefix rule for a runner matches nothing
		{shell, "find .", false},
		{shell, "git statusx", false},
		{shell, "git status; rm -rf ~", false},
		{shell, "git status && rm -rf ~", false},
		{shell, "git status | sh", false},
		{shell, "git status $(rm x)", false},
		{shell, "git status `rm x`", false},
		{shell, "git status > out", false},
		{shell, "git status\nrm x", false},
		{shell, "GIT_DIR=x git status", false},
		{shell, "git status #", false},
		{shell, "git st*", false},
		{shell, "go test ./...", true},
		{shell, "ls", true},
		{shell, "ls -la src", true},
		{shell, "ls *.go", true},
		{shell, "l* -la", false},
		{shell, "ls \"$(rm x)\"", false},
		{shell, "echo 'a b'", true},
		{shell, "echo a b", false}, // two words, not one
		{shell, "", false},
		{write, "docs/a.md", true},
		{write, "docs/sub/a.md", true},
		{write, "docs", false},
		{write, "docsx/a.md", false},
		{write, "/etc/docs/a.md", false},
		{write, "docs/.git/config", false},
		{write, "notes.md", true},
		{write, "notes.md.bak", false},
		{edit, "x", false}, // an empty rule allows nothing
		{list, "x", false},
	}
	for _, c := range cases {
		if got := allowed(allow, c.tool, c.subject); got != c.want {
			t.Errorf("allowed(%s, %q) = %v, want %v", c.tool.Name, c.subject, got, c.want)
		}
	}
}

func TestCheckAllow(t *testing.T) {
	reg, err := NewRegistry(
		Tool{Name: "shell", SubjectKind: SubjectCommand, Run: noop},
		Tool{Name: "write_file", SubjectKind: SubjectPath, Run: noop},
	)
	if err != nil {
		t.Fatal(err)
	}
	good := []string{"shell", "write_file", "shell:git status", "shell:ls *", "write_file:docs/"}
	if err := CheckAllow(good, reg); err != nil {
		t.Errorf("good entries refused: %v", err)
	}
	for _, bad := range []string{"shell:git status *", "shell:find *", "shell:/usr/bin/env *", "shell:ls; rm *", "shell:*", "shell:", "fly", "shell:A=1 ls"} {
		if err := CheckAllow([]string{bad}, reg); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func noop(context.Context, json.RawMessage) (string, error) { return "", nil }
