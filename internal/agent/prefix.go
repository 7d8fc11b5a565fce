package agent

import (
	"runtime"
	"sort"
	"strings"
)

// prefixProgram is a program a prefix rule ("shell:ls *") may name: one
// that reads what its arguments name and writes only to standard output,
// and runs no other program. Any program not listed can only be allowed
// as an exact command, since too many programs run commands or write
// files through an argument (sqlite3's .shell, sort's
// --compress-program, cp, tee, rg --pre, fd -x, taskset, ionice, …).
type prefixProgram struct {
	// why it is safe with any arguments but those refused below.
	why string
	// long options that make it run a program or write a file; a word
	// naming any abbreviation of one (GNU getopt takes unambiguous
	// prefixes: --comp is --compress-program) is refused, with or
	// without "=value".
	long []string
	// short options doing the same; refused alone or inside a cluster
	// ("-uo out").
	short string
	// maxArgs, when positive, bounds the words after the program name that
	// do not start with "-" (uniq's second operand is a file it writes).
	maxArgs int
}

// prefixPrograms is the reviewed list of programs a prefix rule may name.
// Keep it short: adding a program means reading its manual for every way
// it can run a command or write a file.
var prefixPrograms = map[string]prefixProgram{
	"ls":        {why: "lists directories"},
	"cat":       {why: "prints files"},
	"head":      {why: "prints the start of files"},
	"tail":      {why: "prints the end of files"},
	"wc":        {why: "counts lines, words and bytes"},
	"nl":        {why: "numbers lines"},
	"echo":      {why: "prints its arguments"},
	"pwd":       {why: "prints the working directory"},
	"whoami":    {why: "prints the user name"},
	"id":        {why: "prints user and group ids"},
	"uname":     {why: "prints the system's name"},
	"du":        {why: "sums disk usage"},
	"df":        {why: "prints free disk space"},
	"stat":      {why: "prints file status"},
	"which":     {why: "finds a program on PATH"},
	"cmp":       {why: "compares two files"},
	"diff":      {why: "compares files; GNU diff has no option that runs or writes"},
	"grep":      {why: "searches files"},
	"cut":       {why: "prints columns"},
	"basename":  {why: "prints a path's last element"},
	"dirname":   {why: "prints a path's directory"},
	"realpath":  {why: "prints a resolved path"},
	"readlink":  {why: "prints a link's target"},
	"md5sum":    {why: "prints checksums"},
	"sha1sum":   {why: "prints checksums"},
	"sha256sum": {why: "prints checksums"},
	"jq":        {why: "filters JSON; it has no way to run a program or write a file"},
	"sort":      {why: "sorts lines", long: []string{"--compress-program", "--output"}, short: "o"},
	"rg":        {why: "searches files", long: []string{"--pre", "--pre-glob", "--search-zip", "--hostname-bin"}, short: "z"},
	"tree":      {why: "lists a directory tree", short: "o"},
	"date":      {why: "prints the date", long: []string{"--set"}, short: "s"},
	"uniq":      {why: "drops repeated lines; its second operand would be a file it writes", maxArgs: 1},
}

// programName is how a command's first word is looked up: on macOS and
// Windows file names compare case-insensitively, so "Sort" runs sort.
func programName(word string) string {
	if runtime.GOOS == "darwin" || runtime.GOOS == "windows" {
		return strings.ToLower(word)
	}
	return word
}

// PrefixAllowed reports whether a prefix rule may name program: only a
// bare name (no path, which could point at any file) of a program on the
// reviewed list.
func PrefixAllowed(program string) bool {
	if strings.ContainsAny(program, `/\`) {
		return false
	}
	_, ok := prefixPrograms[programName(program)]
	return ok
}

// prefixArgsAllowed reports whether args, the words after a listed
// program, keep it to reading and printing: none is a refused option,
// and there are no more operands than the program allows.
func prefixArgsAllowed(program string, args []word) bool {
	p, ok := prefixPrograms[programName(program)]
	if !ok {
		return false
	}
	operands := 0
	for _, a := range args {
		// Every word is checked, even after "--": a file named like an
		// option is not worth the doubt.
		switch {
		case strings.HasPrefix(a.text, "--"):
			name, _, _ := strings.Cut(a.text, "=")
			for _, opt := range p.long {
				if len(name) > 2 && strings.HasPrefix(opt, name) {
					return false
				}
			}
		case strings.HasPrefix(a.text, "-") && len(a.text) > 1:
			if strings.ContainsAny(a.text[1:], p.short) && p.short != "" {
				return false
			}
		default:
			operands++
		}
	}
	return p.maxArgs == 0 || operands <= p.maxArgs
}

// prefixList names the programs a prefix rule may name, for an error
// message.
func prefixList() string {
	names := make([]string, 0, len(prefixPrograms))
	for name := range prefixPrograms {
		names = append(names, name)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// exampleExact turns a prefix rule's words into an exact rule to suggest.
func exampleExact(words []word) string {
	texts := make([]string, 0, len(words))
	for _, w := range words[:len(words)-1] {
		texts = append(texts, w.text)
	}
	if len(texts) == 1 {
		texts = append(texts, "…")
	}
	return strings.Join(texts, " ")
}
