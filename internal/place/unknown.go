package place

import (
	"errors"
	"fmt"
	"strings"
)

// ErrUnknown is a handoff to a name that is no place baton knows (as
// opposed to a known platform not set up, which has its own answer).
var ErrUnknown = errors.New("unknown place")

// NotSetUp says that a known platform (named for people) is not set up
// in the gateway, which has setUp.
func NotSetUp(name string, setUp []string) string {
	have := "none"
	if len(setUp) > 0 {
		have = strings.Join(setUp, ", ")
	}
	return fmt.Sprintf("%s is not set up in the gateway (set up there: %s); README.md tells how to set it up", name, have)
}

// Unknown is the error for a handoff to name, which is none of the
// terminal (its platform name) and known, listing them all.
func Unknown(name, terminal string, known []string) error {
	names := append([]string{terminal + " (the terminal)"}, known...)
	list := names[0]
	if n := len(names); n > 1 {
		list = strings.Join(names[:n-1], ", ") + " and " + names[n-1]
	}
	return fmt.Errorf("%w %q: the places are %s", ErrUnknown, name, list)
}
