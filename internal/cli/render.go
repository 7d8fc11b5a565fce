package cli

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/baton-agent/baton/internal/cli/termmd"
	"github.com/baton-agent/baton/internal/store"
)

// spinnerFrames are drawn on the status line while something runs.
var spinnerFrames = [...]string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}

// spinEvery is how often the status line redraws.
const spinEvery = 120 * time.Millisecond

// renderer writes a turn to the terminal.
//
// On a terminal the answer is rendered as markdown one block at a time: a
// paragraph, list or fenced code block is printed (rendered by termmd) as
// soon as it is complete, and never touched again, so scrollback and
// terminal resizing stay intact. While a block is still arriving, a single
// status line below the printed text shows a spinner and the block's latest
// words; it is the only thing ever redrawn, with "\r" and erase-line, which
// every terminal supports. Off a terminal (pipes, files) text deltas are
// written through as they come, with no escape codes at all.
type renderer struct {
	mu    sync.Mutex
	out   io.Writer
	tty   bool
	width func() int
	md    termmd.Options // how answers are rendered on a terminal
	// keptAt is where a file of the session is readable on disk ("" when
	// not on this machine), for the lines telling of files; nil: nowhere.
	keptAt func(a store.Attachment) string

	block   strings.Builder // answer text not yet printed (TTY)
	inFence bool            // block ends inside a ``` or ~~~ fence
	fence   string          // the fence marker that opened it
	wrote   bool            // any answer text printed in this answer
	lastNL  bool            // the last byte written to out was a newline

	status string        // "" when no status line is shown
	frame  int           // spinner frame
	stop   chan struct{} // closes the spinner goroutine; nil when none runs
	done   chan struct{}
}

func newRenderer(out io.Writer, tty bool, width func() int) *renderer {
	if width == nil {
		width = func() int { return 80 }
	}
	return &renderer{
		out: out, tty: tty, width: width, lastNL: true,
		md: termmd.Options{Color: os.Getenv("NO_COLOR") == ""}, // no-color.org: set and not empty
	}
}

// Printf writes a line of baton's own (not the model's) output.
func (r *renderer) Printf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.clearStatusLocked()
	r.writeLocked(fmt.Sprintf(format, args...))
}

// Delta handles a piece of the model's answer.
func (r *renderer) Delta(text string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.tty {
		r.writeLocked(text)
		r.wrote = true
		return
	}
	r.block.WriteString(text)
	r.flushBlocksLocked(false)
	if r.block.Len() > 0 {
		r.setStatusLocked(preview(r.block.String()))
	}
}

// EndAnswer prints whatever of the answer is left and ends it with a
// newline, ready for the next output.
func (r *renderer) EndAnswer() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.clearStatusLocked()
	if r.tty {
		r.flushBlocksLocked(true)
	}
	if !r.lastNL {
		r.writeLocked("\n")
	}
	r.wrote = false
}

// Status shows a spinner with text on the status line (TTY only).
func (r *renderer) Status(text string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.tty {
		return
	}
	r.setStatusLocked(text)
}

// ClearStatus removes the status line and stops the spinner.
func (r *renderer) ClearStatus() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.clearStatusLocked()
}

// Close stops the spinner goroutine, if any.
func (r *renderer) Close() { r.ClearStatus() }

func (r *renderer) writeLocked(s string) {
	if s == "" {
		return
	}
	if r.tty {
		// The terminal may be in raw mode around prompts; \r\n is right in both.
		s = strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\n", "\r\n")
	}
	_, _ = io.WriteString(r.out, s)
	r.lastNL = strings.HasSuffix(s, "\n")
}

func (r *renderer) setStatusLocked(text string) {
	if text == "" {
		r.clearStatusLocked()
		return
	}
	if !r.lastNL && r.status == "" {
		r.writeLocked("\n") // never draw over text the person is reading
	}
	r.status = printable(text)
	r.drawStatusLocked()
	if r.stop == nil {
		r.stop, r.done = make(chan struct{}), make(chan struct{})
		go r.spin(r.stop, r.done)
	}
}

