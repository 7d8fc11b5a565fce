// Package command is baton's one registry of slash commands, shared by the
// terminal REPL and the chat gateway: names, aliases, where each command is
// valid, how a typed line parses into a command and its arguments, and the
// help text. It knows nothing of terminals or chat services; callers run
// the commands.
package command

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode"

	"github.com/baton-agent/baton/internal/platform"
)

// Scope says where a command can be used. It is a bit set.
type Scope uint8

const (
	Terminal Scope = 1 << iota // the baton REPL
	Chat                       // a chat platform, through the gateway
	Both     = Terminal | Chat
)

func (s Scope) String() string {
	switch s {
	case Terminal:
		return "terminal"
	case Chat:
		return "chat"
	case Both:
		return "terminal and chat"
	}
	return "nowhere"
}

// Arity says whether a command takes arguments.
type Arity uint8

const (
	NoArgs       Arity = iota // anything after the name is an error
	OptionalArgs              // may be given
	RequiredArgs              // must be given
)

// Categories used by baton's commands, in the order help lists them.
const (
	CategorySession = "Session"
	CategoryTurn    = "Conversation"
	CategoryModel   = "Model"
	CategoryPlaces  = "Places"
	CategoryGeneral = "General"
)

var categoryOrder = []string{CategorySession, CategoryTurn, CategoryModel, CategoryPlaces, CategoryGeneral}

// Command describes one slash command.
type Command struct {
	Name        string   // without the slash, lower case
	Aliases     []string // other names, without the slash
	Category    string
	Args        string // argument hint for help, e.g. "<platform>"; "" if none
	Arity       Arity
	Description string
	Scope       Scope
	// NotOn names the chat platforms where the command has no use, so
	// their help leaves it out (the web chat: only its owner types there,
	// and its home is fixed).
	NotOn []string
}

// On reports whether the command has a use on the chat platform p.
func (c Command) On(p string) bool { return !slices.Contains(c.NotOn, p) }

// Usage is the command as help shows it, e.g. "/resume <session>".
func (c Command) Usage() string {
	if c.Args == "" {
		return "/" + c.Name
	}
	return "/" + c.Name + " " + c.Args
}

// Names are the command's name and aliases.
func (c Command) Names() []string { return append([]string{c.Name}, c.Aliases...) }

// Sentinel errors Parse wraps; callers branch with errors.Is and show
// Error() to the person as a one-line hint.
var (
	ErrUnknown  = errors.New("unknown command")
	ErrUsage    = errors.New("bad arguments")
	ErrScope    = errors.New("command not available here")
	ErrNotSlash = errors.New("not a slash command")
)

// Error is a parse failure with a message meant for the person typing.
type Error struct {
	Kind error  // one of the sentinels
	Msg  string // one line, ready to show
}

func (e *Error) Error() string { return e.Msg }
func (e *Error) Unwrap() error { return e.Kind }

// Registry holds commands in registration order. It is read-only after
// construction, so one Registry may be shared by any number of goroutines.
type Registry struct {
	cmds  []Command
	index map[string]int // name or alias → position in cmds
}

// New builds a registry, refusing empty or clashing names.
func New(cmds ...Command) (*Registry, error) {
	r := &Registry{index: map[string]int{}}
	for _, c := range cmds {
		if c.Name == "" || c.Scope&Both == 0 {
			return nil, fmt.Errorf("register command %q: a command needs a name and a scope", c.Name)
		}
		for _, n := range c.Names() {
			if n == "" || n != strings.ToLower(n) || strings.ContainsFunc(n, unicode.IsSpace) || strings.HasPrefix(n, "/") {
				return nil, fmt.Errorf("register command %q: bad name %q (lower case, no spaces, no slash)", c.Name, n)
			}
			if _, dup := r.index[n]; dup {
				return nil, fmt.Errorf("register command %q: name %q already taken", c.Name, n)
			}
			r.index[n] = len(r.cmds)
		}
		r.cmds = append(r.cmds, c)
	}
	return r, nil
}

