package agent

import (
	"strings"
	"testing"
)

// Whatever the model writes, an exact rule matches only the very words it
// names, and a prefix rule only commands starting with its words; nothing
// with shell syntax outside quotes matches.
func FuzzCommandMatches(f *testing.F) {
	for _, s := range []string{"git status", "git status -s", "ls -la", "ls; rm x", "ls 'a;b'", `ls "$(x)"`, "git\tstatus",
		"GIT_DIR=x git status", "ls *", "ls \\; x", "git status #", "'git' status", "ls ~", "ls\x00", `ls "&"`, `ls "a'b" c`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, cmd string) {
		if commandMatches("git status", cmd) {
			w, ok := splitCommand(cmd)
			if !ok || len(w) != 2 || w[0].text != "git" || w[1].text != "status" {
				t.Fatalf("%q matched `git status`: %+v", cmd, w)
			}
		}
		if commandMatches("ls *", cmd) {
			w, ok := splitCommand(cmd)
			if !ok || len(w) == 0 || w[0].text != "ls" || w[0].glob {
				t.Fatalf("%q matched `ls *`: %+v", cmd, w)
			}
		}
		if commandMatches("git status *", cmd) {
			t.Fatalf("a prefix rule for git matched %q", cmd)
		}
		if unquotedSyntax(cmd) && (commandMatches("ls *", cmd) || commandMatches("git status", cmd)) {
			t.Fatalf("%q with shell syntax matched", cmd)
		}
	})
}

// unquotedSyntax reports a shell syntax character the shell would act on:
// outside quotes, any of them; inside double quotes, only substitution
// and escapes ($, `, \); inside single quotes, none.
func unquotedSyntax(s string) bool {
	var quote rune
	for _, r := range s {
		switch {
		case quote == 0 && (r == '\'' || r == '"'):
			quote = r
		case quote != 0 && r == quote:
			quote = 0
		case quote == '"' && strings.ContainsRune("$`\\", r):
			return true
		case quote == 0 && strings.ContainsRune(";&|`$<>(){}\\\n\r", r):
			return true
		}
	}
	return false
}
