// Package plural words counts for people: "1 reply", "2 replies",
// "0 messages". Every count baton says goes through it, so the policy
// (one is singular, everything else plural) is in one place and no
// message says "message(s)".
package plural

import "strconv"

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