// Default is the registry of baton's own commands.
func Default() *Registry {
	r, err := New(builtin()...)
	if err != nil {
		// builtin() is a constant table; a clash is a programming error
		// caught by the package's tests.
		panic(err)
	}
	return r
}

func builtin() []Command {
	return []Command{
		{Name: "new", Aliases: []string{"reset"}, Category: CategorySession, Scope: Both, Arity: NoArgs,
			Description: "start a new session"},
		{Name: "sessions", Aliases: []string{"ls"}, Category: CategorySession, Scope: Both, Arity: NoArgs,
			Description: "list recent sessions"},
		{Name: "resume", Category: CategorySession, Scope: Both, Arity: RequiredArgs, Args: "<id prefix or title>",
			Description: "switch to an earlier session"},
		{Name: "title", Category: CategorySession, Scope: Both, Arity: OptionalArgs, Args: "[title]",
			Description: "show or set the session's title"},
		{Name: "save", Category: CategorySession, Scope: Both, Arity: NoArgs,
			Description: "write a note of where this session stands (task, progress, next steps), without moving it"},
		{Name: "search", Category: CategorySession, Scope: Both, Arity: RequiredArgs, Args: "<words>",
			Description: "search every session's messages"},
		{Name: "retry", Category: CategoryTurn, Scope: Both, Arity: NoArgs,
			Description: "answer your last message again"},
		{Name: "undo", Category: CategoryTurn, Scope: Both, Arity: NoArgs,
			Description: "remove your last message and everything after it"},
		{Name: "compress", Category: CategoryTurn, Scope: Both, Arity: NoArgs,
			Description: "summarize older turns to free context"},
		{Name: "attach", Category: CategoryTurn, Scope: Terminal, Arity: RequiredArgs, Args: "<file>…",
			Description: "attach files (a photo, a PDF, any file) to your next message"},
		{Name: "voice", Category: CategoryModel, Scope: Chat, Arity: OptionalArgs, Args: "[on | off]",
			Description: "answer with a voice note too (on), or in text only (off)"},
		{Name: "tools", Category: CategoryModel, Scope: Both, Arity: NoArgs,
			Description: "list the tools the agent can use: its own, and each MCP server's, with its state"},
		{Name: "model", Category: CategoryModel, Scope: Both, Arity: OptionalArgs, Args: "[name]",
			Description: "show or set the model for this session"},
		{Name: "handoff", Category: CategoryPlaces, Scope: Both, Arity: RequiredArgs, Args: "<platform>",
			Description: "continue this session on another platform (telegram, discord, cli, …)"},
		{Name: "continue", Category: CategoryPlaces, Scope: Both, Arity: NoArgs,
			Description: "bring the conversation held in another place here"},
		{Name: "where", Category: CategoryPlaces, Scope: Both, Arity: NoArgs,
			Description: "say which place holds this conversation, and since when"},
		{Name: "whoami", Category: CategoryPlaces, Scope: Both, Arity: NoArgs,
			Description: "list your accounts: the places baton knows you by"},
		{Name: "sethome", Category: CategoryPlaces, Scope: Chat, Arity: NoArgs, NotOn: []string{"web"},
			Description: "make this chat the place handoffs to this platform land"},
		// In a chat, a tool that needs approval asks there; these answer it.
		// Their words are the kit's, so a place that shows an answer (the
		// web page) reads them as the gateway does.
		{Name: platform.AnswerApprove, Aliases: platform.ApprovalAliases(platform.AnswerApprove), Category: CategoryTurn, Scope: Chat, Arity: NoArgs,
			Description: "let the tool the agent asked about run, this once"},
		{Name: platform.AnswerAlways, Aliases: platform.ApprovalAliases(platform.AnswerAlways), Category: CategoryTurn, Scope: Chat, Arity: NoArgs,
			Description: "let it run, and exactly the same call again in this session"},
		{Name: platform.AnswerDeny, Aliases: platform.ApprovalAliases(platform.AnswerDeny), Category: CategoryTurn, Scope: Chat, Arity: NoArgs,
			Description: "do not let it run"},
		{Name: "pairing", Category: CategoryPlaces, Scope: Chat, Arity: OptionalArgs, Args: "[list | approve CODE | deny CODE]", NotOn: []string{"web"},
			Description: "see who asked to talk to baton, and let them in or not"},
		{Name: "start", Category: CategoryGeneral, Scope: Chat, Arity: OptionalArgs, NotOn: []string{"web"},
			Description: "say hello (Telegram sends it when a chat with the bot begins)"},
		{Name: "help", Aliases: []string{"h", "?"}, Category: CategoryGeneral, Scope: Both, Arity: OptionalArgs, Args: "[command]",
			Description: "list commands, or explain one"},
		{Name: "quit", Aliases: []string{"exit", "q"}, Category: CategoryGeneral, Scope: Terminal, Arity: NoArgs,
			Description: "leave baton (the session stays and can be resumed)"},
	}
}

