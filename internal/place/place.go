// Package place words where a conversation is, the same way in every
// place that says it: the terminal, the web chat and each chat service.
package place

import (
	"fmt"
	"strings"
	"time"
)

// Name names a place for people: "the terminal" for terminal (the
// terminal's platform name), a platform by its display name, else its
// name capitalized; "another place" for none.
func Name(platform, terminal string, display map[string]string) string {
	switch {
	case platform == "":
		return "another place"
	case platform == terminal:
		return "the terminal"
	case display[platform] != "":
		return display[platform]
	}
	return strings.ToUpper(platform[:1]) + platform[1:]
}

// NameOf is Name of the platform of an address key ("telegram:dm:42").
func NameOf(key, terminal string, display map[string]string) string {
	p, _, _ := strings.Cut(key, ":")
	return Name(p, terminal, display)
}

// Moment is a moment as a person reads it: the time today, the date too
// before today; "a while" for none recorded.
func Moment(t, now time.Time) string {
	if t.IsZero() {
		return "a while"
	}
	t = t.Local()
	if y, m, d := t.Date(); y == now.Year() && m == now.Month() && d == now.Day() {
		return t.Format("15:04")
	}
	return t.Format("Jan 2 15:04")
}

// Elsewhere is the one line a place not holding a conversation answers
// with: where it is and since when, and how to bring it.
func Elsewhere(holder string, since, now time.Time) string {
	return fmt.Sprintf("This conversation is in %s now, since %s. /continue to bring it here.", holder, Moment(since, now))
}

// Left tells the place a conversation left where it went.
func Left(to string) string {
	return fmt.Sprintf("This conversation continues in %s now. /continue to bring it back here.", to)
}

// Stopped tells the place a conversation left while a turn ran there
// that the turn stopped, and where the conversation and what the turn
// wrote went.
func Stopped(to string) string {
	return fmt.Sprintf("⏹ Stopped here: this conversation moved to %s, with what was written so far. /continue to bring it back here.", to)
}

// Here says that what (a session, described) is here, and since when.
func Here(what string, since, now time.Time) string {
	if what != "" {
		what = strings.ToUpper(what[:1]) + what[1:]
	}
	return fmt.Sprintf("%s is here, since %s.", what, Moment(since, now))
}

// OnItsWay is the one line a place a conversation is leaving (a handoff
// from it is under way) answers with: it runs nothing there meanwhile.
func OnItsWay(to string) string {
	return fmt.Sprintf("This conversation is on its way to %s; what you type here is kept until /continue brings it back.", to)
}

// Leaving says, for /where, that what (a session, described) is on its
// way to another place.
func Leaving(what, to string) string {
	if what != "" {
		what = strings.ToUpper(what[:1]) + what[1:]
	}
	return fmt.Sprintf("%s is on its way to %s.", what, to)
}
