package store

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxTitleLen is the longest title kept, in characters.
const MaxTitleLen = 100

// SanitizeTitle returns title with control, format (bidi overrides,
// zero-width) and surrounding space removed and inner whitespace collapsed.
// An empty result or one longer than MaxTitleLen is ErrInvalid.
func SanitizeTitle(title string) (string, error) {
	var b strings.Builder
	space := false
	for _, r := range title {
		switch {
		case r == utf8.RuneError:
			continue
		case unicode.IsSpace(r):
			space = true
			continue
		case unicode.IsControl(r), unicode.Is(unicode.Cf, r):
			// Cf covers bidi embeddings/overrides/isolates, zero-width
			// joiners and marks: invisible, and able to disguise a title.
			continue
		}
		if space && b.Len() > 0 {
			b.WriteByte(' ')
		}
		space = false
		b.WriteRune(r)
	}
	clean := b.String()
	if clean == "" {
		return "", fmt.Errorf("title %q is empty once control characters are removed: %w", title, ErrInvalid)
	}
	if n := utf8.RuneCountInString(clean); n > MaxTitleLen {
		return "", fmt.Errorf("title is %d characters, at most %d allowed: %w", n, MaxTitleLen, ErrInvalid)
	}
	return clean, nil
}

var lineageSuffix = regexp.MustCompile(`^(.*) #(\d+)$`)

// SplitLineage splits "name #3" into ("name", 3); a title with no number is
// generation 1.
func SplitLineage(title string) (base string, n int) {
	if m := lineageSuffix.FindStringSubmatch(title); m != nil {
		if v, err := strconv.Atoi(m[2]); err == nil && v >= 2 {
			return m[1], v
		}
	}
	return title, 1
}

// NextInLineage is the title of the session that continues title:
// "name" → "name #2", "name #2" → "name #3".
func NextInLineage(title string) string {
	base, n := SplitLineage(title)
	return fmt.Sprintf("%s #%d", base, n+1)
}
