package agent

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
)

// SubjectKind says how allowlist entries are matched against a tool's
// subject.
type SubjectKind int

const (
	// SubjectText subjects match an entry exactly.
	SubjectText SubjectKind = iota
	// SubjectCommand subjects are shell command lines, matched word by
	// word: an entry is an exact command, or a command followed by " *"
	// for "and any further arguments".
	SubjectCommand
	// SubjectPath subjects are paths (relative to the working directory
	// when inside it, symlinks resolved): an entry ending in "/" covers
	// that directory and everything below it, any other entry one path.
	SubjectPath
)

// ErrBadRule marks an allowlist entry that can never be honoured as
// written; the message says why.
var ErrBadRule = errors.New("bad tools.allow entry")

// anyArgs is the last word of a command entry that lets further
// arguments follow.
const anyArgs = "*"

// CheckAllow refuses entries that can never be honoured as written: a
// prefix rule for a program not on the reviewed list (see
// prefixPrograms), an empty or malformed rule, a tool the registry does
// not hold.
func CheckAllow(allow []string, tools *Registry) error {
	var errs []error
	for _, entry := range allow {
		name, rule, hasRule := strings.Cut(strings.TrimSpace(entry), ":")
		if name == mcpRules {
			if err := checkMCPRule(entry, rule, hasRule, tools); err != nil {
				errs = append(errs, err)
			}
			continue
		}
		var tool Tool
		ok := false
		if tools != nil {
			tool, ok = tools.Get(name)
		}
		if !ok {
			if server, _, dotted := strings.Cut(name, "."); dotted && tools != nil && slices.Contains(tools.Servers(), server) {
				errs = append(errs, fmt.Errorf("%w %q: an MCP server's tool is allowed as %q", ErrBadRule, entry, mcpRules+":"+name))
				continue
			}
			errs = append(errs, fmt.Errorf("%w %q: no tool named %q", ErrBadRule, entry, name))
			continue
		}
		if !hasRule {
			continue
		}
		rule = strings.TrimSpace(rule)
		if rule == "" {
			errs = append(errs, fmt.Errorf("%w %q: nothing after the colon (write %q to allow every call)", ErrBadRule, entry, name))
			continue
		}
		if tool.SubjectKind != SubjectCommand {
			continue
		}
		words, ok := splitCommand(rule)
		if !ok || len(words) == 0 || words[0].text == anyArgs {
			errs = append(errs, fmt.Errorf("%w %q: write a plain command such as \"shell:ls -la\" or \"shell:ls *\" (no shell operators)", ErrBadRule, entry))
			continue
		}
		if last := words[len(words)-1]; last.text == anyArgs && !last.quoted {
			if !PrefixAllowed(words[0].text) {
				errs = append(errs, fmt.Errorf("%w %q: a rule ending in \" *\" may only name a program that runs nothing and writes nothing through its arguments (%s); allow %s as exact commands instead (e.g. \"shell:%s\")", ErrBadRule, entry, prefixList(), words[0].text, exampleExact(words)))
			} else if !prefixArgsAllowed(words[0].text, words[1:len(words)-1]) {
				errs = append(errs, fmt.Errorf("%w %q: it names an option that makes %s run a program or write a file", ErrBadRule, entry, words[0].text))
			}
		}
	}
	return errors.Join(errs...)
}

// mcpRules begins the allowlist entries for MCP servers' tools:
// "mcp:server.tool" for one, "mcp:server.*" for every tool of a server.
const mcpRules = "mcp"

