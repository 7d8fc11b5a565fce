package cli

import (
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
