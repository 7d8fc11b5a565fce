package platform

import (
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// UTF16Len is the length of s in UTF-16 code units, the unit Telegram
// counts its message limit in: a rune outside the Basic Multilingual Plane
// (most emoji) counts 2. Invalid UTF-8 bytes count 1 each, as the
// replacement character they become on the wire.
func UTF16Len(s string) int {
	n := 0
	for _, r := range s {
		if r >= 0x10000 && r <= utf8.MaxRune {
			n += 2
		} else {
			n++
		}
	}
	return n
}

// Split cuts a markdown reply into parts that each measure at most max, for
// services that refuse longer messages. measure is the service's length
// (nil counts runes; Telegram wants UTF16Len) and must grow as text grows.
//
// Cuts fall, in order of preference, at a paragraph break, a line break, a
// space, and only then anywhere — always between runes, so neither a UTF-8
// sequence nor a UTF-16 surrogate pair is ever broken. A cut never falls
// inside a fenced code block while the block could instead be kept whole in
// the next part. A block longer than a whole part is cut at its line
// breaks: the part is ended with a closing fence and the next part starts by
// reopening the block with the same opening line (and so the same
// language), so every part renders on its own.
//
// Rejoining: the parts concatenated are exactly text, except at cuts made
// inside a code block, where the added closing fence at the end of one part
// and the copied opening fence line at the start of the next are extra;
// removing those two gives text back byte for byte. No whitespace is
// trimmed or added anywhere else.
//
// Each part measures at most max, with two exceptions that only very small
// limits can reach: a single rune measuring more than max is sent alone,
// and a code block whose opening and closing fence lines take more than
// half of max is cut without reopening. An empty text gives no parts.
// measure must count every rune as at least 1.
func Split(text string, max int, measure func(string) int) []string {
	parts := splitParts(text, max, measure)
	out := make([]string, len(parts))
	for i, p := range parts {
		out[i] = p.prefix + p.body + p.suffix
	}
	return out
}

// part is one piece of Split's result: body is a slice of the input, in
// order; prefix and suffix are the fence lines added around a cut made
// inside a code block.
type part struct {
	prefix, body, suffix string
}

// fence is one fenced code block of the input, by byte offsets.
type fence struct {
	openStart    int    // start of the opening fence line
	contentStart int    // just after the opening line
	closeStart   int    // start of the closing line (len(text) if unclosed)
	end          int    // just after the closing line (len(text) if unclosed)
	openLine     string // the opening line, with its newline: what a reopen copies
	closer       string // a closing fence matching the opener
	reopenable   bool   // the fence lines leave room for code in a part
}

// cut preference levels, best first.
const (
	levelParagraph = iota
	levelLine
	levelWord
	levelNearParagraph // a paragraph or line break in the first half of the window
	levelNearWord
	levelFenceLine // a line break inside a code block: costs a close and reopen
	levelRune
	levelFenceRune
	levelNone
)

func splitParts(text string, max int, measure func(string) int) []part {
	if text == "" {
		return nil
	}
	if measure == nil {
		measure = utf8.RuneCountInString
	}
	if max < 1 {
		max = 1
	}
	fences := scanFences(text, max, measure)
	bounds := runeBounds(text)
	var parts []part
	pos := 0
	prefix := "" // the reopened fence line when pos is inside a code block
	for pos < len(text) {
		// Every rune measures at least 1 and holds at most UTFMax bytes,
		// so a long rest need not be measured to know it does not fit.
		if (len(text)-pos)/utf8.UTFMax <= max && measure(prefix+text[pos:]) <= max {
			parts = append(parts, part{prefix: prefix, body: text[pos:]})
			break
		}
		hard := hardEnd(text, bounds, pos, prefix, max, measure)
		e, f := chooseCut(text, bounds, pos, hard, prefix, max, measure, fences)
		p := part{prefix: prefix, body: text[pos:e]}
		prefix = ""
		if f != nil {
			p.suffix = f.closer
			if text[e-1] != '\n' {
				p.suffix = "\n" + f.closer
			}
			prefix = f.openLine
		}
		parts = append(parts, p)
		pos = e
	}
	return parts
}

// hardEnd is the furthest rune boundary e > pos such that prefix+text[pos:e]
// fits in max, or the end of the first rune when not even that fits (so
// Split always progresses). bounds holds every rune boundary of text.
func hardEnd(text string, bounds []int, pos int, prefix string, max int, measure func(string) int) int {
	i := sort.SearchInts(bounds, pos) // bounds[i] == pos
	// Find the last j > i with a fitting text[pos:bounds[j]]; measure grows
	// with the text, so fitting is monotone in j, and more than max runes
	// never fit.
	n := sort.Search(min(len(bounds)-i-1, max+1), func(k int) bool {
		return measure(prefix+text[pos:bounds[i+1+k]]) > max
	})
	if n == 0 {
		return bounds[i+1]
	}
	return bounds[i+n]
}

// runeBounds lists the byte offsets where runes start, and len(text),
// treating each invalid byte as a rune of its own as the range loop does.
func runeBounds(text string) []int {
	b := make([]int, 0, len(text)+1)
	for i := range text {
		b = append(b, i)
	}
	return append(b, len(text))
}

// chooseCut picks where the part starting at pos ends (at most hard) and,
// when the cut falls inside a reopenable code block, that block.
func chooseCut(text string, bounds []int, pos, hard int, prefix string, max int, measure func(string) int, fences []fence) (int, *fence) {
	if hard >= len(text) {
		return len(text), nil
	}
	half := pos + (hard-pos)/2
	best, bestLevel := -1, levelNone
	var bestFence *fence
	// Walk rune boundaries backwards from hard; the first boundary found at
	// each level is the furthest one, so only a better level replaces it.
	for i := sort.SearchInts(bounds, hard); bounds[i] > pos; i-- {
		e := bounds[i]
		lvl, f := classify(text, e, half, fences)
		if lvl >= bestLevel {
			continue
		}
		if f != nil {
			// A cut inside a block must leave room for the closing fence.
			suffix := f.closer
			if text[e-1] != '\n' {
				suffix = "\n" + f.closer
			}
			if measure(prefix+text[pos:e]+suffix) > max {
				continue
			}
		}
		best, bestLevel, bestFence = e, lvl, f
		if lvl == levelParagraph {
			break
		}
	}
	if best < 0 {
		return hard, nil
	}
	return best, bestFence
}

// classify rates a cut at byte offset e. It returns the fence the cut
// would fall inside of when a close-and-reopen is needed.
func classify(text string, e, half int, fences []fence) (int, *fence) {
	f := fenceAround(fences, e)
	if f != nil {
		if !f.reopenable {
			return levelRune, nil
		}
		if e <= f.contentStart || e >= f.closeStart {
			// Inside a fence line itself, or a cut that would leave an
			// empty block on one side: worst.
			return levelNone, nil
		}
		if text[e-1] == '\n' {
			return levelFenceLine, f
		}
		return levelFenceRune, f
	}
	near := e < half
	prev := text[e-1]
	switch {
	case prev == '\n':
		if isParagraphBreak(text, e, fences) {
			if near {
				return levelNearParagraph, nil
			}
			return levelParagraph, nil
		}
		if near {
			return levelNearParagraph, nil
		}
		return levelLine, nil
	case isSpaceBefore(text, e):
		if near {
			return levelNearWord, nil
		}
		return levelWord, nil
	}
	return levelRune, nil
}

// fenceAround returns the fence strictly containing offset e (a cut there
// would fall inside the block), or nil.
func fenceAround(fences []fence, e int) *fence {
	lo, hi := 0, len(fences)
	for lo < hi {
		m := (lo + hi) / 2
		if fences[m].end <= e {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo < len(fences) && fences[lo].openStart < e && e < fences[lo].end {
		return &fences[lo]
	}
	return nil
}

// isParagraphBreak reports whether a cut at e (just after a newline) falls
// between blocks: after a blank line, or at the edge of a code block.
func isParagraphBreak(text string, e int, fences []fence) bool {
	lineStart := strings.LastIndexByte(text[:e-1], '\n') + 1
	if strings.TrimSpace(text[lineStart:e-1]) == "" {
		return true
	}
	// The first fence ending after e is the only one that can open at e;
	// the one before it is the only one that can end at e.
	i := sort.Search(len(fences), func(i int) bool { return fences[i].end > e })
	if i < len(fences) && fences[i].openStart == e {
		return true
	}
	return i > 0 && fences[i-1].end == e
}

func isSpaceBefore(text string, e int) bool {
	r, _ := utf8.DecodeLastRuneInString(text[:e])
	return unicode.IsSpace(r)
}

// scanFences finds the fenced code blocks of text as CommonMark does at the
// top level: an opening line of three or more backticks or tildes indented
// at most three spaces, closed by a line of at least as many of the same
// character, or by the end of the text.
func scanFences(text string, max int, measure func(string) int) []fence {
	var out []fence
	var cur *fence
	var ch byte
	var n int
	for start := 0; start < len(text); {
		end := strings.IndexByte(text[start:], '\n')
		if end < 0 {
			end = len(text)
		} else {
			end += start + 1
		}
		line := strings.TrimRight(text[start:end], "\r\n")
		if cur == nil {
			if c, k, ok := openingFence(line); ok {
				cur = &fence{openStart: start, contentStart: end, openLine: text[start:end]}
				ch, n = c, k
				cur.closer = strings.Repeat(string(c), k)
			}
		} else if closingFence(line, ch, n) {
			cur.closeStart, cur.end = start, end
			out = append(out, *cur)
			cur = nil
		}
		start = end
	}
	if cur != nil {
		cur.closeStart, cur.end = len(text), len(text)
		out = append(out, *cur)
	}
	for i := range out {
		f := &out[i]
		overhead := measure(f.openLine) + measure("\n"+f.closer)
		f.reopenable = strings.HasSuffix(f.openLine, "\n") && overhead+2 <= max/2
	}
	return out
}

func openingFence(line string) (byte, int, bool) {
	s := strings.TrimLeft(line, " ")
	if len(line)-len(s) > 3 || len(s) < 3 {
		return 0, 0, false
	}
	c := s[0]
	if c != '`' && c != '~' {
		return 0, 0, false
	}
	k := 0
	for k < len(s) && s[k] == c {
		k++
	}
	if k < 3 {
		return 0, 0, false
	}
	if c == '`' && strings.IndexByte(s[k:], '`') >= 0 {
		return 0, 0, false
	}
	return c, k, true
}

func closingFence(line string, c byte, n int) bool {
	s := strings.TrimLeft(line, " ")
	if len(line)-len(s) > 3 {
		return false
	}
	k := 0
	for k < len(s) && s[k] == c {
		k++
	}
	return k >= n && strings.TrimRight(s[k:], " \t") == ""
}
