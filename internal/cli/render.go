package cli

import (
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"charm.land/glamour/v2"
	"charm.land/glamour/v2/styles"
	"github.com/charmbracelet/x/ansi"
)

// spinnerFrames are drawn on the status line while something runs.
var spinnerFrames = [...]string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}

// spinEvery is how often the status line redraws.
const spinEvery = 120 * time.Millisecond

// renderer writes a turn to the terminal.
//
// On a terminal the answer is rendered as markdown one block at a time: a
// paragraph, list or fenced code block is printed (rendered by glamour) as
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

	md    map[int]*glamour.TermRenderer // by wrap width, built on first use: slow to set up
	mdErr error

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
	return &renderer{out: out, tty: tty, width: width, lastNL: true}
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
	r.status = text
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
	out, err := r.renderMarkdownLocked(src)
	if err != nil {
		out = src // unrendered text beats no text
	}
	out = tidyRendered(out)
	if out == "" {
		return
	}
	if r.wrote {
		out = "\n" + out // a blank line between blocks, as markdown means
	}
	r.writeLocked(out + "\n")
	r.wrote = true
}

// renderMarkdownLocked renders src for the terminal. Tables are rendered
// on their own at their natural width (glamour stretches a table across
// the whole wrap width), everything else at the terminal's width.
func (r *renderer) renderMarkdownLocked(src string) (string, error) {
	w := max(r.width()-2, 20)
	var parts []string
	for _, seg := range splitTables(src) {
		width := w
		if seg.tableWidth > 0 {
			width = min(w, seg.tableWidth)
		}
		md, err := r.markdownLocked(width)
		if err != nil {
			return "", err
		}
		out, err := md.Render(seg.text)
		if err != nil {
			return "", err
		}
		if out = tidyRendered(out); out != "" {
			parts = append(parts, out)
		}
	}
	return strings.Join(parts, "\n\n"), nil
}

// markdownLocked is a glamour renderer wrapping at width, built on first
// use of that width: building one is slow.
func (r *renderer) markdownLocked(width int) (*glamour.TermRenderer, error) {
	if md, ok := r.md[width]; ok {
		return md, nil
	}
	if r.mdErr != nil {
		return nil, r.mdErr
	}
	style, err := markdownStyle()
	if err != nil {
		r.mdErr = err
		return nil, err
	}
	md, err := glamour.NewTermRenderer(style, glamour.WithWordWrap(width))
	if err != nil {
		r.mdErr = err
		return nil, err
	}
	if r.md == nil || len(r.md) >= maxRenderers {
		r.md = map[int]*glamour.TermRenderer{} // a resized window makes old widths useless
	}
	r.md[width] = md
	return md, nil
}

// maxRenderers bounds the renderers kept, one per width used.
const maxRenderers = 8

// markdownStyle is glamour's dark style (GLAMOUR_STYLE picks another,
// NO_COLOR the plain one) with inline code unpadded: the built-in styles
// put a space on each side of `code`, which reads as stray spaces in a
// terminal. A style file named by GLAMOUR_STYLE is used as it is.
func markdownStyle() (glamour.TermRendererOption, error) {
	name := styles.DarkStyle
	if s := os.Getenv("GLAMOUR_STYLE"); s != "" {
		name = s
	}
	if os.Getenv("NO_COLOR") != "" {
		name = styles.NoTTYStyle
	}
	base, ok := styles.DefaultStyles[name]
	if !ok {
		return glamour.WithStylePath(name), nil
	}
	cfg := *base
	cfg.Code.Prefix, cfg.Code.Suffix = "", ""
	return glamour.WithStyles(cfg), nil
}

// tidyRendered drops what glamour pads its output with: spaces to the
// wrap width at the end of every line, and blank lines before and after
// the text. Without this, blocks printed one after another (and code
// blocks above all) are separated by two or three blank lines, and a
// narrowed window wraps the padding into more blank lines.
func tidyRendered(s string) string {
	lines := strings.Split(strings.ReplaceAll(s, "\r\n", "\n"), "\n")
	for i, l := range lines {
		lines[i] = trimPadding(l)
	}
	blank := func(l string) bool { return strings.TrimSpace(ansi.Strip(l)) == "" }
	for len(lines) > 0 && blank(lines[0]) {
		lines = lines[1:]
	}
	for len(lines) > 0 && blank(lines[len(lines)-1]) {
		lines = lines[:len(lines)-1]
	}
	return strings.Join(lines, "\n")
}

// sgr matches a colour change (SGR escape) at the start of a string.
var sgr = regexp.MustCompile(`^\x1b\[([0-9;]*)m`)

