package command

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/baton-agent/baton/internal/platform"
)

func TestParse(t *testing.T) {
	r := Default()
	cases := []struct {
		line, name, canonical, args string
	}{
		{"/help", "help", "help", ""},
		{"  /resume  my chat  ", "resume", "resume", "my chat"},
		{"/Q", "q", "quit", ""},
		{"/exit", "exit", "quit", ""},
		{"/title\tRelease plan", "title", "title", "Release plan"},
		{"/handoff telegram", "handoff", "handoff", "telegram"},
		{"/?", "?", "help", ""},
		{"/help model", "help", "help", "model"},
	}
	for _, c := range cases {
		inv, err := r.Parse(c.line, Terminal)
		if err != nil {
			t.Errorf("Parse(%q): %v", c.line, err)
			continue
		}
		if inv.Name != c.name || inv.Command.Name != c.canonical || inv.Args != c.args {
			t.Errorf("Parse(%q) = name %q command %q args %q; want %q %q %q", c.line, inv.Name, inv.Command.Name, inv.Args, c.name, c.canonical, c.args)
		}
	}
}

func TestParseErrors(t *testing.T) {
	r := Default()
	cases := []struct {
		line  string
		scope Scope
		kind  error
		msg   string
	}{
		{"/x", Terminal, ErrUnknown, "unknown command /x — try /help"},
		{"/sesions", Terminal, ErrUnknown, "did you mean /sessions?"},
		{"/tilte foo", Terminal, ErrUnknown, "did you mean /title?"},
		{"/comp", Terminal, ErrUnknown, "did you mean /compress?"},
		{"/resume", Terminal, ErrUsage, "usage: /resume <id prefix or title>"},
		{"/quit now", Terminal, ErrUsage, "/quit takes no arguments"},
		{"/sethome", Terminal, ErrScope, "/sethome works only in chat"},
		{"/quit", Chat, ErrScope, "/quit works only in terminal"},
		{"hello", Terminal, ErrNotSlash, "not a command"},
	}
	for _, c := range cases {
		_, err := r.Parse(c.line, c.scope)
		if !errors.Is(err, c.kind) {
			t.Errorf("Parse(%q): error %v, want kind %v", c.line, err, c.kind)
			continue
		}
		if !strings.Contains(err.Error(), c.msg) || strings.Contains(err.Error(), "\n") {
			t.Errorf("Parse(%q): message %q, want one line containing %q", c.line, err.Error(), c.msg)
		}
	}
	// A far-off name gets no suggestion rather than a misleading one.
	if _, err := r.Parse("/zzzzzz", Terminal); err == nil || strings.Contains(err.Error(), "did you mean") {
		t.Errorf("far-off name: %v", err)
	}
	// Chat-only commands are not suggested in the terminal.
	if s := r.Suggest("sethom", Terminal); s != "" {
		t.Errorf("Suggest(sethom, Terminal) = %q", s)
	}
	if s := r.Suggest("sethom", Chat); s != "sethome" {
		t.Errorf("Suggest(sethom, Chat) = %q", s)
	}
}

func TestIsCommand(t *testing.T) {
	for line, want := range map[string]bool{
		"/help":               true,
		" /new":               true,
		"/?":                  true,
		"/":                   false,
		"//comment":           false,
		"/tmp/x is too big":   false,
		"/usr/bin/env":        false,
		"hello /help":         false,
		"/1 is not a command": false,
	} {
		if got := IsCommand(line); got != want {
			t.Errorf("IsCommand(%q) = %v, want %v", line, got, want)
		}
	}
}

func TestRegistryRequired(t *testing.T) {
	r := Default()
	for _, name := range []string{"help", "new", "sessions", "resume", "title", "search", "model", "compress", "retry", "undo", "quit", "exit", "q", "handoff", "sethome"} {
		if _, ok := r.Lookup(name); !ok {
			t.Errorf("command %q missing", name)
		}
	}
	h, _ := r.Lookup("handoff")
	if h.Scope != Both || h.Args != "<platform>" || h.Arity != RequiredArgs {
		t.Errorf("handoff = %+v", h)
	}
	s, _ := r.Lookup("/SETHOME")
	if s.Scope != Chat {
		t.Errorf("sethome scope %v", s.Scope)
	}
}

