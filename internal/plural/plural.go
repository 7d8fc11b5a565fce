// Package plural words counts for people: "1 reply", "2 replies",
// "0 messages". Every count baton says goes through it, so the policy
// (one is singular, everything else plural) is in one place and no
// message says "message(s)".
package plural

import (
	"fmt"
	"strconv"
)

// Count is n followed by one when n is 1, else by many.
func Count(n int, one, many string) string {
	return strconv.Itoa(n) + " " + Word(n, one, many)
}

// Word is one when n is 1, else many: for sentences where the number is
// written apart from its noun.
func Word(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// Size writes a byte count for people: "812 bytes", "1.5 MB",
// "20 MB", in units of 1024 as services state their limits (Telegram's
// "20MB" is 20 << 20 bytes).
func Size(n int64) string {
	switch {
	case n < 1<<10:
		return fmt.Sprintf("%d bytes", n)
	case n < 1<<20:
		return trimZero(float64(n)/(1<<10)) + " kB"
	case n < 1<<30:
		return trimZero(float64(n)/(1<<20)) + " MB"
	}
	return trimZero(float64(n)/(1<<30)) + " GB"
}

func trimZero(f float64) string {
	s := fmt.Sprintf("%.1f", f)
	if len(s) > 2 && s[len(s)-2:] == ".0" {
		return s[:len(s)-2]
	}
	return s
}