// trimPadding removes the blank end of a rendered line: spaces without a
// background colour, and the colour changes among them. Spaces drawn on a
// background (a heading's) are kept; the line's colours are closed.
func trimPadding(l string) string {
	keep, bg := 0, false
	for i := 0; i < len(l); {
		if m := sgr.FindStringSubmatch(l[i:]); m != nil {
			bg = backgroundAfter(bg, m[1])
			i += len(m[0])
			continue
		}
		r, size := utf8.DecodeRuneInString(l[i:])
		i += size
		if bg || (r != ' ' && r != '\t' && r != '\u00a0') {
			keep = i
		}
	}
	if keep == 0 {
		return ""
	}
	if cut := l[keep:]; strings.Contains(cut, "\x1b[") {
		return l[:keep] + "\x1b[m" // the padding held the colour reset
	}
	return l[:keep]
}

// backgroundAfter says whether a background colour (or reverse video) is
// on after an SGR with params, given whether one was on before.
func backgroundAfter(on bool, params string) bool {
	ps := strings.Split(params, ";")
	for i := 0; i < len(ps); i++ {
		switch ps[i] {
		case "", "0", "49", "27":
			on = false
		case "7":
			on = true
		case "38":
			i += colourArgs(ps[i+1:])
		case "48":
			on = true
			i += colourArgs(ps[i+1:])
		default:
			if n, err := strconv.Atoi(ps[i]); err == nil && (n >= 40 && n <= 47 || n >= 100 && n <= 107) {
				on = true
			}
		}
	}
	return on
}

// colourArgs is how many params follow 38 or 48: 5;n or 2;r;g;b.
func colourArgs(rest []string) int {
	if len(rest) > 0 && rest[0] == "5" {
		return 2
	}
	if len(rest) > 0 && rest[0] == "2" {
		return 4
	}
	return 0
}

// tableSegment is part of a markdown text: a table (tableWidth > 0, the
// wrap width that fits it without stretching) or anything else.
type tableSegment struct {
	text       string
	tableWidth int
}

// tableDelimiter is a table's second line: | --- | :---: |.
var tableDelimiter = regexp.MustCompile(`^\s*\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$`)

// isTableDelimiter reports whether line is a table's delimiter row. It
// must have a pipe: "text | more" over "---" is a heading, not a table.
func isTableDelimiter(line string) bool {
	line = strings.TrimRight(line, "\r\n")
	return strings.Contains(line, "|") && strings.Contains(line, "-") && tableDelimiter.MatchString(line)
}

// splitTables cuts src into tables and the text between them. Code
// fences are never searched for tables.
func splitTables(src string) []tableSegment {
	lines := strings.SplitAfter(src, "\n")
	var segs []tableSegment
	var rest strings.Builder
	fence := ""
	for i := 0; i < len(lines); i++ {
		trimmed := strings.TrimSpace(lines[i])
		switch {
		case fence != "":
			if strings.HasPrefix(trimmed, fence) {
				fence = ""
			}
		case strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~"):
			fence = trimmed[:3]
		case strings.Contains(trimmed, "|") && i+1 < len(lines) && isTableDelimiter(lines[i+1]):
			end := i + 2
			for end < len(lines) && strings.Contains(lines[end], "|") && strings.TrimSpace(lines[end]) != "" {
				end++
			}
			if rest.Len() > 0 {
				segs = append(segs, tableSegment{text: rest.String()})
				rest.Reset()
			}
			table := strings.Join(lines[i:end], "")
			segs = append(segs, tableSegment{text: table, tableWidth: tableWrapWidth(lines[i:end])})
			i = end - 1
			continue
		}
		rest.WriteString(lines[i])
	}
	if rest.Len() > 0 {
		segs = append(segs, tableSegment{text: rest.String()})
	}
	return segs
}

// tableWrapWidth is the wrap width at which glamour draws the table rows
// without stretching: the widest cell of each column, a space on each
// side of a cell, a separator between columns, and the document margins.
func tableWrapWidth(rows []string) int {
	var widths []int
	for n, row := range rows {
		if n == 1 {
			continue // the delimiter row
		}
		row = strings.TrimSpace(row)
		row = strings.TrimSuffix(strings.TrimPrefix(row, "|"), "|")
		for c, cell := range strings.Split(row, "|") {
			// Markup that is not drawn does not take room.
			cell = strings.NewReplacer("**", "", "`", "", "__", "").Replace(strings.TrimSpace(cell))
			if c == len(widths) {
				widths = append(widths, 0)
			}
			widths[c] = max(widths[c], ansi.StringWidth(cell))
		}
	}
	total := 0
	for _, w := range widths {
		total += w + 3
	}
	return total + 4
}

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

// clipRunes keeps the last n runes of s, so the newest words stay in view.
func clipRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return "…" + string(r[len(r)-n+1:])
}