// All is every command in registration order.
func (r *Registry) All() []Command { return slices.Clone(r.cmds) }

// In is the commands valid in scope, in registration order.
func (r *Registry) In(scope Scope) []Command {
	var out []Command
	for _, c := range r.cmds {
		if c.Scope&scope != 0 {
			out = append(out, c)
		}
	}
	return out
}

// Lookup finds a command by name or alias, with or without the slash,
// ignoring case.
func (r *Registry) Lookup(name string) (Command, bool) {
	i, ok := r.index[strings.ToLower(strings.TrimPrefix(name, "/"))]
	if !ok {
		return Command{}, false
	}
	return r.cmds[i], true
}

// IsCommand reports whether a typed line is meant as a slash command: it
// starts with one slash followed by a letter or '?'. "//x" and "/tmp/x is
// big" are ordinary messages, so paths can still be talked about.
func IsCommand(line string) bool {
	line = strings.TrimLeftFunc(line, unicode.IsSpace)
	if len(line) < 2 || line[0] != '/' {
		return false
	}
	name, _, _ := strings.Cut(line[1:], " ")
	if strings.Contains(name, "/") {
		return false
	}
	c := rune(line[1])
	return unicode.IsLetter(c) || c == '?'
}

// Invocation is a parsed command line.
type Invocation struct {
	Command Command
	Name    string // as typed, lower-cased, without the slash (may be an alias)
	Args    string // the rest of the line, trimmed
}

// Parse splits a typed line into a command and its arguments and checks
// them against the command's arity and scope (the place the line was typed).
// Errors are *Error values whose message is a one-line hint.
func (r *Registry) Parse(line string, scope Scope) (Invocation, error) {
	if !IsCommand(line) {
		return Invocation{}, &Error{Kind: ErrNotSlash, Msg: "not a command: commands start with /, try /help"}
	}
	line = strings.TrimSpace(line)
	name, args, _ := strings.Cut(line[1:], " ")
	if i := strings.IndexFunc(name, unicode.IsSpace); i >= 0 { // a tab after the name
		name, args = name[:i], name[i:]+" "+args
	}
	name = strings.ToLower(name)
	args = strings.TrimSpace(args)
	c, ok := r.Lookup(name)
	if !ok || c.Scope&scope == 0 {
		if ok {
			return Invocation{}, &Error{Kind: ErrScope, Msg: fmt.Sprintf("/%s works only in %s — try /help", c.Name, c.Scope)}
		}
		msg := fmt.Sprintf("unknown command /%s — try /help", name)
		if s := r.Suggest(name, scope); s != "" {
			msg = fmt.Sprintf("unknown command /%s — did you mean /%s? (try /help)", name, s)
		}
		return Invocation{}, &Error{Kind: ErrUnknown, Msg: msg}
	}
	switch {
	case c.Arity == NoArgs && args != "":
		return Invocation{}, &Error{Kind: ErrUsage, Msg: fmt.Sprintf("/%s takes no arguments", c.Name)}
	case c.Arity == RequiredArgs && args == "":
		return Invocation{}, &Error{Kind: ErrUsage, Msg: fmt.Sprintf("usage: %s — %s", c.Usage(), c.Description)}
	}
	return Invocation{Command: c, Name: name, Args: args}, nil
}

