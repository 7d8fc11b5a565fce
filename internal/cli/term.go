package cli

import (
	"io"
	"os"

	"github.com/charmbracelet/x/term"
)

// IsTerminal reports whether f is a terminal.
func IsTerminal(f *os.File) bool { return term.IsTerminal(f.Fd()) }

// WidthOf returns a function giving f's current width in columns (80 when
// unknown), asked afresh each time so a resized window is followed.
func WidthOf(f *os.File) func() int {
	return func() int {
		w, _, err := term.GetSize(f.Fd())
		if err != nil || w <= 0 {
			return 80
		}
		return w
	}
}

// SaveTerminal records f's terminal modes and returns a function putting
// them back, for exiting cleanly while the line editor has the terminal in
// raw mode. It does nothing when f is not a terminal.
func SaveTerminal(f *os.File) (restore func()) {
	st, err := term.GetState(f.Fd())
	if err != nil {
		return func() {}
	}
	return func() { _ = term.SetState(f.Fd(), st) }
}

// hyperlink is url as text to write to w: on a terminal, wrapped in the
// OSC 8 sequence that makes it clickable where the terminal supports it
// (the others show the plain address).
func hyperlink(w io.Writer, url string) string {
	if f, ok := w.(*os.File); !ok || !IsTerminal(f) {
		return url
	}
	return "\x1b]8;;" + url + "\x1b\\" + url + "\x1b]8;;\x1b\\"
}
