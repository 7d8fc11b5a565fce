package agent

import (
	"errors"
	"runtime"
	"strings"
	"testing"
)

// TestPrefixRuleTable is the table of programs a prefix rule may and may
// not name. Each refused program runs a command or writes a file through
// its arguments; the calls beside them show how.
func TestPrefixRuleTable(t *testing.T) {
	reg, err := NewRegistry(Tool{Name: "shell", SubjectKind: SubjectCommand, Run: noop})
	if err != nil {
		t.Fatal(err)
	}
	refused := []struct{ program, how string }{
		{"sqlite3", "sqlite3 :memory: '.shell touch X'"},
		{"cp", "cp evil .git/config"},
		{"mv", "mv evil .git/config"},
		{"tee", "tee .git/config"},
		{"install", "install evil .git/hooks/pre-commit"},
		{"fd", "fd -x sh"},
		{"taskset", "taskset 1 sh"},
		{"ionice", "ionice sh"},
		{"nsenter", "nsenter sh"},
		{"chrt", "chrt 1 sh"},
		{"firejail", "firejail sh"},
		{"ssh-agent", "ssh-agent sh"},
		{"dbus-run-session", "dbus-run-session sh"},
		{"xdg-open", "xdg-open evil.desktop"},
		{"osascript", "osascript -e 'do shell script'"},
		{"gh", "gh alias set x '!sh'"},
		{"pytest", "pytest -p evil"},
		{"git", "git diff --output=x"},
		{"find", "find . -exec sh ;"},
		{"env", "env sh"},
		{"sh", "sh -c x"},
		{"python3", "python3 -c x"},
		{"awk", "awk 'BEGIN{system(\"x\")}'"},
		{"sed", "sed -i s/a/b/ x"},
		{"tar", "tar --to-command=sh"},
		{"rsync", "rsync -e sh"},
		{"xargs", "xargs sh"},
		{"timeout", "timeout 1 sh"},
		{"nice", "nice sh"},
		{"curl", "curl -o x"},
		{"wget", "wget -O x"},
		{"dd", "dd of=x"},
		{"rm", "rm -rf ~"},
		{"chmod", "chmod 777 x"},
		{"ln", "ln -s x y"},
		{"touch", "touch x"},
		{"mkdir", "mkdir x"},
		{"./ls", "./ls (a file the model wrote)"},
		{"/usr/bin/ls", "a path names whatever file is there"},
	}
	for _, r := range refused {
		entry := "shell:" + r.program + " *"
		err := CheckAllow([]string{entry}, reg)
		if !errors.Is(err, ErrBadRule) {
			t.Errorf("CheckAllow(%q) = %v, want refused (%s)", entry, err, r.how)
		}
		if commandMatches(r.program+" *", r.how) || commandMatches(r.program+" *", r.program+" x") {
			t.Errorf("a prefix rule for %s matched a call", r.program)
		}
	}
	// Exact commands of any program stay allowed.
	if err := CheckAllow([]string{"shell:sqlite3 notes.db .tables", "shell:git status", "shell:cp a b"}, reg); err != nil {
		t.Errorf("exact commands refused: %v", err)
	}
	for name := range prefixPrograms {
		if err := CheckAllow([]string{"shell:" + name + " *"}, reg); err != nil {
			t.Errorf("listed program %s refused: %v", name, err)
		}
	}

	// Listed programs: calls their rule matches, and calls giving them an
	// option that runs a program or writes a file, which it never does.
	calls := []struct {
		rule, call string
		want       bool
	}{
		{"ls *", "ls -la src", true},
		{"sort *", "sort -u names.txt", true},
		{"sort *", "sort --compress-program=sh big.txt", false},
		{"sort *", "sort --compress-prog=sh big.txt", false}, // an abbreviation GNU accepts
		{"sort *", "sort --comp sh big.txt", false},
		{"sort *", "sort '--compress-program=sh' big.txt", false},
		{"sort *", "sort -o .git/config evil", false},
		{"sort *", "sort -uo .git/config evil", false},
		{"sort *", "sort --output=.git/config evil", false},
		{"sort *", "sort --out .git/config evil", false},
		{"sort -r *", "sort -r -o x y", false},
		{"rg *", "rg TODO src", true},
		{"rg *", "rg --pre sh TODO", false},
		{"rg *", "rg --pre=sh TODO", false},
		{"rg *", "rg -z TODO", false},
		{"rg *", "rg --hostname-bin=sh TODO", false},
		{"tree *", "tree -L 2", true},
		{"tree *", "tree -o .git/config", false},
		{"date *", "date +%F", true},
		{"date *", "date -s tomorrow", false},
		{"date *", "date --set=tomorrow", false},
		{"uniq *", "uniq names.txt", true},
		{"uniq *", "uniq names.txt .git/config", false},
		{"grep *", "grep -rn TODO .", true},
		{"cat *", "cat a b c", true},
	}
	for _, c := range calls {
		if got := commandMatches(c.rule, c.call); got != c.want {
			t.Errorf("commandMatches(%q, %q) = %v, want %v", c.rule, c.call, got, c.want)
		}
	}
	if err := CheckAllow([]string{"shell:sort -o out *"}, reg); !errors.Is(err, ErrBadRule) {
		t.Errorf("a prefix rule naming a writing option was accepted: %v", err)
	}
}

// TestPrefixProgramsSayWhy keeps the reviewed list reviewed: every entry
// says why it is safe.
func TestPrefixProgramsSayWhy(t *testing.T) {
	for name, p := range prefixPrograms {
		if strings.TrimSpace(p.why) == "" {
			t.Errorf("%s has no reason", name)
		}
	}
}

func TestProgramNamesFoldCaseWhereFilesDo(t *testing.T) {
	folds := runtime.GOOS == "darwin" || runtime.GOOS == "windows"
	if got := PrefixAllowed("Sort"); got != folds {
		t.Errorf("PrefixAllowed(Sort) = %v on %s", got, runtime.GOOS)
	}
	if folds && prefixArgsAllowed("SORT", []word{{text: "--compress-program=sh"}}) {
		t.Error("SORT's refused option passed")
	}
}