// Suggest is the command name (or alias) valid in scope that is closest to
// name — a prefix of it, or within two edits — or "" if none is close.
func (r *Registry) Suggest(name string, scope Scope) string {
	name = strings.ToLower(strings.TrimPrefix(name, "/"))
	if name == "" {
		return ""
	}
	best, bestDist := "", 3
	for _, c := range r.cmds {
		if c.Scope&scope == 0 {
			continue
		}
		for _, n := range c.Names() {
			d := distance(name, n)
			if len(name) >= 2 && strings.HasPrefix(n, name) {
				d = min(d, 1)
			}
			// Aliases of one or two letters are too easy to be "close" to.
			if len(n) <= 2 && d > 0 {
				continue
			}
			if d < bestDist {
				best, bestDist = c.Name, d
			}
		}
	}
	return best
}

// Complete is the slash names valid in scope that start with prefix
// (which includes the slash), sorted, for line-editor completion.
func (r *Registry) Complete(prefix string, scope Scope) []string {
	p := strings.ToLower(strings.TrimPrefix(prefix, "/"))
	var out []string
	for _, c := range r.In(scope) {
		for _, n := range c.Names() {
			if len(n) > 1 && strings.HasPrefix(n, p) {
				out = append(out, "/"+n)
			}
		}
	}
	slices.Sort(out)
	return out
}

// Help is the help text for scope: the commands grouped by category, one
// per line with usage, aliases and description.
func (r *Registry) Help(scope Scope) string { return help(r.In(scope)) }

// HelpOn is Help for a chat platform: the chat commands that have a use
// there.
func (r *Registry) HelpOn(p string) string {
	return help(slices.DeleteFunc(r.In(Chat), func(c Command) bool { return !c.On(p) }))
}

func help(cmds []Command) string {
	width := 0
	for _, c := range cmds {
		width = max(width, len(c.Usage()))
	}
	var b strings.Builder
	cats := slices.Clone(categoryOrder)
	for _, c := range cmds {
		if !slices.Contains(cats, c.Category) {
			cats = append(cats, c.Category)
		}
	}
	for _, cat := range cats {
		first := true
		for _, c := range cmds {
			if c.Category != cat {
				continue
			}
			if first {
				if b.Len() > 0 {
					b.WriteByte('\n')
				}
				b.WriteString(cat + ":\n")
				first = false
			}
			fmt.Fprintf(&b, "  %-*s  %s", width, c.Usage(), c.Description)
			if len(c.Aliases) > 0 {
				b.WriteString(" (also /" + strings.Join(c.Aliases, ", /") + ")")
			}
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// HelpFor is the help of one command.
func (r *Registry) HelpFor(name string, scope Scope) (string, error) {
	c, ok := r.Lookup(name)
	if !ok || c.Scope&scope == 0 {
		msg := fmt.Sprintf("no command /%s — try /help", strings.TrimPrefix(name, "/"))
		if s := r.Suggest(name, scope); s != "" {
			msg = fmt.Sprintf("no command /%s — did you mean /%s?", strings.TrimPrefix(name, "/"), s)
		}
		return "", &Error{Kind: ErrUnknown, Msg: msg}
	}
	s := fmt.Sprintf("%s — %s", c.Usage(), c.Description)
	if len(c.Aliases) > 0 {
		s += "\naliases: /" + strings.Join(c.Aliases, ", /")
	}
	return s + "\nworks in: " + c.Scope.String() + "\n", nil
}

// distance is the Levenshtein edit distance between a and b.
func distance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}
