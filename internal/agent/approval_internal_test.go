package agent

import "testing"

func TestAllowed(t *testing.T) {
	allow := []string{"read_file", "shell:git status", "shell:go test ", "write_file:docs/", "edit_file:"}
	cases := []struct {
		tool, subject string
		want          bool
	}{
		{"read_file", "anything", true},
		{"shell", "git status", true},
		{"shell", "git status -s", true},
		{"shell", "  git status  ", true},
		{"shell", "git statusx", false},
		{"shell", "git status; rm -rf ~", false},
		{"shell", "git status && rm -rf ~", false},
		{"shell", "git status | sh", false},
		{"shell", "git status $(rm x)", false},
		{"shell", "git status `rm x`", false},
		{"shell", "git status > out", false},
		{"shell", "git status\nrm x", false},
		{"shell", "git push", false},
		{"shell", "go test ./...", true},
		{"shell", "", false},
		{"write_file", "docs/a.md", true},
		{"write_file", "docs", false},
		{"write_file", "docsx/a.md", false},
		{"write_file", "../docs/a.md", false},
		{"edit_file", "x", false}, // an empty prefix allows nothing
		{"list_dir", "x", false},
	}
	for _, c := range cases {
		if got := allowed(allow, c.tool, c.subject); got != c.want {
			t.Errorf("allowed(%s, %q) = %v, want %v", c.tool, c.subject, got, c.want)
		}
	}
}
