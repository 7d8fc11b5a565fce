package command

import (
	"errors"
	"strings"
	"testing"
)

// Whatever is typed, Parse answers with an invocation of a known command
// valid where it was typed, or an *Error with a one-line hint.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"/help", "/handoff telegram", "/HANDOFF\tweb", "/", "//", "/x y z", "hello", "/approve now",
		"/pairing approve ABCD-EFGH", "/search 0\x00", "/new\n/quit", "/h\u00e9lp", " /model  gpt "} {
		f.Add(s, true)
	}
	reg := Default()
	f.Fuzz(func(t *testing.T, line string, chat bool) {
		scope := Terminal
		if chat {
			scope = Chat
		}
		inv, err := reg.Parse(line, scope)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || e.Msg == "" || strings.Contains(e.Msg, "\n") && !strings.Contains(line, "\n") {
				t.Fatalf("Parse(%q): %v", line, err)
			}
			return
		}
		if inv.Command.Name == "" || inv.Command.Scope&scope == 0 {
			t.Fatalf("Parse(%q) = %+v", line, inv)
		}
		if inv.Command.Arity == NoArgs && inv.Args != "" {
			t.Fatalf("Parse(%q): arguments for a command that takes none: %q", line, inv.Args)
		}
	})
}