// checkMCPRule refuses an "mcp:" entry that names no configured server,
// or no server at all ("mcp", "mcp:*": each server is named on purpose).
func checkMCPRule(entry, rule string, hasRule bool, tools *Registry) error {
	rule = strings.TrimSpace(rule)
	server, tool, dotted := strings.Cut(rule, ".")
	if !hasRule || !dotted || server == "" || tool == "" || strings.ContainsAny(rule, " \t") {
		return fmt.Errorf("%w %q: write \"mcp:server.tool\" for one tool or \"mcp:server.*\" for every tool of one server", ErrBadRule, entry)
	}
	var servers []string
	if tools != nil {
		servers = tools.Servers()
	}
	if !slices.Contains(servers, server) {
		if len(servers) == 0 {
			return fmt.Errorf("%w %q: no MCP server is configured (mcp.servers)", ErrBadRule, entry)
		}
		return fmt.Errorf("%w %q: no MCP server named %q (mcp.servers has %s)", ErrBadRule, entry, server, strings.Join(servers, ", "))
	}
	return nil
}

// mcpAllowed reports whether an "mcp:" rule covers an MCP tool: its name
// exactly, or every tool of its server ("server.*").
func mcpAllowed(rule string, tool Tool) bool {
	if tool.Server == "" {
		return false
	}
	rule = strings.TrimSpace(rule)
	return rule == tool.Name || rule == tool.Server+".*"
}

// allowed reports whether the allowlist lets a call run unasked. An entry
// "name" allows every call of the tool; "name:rule" allows calls whose
// subject the rule matches (see SubjectKind); "mcp:rule" allows an MCP
// server's tools (mcpAllowed).
func allowed(allow []string, tool Tool, subject string) bool {
	subject = strings.TrimSpace(subject)
	for _, entry := range allow {
		name, rule, hasRule := strings.Cut(strings.TrimSpace(entry), ":")
		if name == mcpRules && hasRule && mcpAllowed(rule, tool) {
			return true
		}
		if name != tool.Name || tool.Server != "" {
			continue
		}
		if !hasRule {
			return true
		}
		rule = strings.TrimSpace(rule)
		if rule == "" || subject == "" {
			continue
		}
		var ok bool
		switch tool.SubjectKind {
		case SubjectCommand:
			ok = commandMatches(rule, subject)
		case SubjectPath:
			ok = pathMatches(rule, subject)
		default:
			ok = rule == subject
		}
		if ok {
			return true
		}
	}
	return false
}

// ruleMatches reports whether one "name:rule" entry names this tool and
// matches subject explicitly (a bare tool name does not).
func ruleMatches(allow []string, tool Tool, subject string) bool {
	for _, entry := range allow {
		if strings.Contains(entry, ":") && allowed([]string{entry}, tool, subject) {
			return true
		}
	}
	return false
}

// commandMatches matches a command line against a rule: the same words,
// or, for a rule ending in " *", the rule's words followed by anything.
// A command line with shell syntax (operators, substitutions, redirections,
// unquoted globs in the part that must match) never matches, nor does a
// prefix rule for a program off the reviewed list, nor a call giving such
// a program an option that runs or writes.
func commandMatches(rule, subject string) bool {
	want, ok := splitCommand(rule)
	if !ok || len(want) == 0 {
		return false
	}
	got, ok := splitCommand(subject)
	if !ok {
		return false
	}
	prefix := false
	if last := want[len(want)-1]; last.text == anyArgs && !last.quoted {
		prefix = true
		want = want[:len(want)-1]
		if len(want) == 0 || !PrefixAllowed(want[0].text) || len(got) == 0 || !prefixArgsAllowed(got[0].text, got[1:]) {
			return false
		}
	}
	if len(got) < len(want) || (!prefix && len(got) != len(want)) {
		return false
	}
	for i, w := range want {
		if got[i].text != w.text || got[i].glob {
			return false
		}
	}
	return true
}

// word is one shell word: its text with quotes removed, whether any part
// was quoted, and whether an unquoted part would be expanded (*, ?, [, a
// leading ~).
type word struct {
	text   string
	quoted bool
	glob   bool
}

// shellSyntax are characters that let one command line do more than its
// words say (chaining, substitution, redirection, grouping, escapes).
const shellSyntax = ";&|`$<>(){}\\\n\r!#"

