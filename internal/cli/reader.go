package cli

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/reeflective/readline"
	"github.com/reeflective/readline/inputrc"
)

// ErrInterrupt is what a LineReader returns when the person presses Ctrl-C
// at a prompt; io.EOF means Ctrl-D (or the end of input).
var ErrInterrupt = errors.New("interrupted")

// LineReader reads what the person types. The REPL uses one for its main
// prompt (Prompt, saved to history) and for approval questions (Ask, not
// saved). A terminal gets readline; tests script lines.
type LineReader interface {
	Prompt(prompt string) (string, error)
	Ask(prompt string) (string, error)
}

// terminalReader is the line editor on a real terminal: emacs keys,
// history persisted in a file, and Tab completion of slash commands.
type terminalReader struct {
	main  *readline.Shell
	ask   *readline.Shell
	probe bool
}

// NoProbeEnv turns off readline's cursor-position probe ("\e[6n"), for
// terminals that never answer it (baton would wait for the answer).
const NoProbeEnv = "BATON_NO_CURSOR_PROBE"

// NewTerminalReader reads from the process's terminal (readline always
// uses os.Stdin), saving history to historyFile ("" keeps it in memory).
// Tab lists what complete offers (nil: nothing).
func NewTerminalReader(complete Completer, historyFile string) LineReader {
	probe := os.Getenv(NoProbeEnv) == ""
	main := newShell(probe)
	if historyFile != "" {
		// Replaces the in-memory default: Up walks one list, the file's.
		main.History.AddFromFile("history", historyFile)
	}
	if complete != nil {
		main.Completer = func(line []rune, cursor int) readline.Completions {
			return completions(complete(string(line[:cursor])))
		}
	}
	// The first Tab completes what all candidates share and lists them
	// with their descriptions; the next ones walk the list.
	_ = main.Config.Set("menu-complete-display-prefix", true)
	bindNewline(main)
	ask := newShell(probe)
	return &terminalReader{main: main, ask: ask, probe: probe}
}

func newShell(probe bool) *readline.Shell {
	sh := readline.NewShell(inputrc.WithApp("baton"))
	// Readline asks the terminal where the cursor is to know whether the
	// prompt sits on the bottom row; without the answer it redraws over the
	// line above there. Every terminal emulator answers; the switch is for
	// the odd harness that does not.
	_ = sh.Config.Set("cursor-position-probe", probe)
	// No bell, no "display all N possibilities?" question for a dozen commands.
	_ = sh.Config.Set("bell-style", "none")
	// A pasted block arrives as one piece: its line breaks stay in the
	// message instead of each sending what came before it.
	_ = sh.Config.Set("enable-bracketed-paste", true)
	return sh
}

// NewlineKeys are the keys that break the line in a message instead of
// sending it, as /help and the README tell.
const NewlineKeys = "Alt+Enter or Ctrl+J"

// bindNewline makes Alt+Enter (Esc, Enter) and Ctrl+J insert a line break.
// Enter sends: terminals send \r for it, and \n only for Ctrl+J.
func bindNewline(sh *readline.Shell) {
	const cmd = "baton-insert-newline"
	sh.Keymap.Register(map[string]func(){cmd: func() {
		sh.Line().Insert(sh.Cursor().Pos(), '\n')
		sh.Cursor().Inc()
	}})
	// The default keymap self-inserts the meta forms of Enter (\M-\C-m,
	// the same keys as Esc Enter once readline converts meta); both
	// spellings are bound, or the self-insert can win the match.
	for _, seq := range []string{"\x1b\r", "\x1b\n", string(inputrc.Enmeta('\r')), string(inputrc.Enmeta('\n')), "\n"} {
		_ = sh.Config.Bind("emacs", seq, cmd, false)
	}
}

// Notify shows text above the main prompt while it waits, which readline
// redraws below it with what was typed so far.
func (t *terminalReader) Notify(text string) { _, _ = t.main.PrintTransientf("%s", text) }

func (t *terminalReader) Prompt(prompt string) (string, error) { return t.read(t.main, prompt) }
func (t *terminalReader) Ask(prompt string) (string, error)    { return t.read(t.ask, prompt) }

func (t *terminalReader) read(sh *readline.Shell, prompt string) (string, error) {
	if !t.probe {
		// Without the probe readline cannot tell it is on the bottom row;
		// keep one free row below the prompt (scrolling if needed) so its
		// redraws never climb into the output above.
		_, _ = os.Stdout.WriteString("\n\x1b[1A")
	}
	return read(sh, prompt)
}

func read(sh *readline.Shell, prompt string) (string, error) {
	sh.Prompt.Primary(func() string { return prompt })
	line, err := sh.Readline()
	switch {
	case errors.Is(err, readline.ErrInterrupt):
		return "", ErrInterrupt
	case err != nil:
		return "", err
	}
	return line, nil
}

// completions turns candidates into readline's, replacing prefix: the
// whole argument typed so far, spaces included (titles have them). A
// single candidate is inserted with a space after it.
func completions(prefix string, cands []Candidate) readline.Completions {
	if len(cands) == 0 {
		return readline.Completions{}
	}
	pairs := make([]string, 0, 2*len(cands))
	for _, c := range cands {
		v := c.Value
		if len(cands) == 1 {
			// The only one is complete: a space, so what comes next (an
			// argument) can be typed at once, as a shell does.
			v += " "
		}
		pairs = append(pairs, v, c.Description)
	}
	comps := readline.CompleteValuesDescribed(pairs...).NoSort()
	comps.PREFIX = prefix
	return comps
}

// scriptReader reads lines from any reader: for tests, and for a REPL fed
// through a pipe. Prompts are echoed so a transcript reads naturally.
type scriptReader struct {
	sc  *bufio.Scanner
	out io.Writer
}

// NewScriptReader reads one line per call from r, writing prompts to out.
func NewScriptReader(r io.Reader, out io.Writer) LineReader {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	return &scriptReader{sc: sc, out: out}
}

func (s *scriptReader) Prompt(prompt string) (string, error) { return s.next(prompt) }
func (s *scriptReader) Ask(prompt string) (string, error)    { return s.next(prompt) }

func (s *scriptReader) next(prompt string) (string, error) {
	if s.out != nil {
		fmt.Fprint(s.out, prompt)
	}
	if !s.sc.Scan() {
		if err := s.sc.Err(); err != nil {
			return "", err
		}
		return "", io.EOF
	}
	line := s.sc.Text()
	if s.out != nil {
		fmt.Fprintln(s.out, line)
	}
	return line, nil
}
