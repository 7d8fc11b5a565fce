package cli

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"unicode"

	"github.com/reeflective/readline"
	"github.com/reeflective/readline/inputrc"

	"github.com/baton-agent/baton/internal/command"
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
func NewTerminalReader(reg *command.Registry, historyFile string) LineReader {
	probe := os.Getenv(NoProbeEnv) == ""
	main := newShell(probe)
	if historyFile != "" {
		// Replaces the in-memory default: Up walks one list, the file's.
		main.History.AddFromFile("history", historyFile)
	}
	main.Completer = func(line []rune, cursor int) readline.Completions {
		return completeSlash(reg, string(line[:cursor]))
	}
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
	return sh
}

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

// completeSlash completes the command name while the cursor is still in
// the first word of a slash line.
func completeSlash(reg *command.Registry, before string) readline.Completions {
	if !strings.HasPrefix(before, "/") || strings.ContainsFunc(before, unicode.IsSpace) {
		return readline.Completions{}
	}
	var pairs []string
	for _, name := range reg.Complete(before, command.Terminal) {
		c, _ := reg.Lookup(name)
		pairs = append(pairs, name, c.Description)
	}
	return readline.CompleteValuesDescribed(pairs...)
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