func TestNewRejectsClashes(t *testing.T) {
	if _, err := New(Command{Name: "a", Scope: Both}, Command{Name: "b", Aliases: []string{"a"}, Scope: Both}); err == nil {
		t.Error("alias clash accepted")
	}
	if _, err := New(Command{Name: "Bad", Scope: Both}); err == nil {
		t.Error("upper-case name accepted")
	}
	if _, err := New(Command{Name: "x"}); err == nil {
		t.Error("command without scope accepted")
	}
}

func TestHelp(t *testing.T) {
	r := Default()
	term := r.Help(Terminal)
	chat := r.Help(Chat)
	for _, want := range []string{"Session:", "/resume <id prefix or title>", "/quit", "also /exit, /q", "/handoff <platform>"} {
		if !strings.Contains(term, want) {
			t.Errorf("terminal help lacks %q:\n%s", want, term)
		}
	}
	if strings.Contains(term, "/sethome") {
		t.Errorf("terminal help lists chat-only /sethome:\n%s", term)
	}
	if !strings.Contains(chat, "/sethome") || strings.Contains(chat, "/quit") {
		t.Errorf("chat help wrong:\n%s", chat)
	}
	// Categories come in the declared order.
	if strings.Index(term, "Session:") > strings.Index(term, "General:") {
		t.Errorf("category order:\n%s", term)
	}
	one, err := r.HelpFor("/exit", Terminal)
	if err != nil || !strings.Contains(one, "/quit") || !strings.Contains(one, "aliases: /exit, /q") {
		t.Errorf("HelpFor(exit) = %q, %v", one, err)
	}
	if _, err := r.HelpFor("nope", Terminal); !errors.Is(err, ErrUnknown) {
		t.Errorf("HelpFor(nope) = %v", err)
	}
}

// The web chat's help lists only what has a use there: no /start (a
// Telegram greeting), /sethome (its home is fixed) or /pairing (only its
// owner types there); other chats list them.
func TestHelpOnPlatform(t *testing.T) {
	r := Default()
	web, telegram := r.HelpOn("web"), r.HelpOn("telegram")
	for _, only := range []string{"/start", "/sethome", "/pairing"} {
		if strings.Contains(web, only) {
			t.Errorf("the web chat's help lists %s:\n%s", only, web)
		}
		if !strings.Contains(telegram, only) {
			t.Errorf("Telegram's help lacks %s:\n%s", only, telegram)
		}
	}
	for _, want := range []string{"/continue", "/handoff <platform>", "/approve", "/help [command]"} {
		if !strings.Contains(web, want) {
			t.Errorf("the web chat's help lacks %s:\n%s", want, web)
		}
	}
	if telegram != r.Help(Chat) {
		t.Errorf("Telegram's help is not the chat help:\n%s", telegram)
	}
}

func TestComplete(t *testing.T) {
	r := Default()
	got := strings.Join(r.Complete("/re", Terminal), " ")
	if got != "/reset /resume /retry" {
		t.Errorf("Complete(/re) = %q", got)
	}
	if got := r.Complete("/seth", Terminal); len(got) != 0 {
		t.Errorf("Complete(/seth) in terminal = %v", got)
	}
	if got := r.Complete("/", Terminal); len(got) < 11 {
		t.Errorf("Complete(/) = %v", got)
	}
}

// The kit's reading of an answer to an approval question (used by places
// that show who answered) agrees with the registry's.
func TestApprovalAnswersAgreeWithTheKit(t *testing.T) {
	r := Default()
	for _, line := range []string{
		"/approve", "/yes", "/once", "/always", "/deny", "/no", "/APPROVE", " /Yes \n", "/approve now", "/yes\tplease",
		"approve", "//approve", "/", "/approved", "/handoff", "/help", "/ap", "/new", "/no!",
	} {
		want := ""
		if inv, err := r.Parse(line, Chat); err == nil && slices.Contains(platform.ApprovalAnswers(), inv.Command.Name) {
			want = inv.Command.Name
		}
		if got, _ := platform.ApprovalAnswer(line); got != want {
			t.Errorf("%q: the kit reads %q, the registry %q", line, got, want)
		}
	}
}
