package postgres

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"golang.org/x/text/unicode/norm"

	"github.com/baton-agent/baton/internal/store"
)

// The search index is built here rather than by Postgres's text parser,
// so that content and query are cut into words as the store's search
// contract says (store.SearchQuery), whatever bytes the content holds:
// words are runs of letters and digits, lower-cased and without their
// accents.

// maxWordBytes is the longest word indexed: Postgres refuses lexemes over
// 2 KB, and a longer run of letters is no word anyone searches for.
const maxWordBytes = 255

// maxVectorBytes bounds a message's index entry (a tsvector holds at
// most 1 MB): the first words of a very long message are indexed.
const maxVectorBytes = 256 << 10

// maxPosition is the highest word position a tsvector keeps.
const maxPosition = 16383

// wordRune is a character of a word: a letter, a digit or one for
// private use, the categories SQLite's FTS5 tokenizer takes (L*, N*, Co);
// a combining mark separates, as there.
func wordRune(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsNumber(r) || unicode.Is(unicode.Co, r)
}

// span is one word of a text: where it is, and the word as indexed.
type span struct {
	start, end int
	word       string
}

// words cuts text into its words, in order.
func words(text string) []span {
	var out []span
	start := -1
	for i, r := range text {
		ok := wordRune(r) // an invalid byte decodes as U+FFFD, a symbol
		switch {
		case ok && start < 0:
			start = i
		case !ok && start >= 0:
			out = append(out, span{start, i, fold(text[start:i])})
			start = -1
		}
	}
	if start >= 0 {
		out = append(out, span{start, len(text), fold(text[start:])})
	}
	return out
}

// fold is a word as indexed and searched: lower case, its letters'
// accents (combining marks once decomposed) dropped, as SQLite's FTS5
// tokenizer matches them.
func fold(w string) string {
	w = strings.ToLower(w)
	for _, r := range w {
		if r >= utf8.RuneSelf {
			return norm.NFC.String(strings.Map(func(r rune) rune {
				if unicode.Is(unicode.Mn, r) {
					return -1
				}
				return r
			}, norm.NFD.String(w)))
		}
	}
	return w // ASCII: nothing to decompose
}

// lexeme quotes w for a tsvector or tsquery literal.
func lexeme(w string) string {
	return "'" + strings.ReplaceAll(strings.ReplaceAll(w, `\`, `\\`), "'", "''") + "'"
}

// documentVector is content's index entry, as tsvector literal text.
func documentVector(content string) string {
	var b strings.Builder
	pos := 0
	for _, w := range words(content) {
		pos++ // a word left out still stands between its neighbours
		if len(w.word) > maxWordBytes {
			continue
		}
		if b.Len()+len(w.word)+12 > maxVectorBytes {
			break
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(lexeme(w.word))
		b.WriteByte(':')
		b.WriteString(strconv.Itoa(min(pos, maxPosition)))
	}
	return b.String()
}

// term is one word of a query: the words it cuts into, which must be
// found in a row, the last one as a prefix when it ended in *.
type term struct {
	words  []string
	prefix bool
}

// parseQuery turns a person's raw words into terms.
func parseQuery(raw string) ([]term, error) {
	var out []term
	for _, f := range strings.FieldsFunc(raw, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) {
		prefix := strings.HasSuffix(f, "*")
		var t term
		for _, w := range words(strings.TrimRight(f, "*")) {
			t.words = append(t.words, w.word)
		}
		if len(t.words) == 0 {
			continue
		}
		t.prefix = prefix
		out = append(out, t)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("search %q: give at least one word with a letter or digit: %w", raw, store.ErrInvalid)
	}
	return out, nil
}

// tsquery is the terms as tsquery literal text: every term, each its
// words in a row.
func tsquery(terms []term) string {
	parts := make([]string, len(terms))
	for i, t := range terms {
		ws := make([]string, len(t.words))
		for j, w := range t.words {
			ws[j] = lexeme(w)
			if t.prefix && j == len(t.words)-1 {
				ws[j] += ":*"
			}
		}
		parts[i] = "(" + strings.Join(ws, " <-> ") + ")"
	}
	return strings.Join(parts, " & ")
}

// snippetWords is how many words a snippet shows around its first match.
const snippetWords = 12

// snippet is a few words of content around the first word a term
// matches, matched words in [ and ].
func snippet(content string, terms []term) string {
	ws := words(content)
	matches := func(w string) bool {
		for _, t := range terms {
			for j, tw := range t.words {
				if w == tw || t.prefix && j == len(t.words)-1 && strings.HasPrefix(w, tw) {
					return true
				}
			}
		}
		return false
	}
	first := -1
	for i, w := range ws {
		if matches(w.word) {
			first = i
			break
		}
	}
	if first < 0 {
		first = 0
	}
	from := max(0, first-snippetWords/2)
	to := min(len(ws), from+snippetWords)
	if len(ws) == 0 {
		return ""
	}
	var b strings.Builder
	if from > 0 {
		b.WriteString("…")
	}
	at := ws[from].start
	for _, w := range ws[from:to] {
		b.WriteString(strings.ToValidUTF8(content[at:w.start], ""))
		if matches(w.word) {
			b.WriteString("[" + content[w.start:w.end] + "]")
		} else {
			b.WriteString(content[w.start:w.end])
		}
		at = w.end
	}
	if to < len(ws) {
		b.WriteString("…")
	} else {
		b.WriteString(strings.ToValidUTF8(content[at:], ""))
	}
	return b.String()
}

// Search finds live messages with every word of the query.
func (s *Store) Search(ctx context.Context, q store.SearchQuery) ([]store.SearchHit, error) {
	terms, err := parseQuery(q.Text)
	if err != nil {
		return nil, err
	}
	if !isText(q.SessionID, string(q.Role)) {
		return nil, nil
	}
	args := []any{tsquery(terms)}
	cond := ""
	if q.SessionID != "" {
		args = append(args, q.SessionID)
		cond += fmt.Sprintf(" AND m.session_id = $%d", len(args))
	}
	if q.Role != "" {
		args = append(args, string(q.Role))
		cond += fmt.Sprintf(" AND m.role = $%d", len(args))
	}
	limit := q.Limit
	if limit <= 0 {
		limit = 20
	}
	args = append(args, limit)
	rows, err := s.pool.Query(ctx, `SELECT `+prefixed("m.", messageCols)+`, s.title
		FROM messages m JOIN sessions s ON s.id = m.session_id
		WHERE m.words @@ $1::tsquery AND NOT m.superseded`+cond+`
		ORDER BY ts_rank(m.words, $1::tsquery) DESC, m.id DESC LIMIT $`+strconv.Itoa(len(args)), args...)
	if err != nil {
		return nil, fmt.Errorf("search %q: %w", q.Text, notText(err))
	}
	hits, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.SearchHit, error) {
		var h store.SearchHit
		var err error
		h.Message, err = scanMessage(r, &h.Title)
		h.Snippet = snippet(h.Message.Content, terms)
		return h, err
	})
	if err != nil {
		return nil, fmt.Errorf("search %q: %w", q.Text, err)
	}
	return hits, nil
}

func prefixed(p, cols string) string {
	fields := strings.Split(cols, ",")
	for i, f := range fields {
		fields[i] = p + strings.TrimSpace(f)
	}
	return strings.Join(fields, ", ")
}