// splitCommand splits a command line into words the way bash would for a
// simple command, refusing (ok=false) anything beyond words and quotes.
func splitCommand(s string) (words []word, ok bool) {
	var cur strings.Builder
	var w word
	in := false
	flush := func() {
		if in {
			w.text = cur.String()
			words = append(words, w)
		}
		cur.Reset()
		w, in = word{}, false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t':
			flush()
		case c == '\'' || c == '"':
			end := strings.IndexByte(s[i+1:], c)
			if end < 0 {
				return nil, false
			}
			quoted := s[i+1 : i+1+end]
			if c == '"' && strings.ContainsAny(quoted, "$`\\!") {
				return nil, false
			}
			cur.WriteString(quoted)
			w.quoted, in = true, true
			i += end + 1
		case strings.IndexByte(shellSyntax, c) >= 0:
			return nil, false
		default:
			if c == '*' || c == '?' || c == '[' || (c == '~' && !in) {
				w.glob = true
			}
			if c == '=' && len(words) == 0 && !w.quoted {
				// VAR=value before a command changes its environment.
				return nil, false
			}
			cur.WriteByte(c)
			in = true
		}
	}
	flush()
	return words, true
}

// pathMatches matches a path subject against a rule: "dir/" covers the
// directory and everything below it, anything else that one path. A
// repository's .git (its config and hooks run commands) is covered only by
// a rule that names it.
func pathMatches(rule, subject string) bool {
	if inGitDir(subject) && !inGitDir(rule) {
		return false
	}
	if dir, isDir := strings.CutSuffix(rule, "/"); isDir {
		dir = path.Clean(dir)
		if dir == "." {
			return !strings.HasPrefix(subject, "/") && subject != ".." && !strings.HasPrefix(subject, "../")
		}
		return strings.HasPrefix(subject, dir+"/")
	}
	return path.Clean(rule) == subject
}

// ErrSubjectMoved is a call whose subject changed while it was checked
// (a link in its path moved): it is not run.
var ErrSubjectMoved = errors.New("the path changed while it was being checked (a link in it moved); not run")

// rulesWithin keeps the entries whose rule names dir or a path in it: the
// only ones that cover a call in a repository's control directory.
func rulesWithin(allow []string, dir string) []string {
	var kept []string
	for _, entry := range allow {
		_, rule, hasRule := strings.Cut(strings.TrimSpace(entry), ":")
		rule = strings.TrimSuffix(strings.TrimSpace(rule), "/")
		if hasRule && rule != "" && (path.Clean(rule) == dir || strings.HasPrefix(path.Clean(rule), dir+"/")) {
			kept = append(kept, entry)
		}
	}
	return kept
}

type subjectKey struct{}

// WithSubject passes a tool the subject its call was checked with, so it
// can refuse to act on anything else.
func WithSubject(ctx context.Context, subject string) context.Context {
	return context.WithValue(ctx, subjectKey{}, subject)
}

// CheckedSubject is the subject the call running under ctx was checked
// with; ok is false outside a checked call (a tool run directly).
func CheckedSubject(ctx context.Context) (subject string, ok bool) {
	subject, ok = ctx.Value(subjectKey{}).(string)
	return subject, ok
}

type autoKey struct{}

// WithAutoAllowed marks ctx for a tool call the allowlist let run without
// asking anyone; tools may then run more defensively (git with its hooks
// off).
func WithAutoAllowed(ctx context.Context) context.Context {
	return context.WithValue(ctx, autoKey{}, true)
}

// AutoAllowed reports whether the call running under ctx was let through
// by the allowlist rather than by a person.
func AutoAllowed(ctx context.Context) bool {
	v, _ := ctx.Value(autoKey{}).(bool)
	return v
}

// inGitDir reports whether a slash-separated path has a .git component.
func inGitDir(p string) bool {
	for _, part := range strings.Split(p, "/") {
		if strings.EqualFold(part, ".git") {
			return true
		}
	}
	return false
}