func (r *renderer) drawStatusLocked() {
	w := max(r.width()-4, 10)
	_, _ = fmt.Fprintf(r.out, "\r\x1b[K%s %s", spinnerFrames[r.frame%len(spinnerFrames)], clipRunes(r.status, w))
}

func (r *renderer) clearStatusLocked() {
	if r.stop != nil {
		close(r.stop)
		// The spinner takes the lock to draw; release it while it exits.
		done := r.done
		r.stop, r.done = nil, nil
		r.mu.Unlock()
		<-done
		r.mu.Lock()
	}
	if r.status != "" {
		_, _ = io.WriteString(r.out, "\r\x1b[K")
		r.status = ""
	}
}

func (r *renderer) spin(stop, done chan struct{}) {
	defer close(done)
	t := time.NewTicker(spinEvery)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			r.mu.Lock()
			if r.status != "" && r.stop == stop {
				r.frame++
				r.drawStatusLocked()
			}
			r.mu.Unlock()
		}
	}
}

// flushBlocksLocked prints every complete markdown block in r.block, or
// everything when final.
func (r *renderer) flushBlocksLocked(final bool) {
	text := r.block.String()
	cut := 0 // text[:cut] is complete blocks
	pos := 0
	hasContent := false
	for {
		nl := strings.IndexByte(text[pos:], '\n')
		if nl < 0 {
			break
		}
		line := text[pos : pos+nl]
		pos += nl + 1
		trimmed := strings.TrimSpace(line)
		switch {
		case r.inFence:
			if strings.HasPrefix(trimmed, r.fence) && strings.Trim(trimmed, r.fence[:1]) == "" {
				r.inFence = false
				cut = pos // a code block ends at its closing fence
				hasContent = false
			}
		case strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~"):
			r.inFence = true
			r.fence = trimmed[:3]
			hasContent = true
		case trimmed == "":
			if hasContent {
				cut = pos
				hasContent = false
			}
		default:
			hasContent = true
		}
	}
	if final {
		cut = len(text)
		r.inFence = false
	}
	if cut == 0 {
		return
	}
	r.clearStatusLocked()
	r.printMarkdownLocked(text[:cut])
	rest := text[cut:]
	r.block.Reset()
	r.block.WriteString(rest)
}

func (r *renderer) printMarkdownLocked(src string) {
	if strings.TrimSpace(src) == "" {
		return
	}
	// A margin on the left, and room on the right so that a full line
	// never makes the terminal wrap by itself.
	out := termmd.Render(src, max(r.width()-2*len(margin), termmd.MinWidth), r.md)
	if out == "" {
		return
	}
	lines := strings.Split(out, "\n")
	for i, l := range lines {
		if l != "" {
			lines[i] = margin + l
		}
	}
	out = strings.Join(lines, "\n")
	if r.wrote {
		out = "\n" + out // a blank line between blocks, as markdown means
	}
	r.writeLocked(out + "\n")
	r.wrote = true
}

// margin is the left margin of rendered answers.
const margin = "  "

// preview is the tail of an answer block for the status line: its last
// line, or the line before when the last one has only begun.
func preview(block string) string {
	block = strings.TrimRight(block, " \t")
	lines := strings.Split(strings.TrimRight(block, "\n"), "\n")
	last := strings.TrimSpace(lines[len(lines)-1])
	if last == "" {
		return "…"
	}
	return last
}

// printable is text for the status line: the model's words as they
// stream in, shown raw, so control characters (which could move the
// cursor or recolour the terminal) are dropped and tabs made spaces.
func printable(text string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\t':
			return ' '
		case unicode.IsControl(r):
			return -1
		}
		return r
	}, text)
}

// clipRunes keeps the last n runes of s, so the newest words stay in view.
func clipRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return "…" + string(r[len(r)-n+1:])
}
