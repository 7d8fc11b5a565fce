package main

import (
	"fmt"
	"os"

	"github.com/reeflective/readline"
	"github.com/reeflective/readline/inputrc"
)

func main() {
	sh := readline.NewShell(inputrc.WithApp("baton"))
	sh.Keymap.Register(map[string]func(){"nl": func() {
		fmt.Fprintf(os.Stderr, "NL CALLED\n")
		sh.Line().Insert(sh.Cursor().Pos(), '\n')
		sh.Cursor().Inc()
	}})
	for _, seq := range []string{`\e\C-m`, `\C-j`} {
		_ = sh.Config.Bind("emacs", inputrc.Unescape(seq), "nl", false)
	}
	for k, b := range sh.Config.Binds["emacs"] {
		if c := conv(k); len(c) >= 2 && c[:2] == "\x1b\r" {
			fmt.Fprintf(os.Stderr, "%q -> %v\n", k, b)
		}
	}
	line, err := sh.Readline()
	fmt.Printf("LINE %q %v\n", line, err)
}

func conv(s string) string {
	var out []rune
	for _, r := range s {
		if r&0x80 != 0 && r < 0x100 {
			out = append(out, 0x1b, r&^0x80)
			continue
		}
		out = append(out, r)
	}
	return string(out)
}
