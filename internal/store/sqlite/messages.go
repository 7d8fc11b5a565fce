package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"unicode"

	"github.com/baton-agent/baton/internal/store"
	"github.com/baton-agent/baton/internal/store/transcriptcache"
)

const messageCols = `id, session_id, seq, role, kind, content, tool_calls, tool_call_id, tool_name,
	platform, platform_msg_id, created_at, superseded`

func scanMessage(row interface{ Scan(...any) error }, extra ...any) (store.Message, error) {
	var m store.Message
	var toolCalls sql.NullString
	var created int64
	dest := append([]any{&m.ID, &m.SessionID, &m.Seq, &m.Role, &m.Kind, &m.Content, &toolCalls, &m.ToolCallID,
		&m.ToolName, &m.Platform, &m.PlatformMsgID, &created, &m.Superseded}, extra...)
	if err := row.Scan(dest...); err != nil {
		return store.Message{}, err
	}
	if toolCalls.Valid {
		m.ToolCalls = []byte(toolCalls.String)
	}
	m.CreatedAt = fromNanos(created)
	return m, nil
}

// AppendMessages stores msgs at the end of the transcript in one transaction.
func (s *Store) AppendMessages(ctx context.Context, sessionID string, msgs ...store.Message) ([]store.Message, error) {
	return s.AppendMessagesWithUsage(ctx, sessionID, store.Usage{}, msgs...)
}

// AppendMessagesWithUsage implements store.Messages. The usage lands on
// the session row the append moves anyway: no page more to write.
func (s *Store) AppendMessagesWithUsage(ctx context.Context, sessionID string, u store.Usage, msgs ...store.Message) ([]store.Message, error) {
	if err := validate(msgs); err != nil {
		return nil, fmt.Errorf("append to session %s: %w", sessionID, err)
	}
	if len(msgs) == 0 {
		if u == (store.Usage{}) {
			return nil, nil
		}
		return nil, s.AddUsage(ctx, sessionID, u)
	}
	var out []store.Message
	err := s.tx(ctx, func(tx *wtx) (err error) {
		if out, err = s.appendMessages(tx, sessionID, msgs); err != nil || u == (store.Usage{}) {
			return err
		}
		_, err = tx.Exec(addUsageSQL, u.InputTokens, u.OutputTokens, sessionID)
		return err
	})
	if err == nil {
		s.indexSoon()
	}
	if err == nil {
		s.extendCache(sessionID, out)
	}
	if err != nil {
		return nil, fmt.Errorf("append to session %s: %w", sessionID, err)
	}
	return out, nil
}

// insertMessageSQL appends one message after the session's last; the
// messages_session_bump trigger advances the session. No row is inserted
// (and none returned) when the session does not exist.
const insertMessageSQL = `INSERT INTO messages (session_id, seq, role, content, tool_calls, tool_call_id,
		tool_name, platform, platform_msg_id, created_at, kind)
	SELECT id, next_seq, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10 FROM sessions WHERE id = ?1
	RETURNING id, seq`

// appendMessages inserts msgs in order in tx, with their attachments.
func (s *Store) appendMessages(tx *wtx, sessionID string, msgs []store.Message) ([]store.Message, error) {
	t := now()
	out := make([]store.Message, len(msgs))
	for i, m := range msgs {
		if err := m.Check(); err != nil {
			return nil, fmt.Errorf("message %d: %w", i, err)
		}
		var toolCalls any
		if len(m.ToolCalls) > 0 {
			toolCalls = string(m.ToolCalls)
		}
		m.SessionID, m.Superseded = sessionID, false
		if m.CreatedAt.IsZero() {
			m.CreatedAt = fromNanos(t)
		}
		m.CreatedAt = store.Micro(m.CreatedAt)
		err := tx.QueryRow(insertMessageSQL, sessionID, m.Role, m.Content, toolCalls, m.ToolCallID,
			m.ToolName, m.Platform, m.PlatformMsgID, toNanos(m.CreatedAt), string(m.Kind)).Scan(&m.ID, &m.Seq)
		if errors.Is(err, sql.ErrNoRows) {
			return nil, store.ErrNotFound
		}
		if err != nil {
			return nil, err
		}
		if err := s.insertAttachments(tx, &m); err != nil {
			return nil, fmt.Errorf("message %d: %w", i, err)
		}
		out[i] = m
	}
	return out, nil
}

func validate(msgs []store.Message) error {
	for i, m := range msgs {
		if m.Role == "" {
			return fmt.Errorf("message %d has no role: %w", i, store.ErrInvalid)
		}
		if err := checkSeparators(i, m); err != nil {
			return err
		}
	}
	return nil
}

// Transcript loads the live transcript in order. With the cache on, only
// rows written since this process last loaded the session are read.
func (s *Store) Transcript(ctx context.Context, sessionID string) ([]store.Message, error) {
	ts, err := s.transcript(ctx, sessionID, false)
	return ts.Transcript, err
}

// TurnStart implements store.Messages: the session row is read in the
// transcript's snapshot.
func (s *Store) TurnStart(ctx context.Context, sessionID string) (store.TurnState, error) {
	return s.transcript(ctx, sessionID, true)
}

// turnStartSQL is the session, its draft and what tells its transcript's
// version (created_at is among sessionCols).
const turnStartSQL = `SELECT ` + sessionCols + `, draft, generation, next_seq FROM sessions WHERE id = ?`

// transcript loads the live transcript and, withSession, the session and
// its draft, in one snapshot.
func (s *Store) transcript(ctx context.Context, sessionID string, withSession bool) (store.TurnState, error) {
	if ts, ok, err := s.cachedTurn(ctx, sessionID, withSession); ok || err != nil {
		return ts, err
	}
	var ts store.TurnState
	msgs, err := s.transcriptIn(ctx, sessionID, func(tx snapshot) error {
		if !withSession {
			return nil
		}
		st, err := tx.stmt(ctx, turnStartSQL)
		if err != nil {
			return err
		}
		defer st.Close()
		var generation, nextSeq int64
		ts.Session, err = scanSession(st.QueryRowContext(ctx, sessionID), &ts.Draft, &generation, &nextSeq)
		return err
	})
	ts.Transcript = msgs
	return ts, err
}

// cachedTurn answers from the transcript cache when the session row, read
// in one statement, shows the cached transcript is the current one: then
// no transaction and no row is needed. ok is false when it cannot answer.
func (s *Store) cachedTurn(ctx context.Context, sessionID string, withSession bool) (ts store.TurnState, ok bool, err error) {
	if s.transcripts == nil {
		return ts, false, nil
	}
	cv, msgs, cached := s.transcripts.Get(sessionID)
	if !cached {
		return ts, false, nil
	}
	var v transcriptVersion
	if withSession {
		ts.Session, err = scanSession(s.readRow(ctx, turnStartSQL, sessionID), &ts.Draft, &v.Generation, &v.NextSeq)
		v.Born = toNanos(ts.Session.CreatedAt)
	} else {
		var n int
		var liveFrom int64
		err = s.readRow(ctx, transcriptVersionSQL, sessionID).Scan(&v.Born, &v.Generation, &v.NextSeq, &n, &liveFrom)
	}
	if errors.Is(err, sql.ErrNoRows) {
		s.transcripts.Drop(sessionID)
		return ts, false, fmt.Errorf("load transcript %s: %w", sessionID, store.ErrNotFound)
	}
	if err != nil || v != cv {
		return store.TurnState{}, false, nil // the full load says what is wrong
	}
	ts.Transcript = transcriptcache.Clone(msgs)
	return ts, true, nil
}

// transcriptIn loads the live transcript; also runs in its snapshot first.
func (s *Store) transcriptIn(ctx context.Context, sessionID string, also func(snapshot) error) ([]store.Message, error) {
	tx, err := s.beginRead(ctx, false)
	if err != nil {
		return nil, fmt.Errorf("load transcript %s: %w", sessionID, err)
	}
	defer tx.Rollback() // one snapshot for the version and the rows
	version, err := tx.stmt(ctx, transcriptVersionSQL)
	if err != nil {
		return nil, fmt.Errorf("load transcript %s: %w", sessionID, err)
	}
	defer version.Close()
	var v transcriptVersion
	var n int
	var liveFrom int64
	err = version.QueryRowContext(ctx, sessionID).Scan(&v.Born, &v.Generation, &v.NextSeq, &n, &liveFrom)
	if errors.Is(err, sql.ErrNoRows) {
		if s.transcripts != nil {
			s.transcripts.Drop(sessionID)
		}
		return nil, fmt.Errorf("load transcript %s: %w", sessionID, store.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("load transcript %s: %w", sessionID, err)
	}
	if err := also(tx); err != nil {
		return nil, fmt.Errorf("load session %s: %w", sessionID, err)
	}

	var have []store.Message
	from := int64(0)
	if s.transcripts != nil {
		if cv, msgs, ok := s.transcripts.Get(sessionID); ok && cv.Extends(v) {
			have, from = msgs, cv.NextSeq
		}
	}
	out := make([]store.Message, len(have), max(n, len(have)))
	copy(out, have)
	var made packs
	if out, err = s.loadRange(ctx, tx, sessionID, v, max(from, liveFrom), out, &made); err != nil {
		return nil, fmt.Errorf("load transcript %s: %w", sessionID, err)
	}
	// Packs and chunks hold no attachments: the few messages that have
	// any get them from one indexed read of those loaded here.
	if loaded := out[len(have):]; len(loaded) > 0 {
		if err := attachmentsIn(ctx, tx, sessionID, loaded); err != nil {
			return nil, fmt.Errorf("load transcript %s: attachments: %w", sessionID, err)
		}
	}
	s.savePacks(sessionID, v, &made)
	if s.transcripts == nil {
		return out, nil
	}
	s.transcripts.Put(sessionID, v, out)
	return transcriptcache.Clone(out), nil
}

// transcriptVersionSQL reads what tells whether a cached transcript is
// current, and where the live one starts.
const transcriptVersionSQL = `SELECT created_at, generation, next_seq, message_count, live_from FROM sessions WHERE id = ?`

// History loads every message ever stored for the session.
func (s *Store) History(ctx context.Context, sessionID string) ([]store.Message, error) {
	var exists int
	if err := s.readRow(ctx, `SELECT COUNT(*) FROM sessions WHERE id = ?`, sessionID).Scan(&exists); err != nil {
		return nil, fmt.Errorf("load history %s: %w", sessionID, err)
	}
	if exists == 0 {
		return nil, fmt.Errorf("load history %s: %w", sessionID, store.ErrNotFound)
	}
	rows, err := s.read(ctx, `SELECT `+messageCols+` FROM messages WHERE session_id = ? ORDER BY seq`, sessionID)
	if err != nil {
		return nil, fmt.Errorf("load history %s: %w", sessionID, err)
	}
	defer rows.Close()
	var out []store.Message
	for rows.Next() {
		m, err := scanMessage(rows)
		if err != nil {
			return nil, fmt.Errorf("load history %s: %w", sessionID, err)
		}
		out = append(out, m)
	}
	if err := rows.Err(); err != nil || len(out) == 0 {
		return out, err
	}
	arows, err := s.read(ctx, sessionAttachmentsSQL, sessionID, out[0].ID)
	if err == nil {
		err = fillAttachments(out, arows)
	}
	if err != nil {
		return nil, fmt.Errorf("load history %s: attachments: %w", sessionID, err)
	}
	return out, nil
}

// ReplaceTranscript supersedes the live transcript with msgs atomically.
func (s *Store) ReplaceTranscript(ctx context.Context, sessionID string, msgs []store.Message) ([]store.Message, error) {
	if err := validate(msgs); err != nil {
		return nil, fmt.Errorf("replace transcript of session %s: %w", sessionID, err)
	}
	var out []store.Message
	err := s.tx(ctx, func(tx *wtx) error {
		res, err := tx.Exec(`UPDATE sessions SET message_count = 0, generation = generation + 1, live_from = next_seq, draft = '' WHERE id = ?`, sessionID)
		if err := affected(res, err, "session "+sessionID); err != nil {
			return err
		}
		if _, err := tx.Exec(`UPDATE messages SET superseded = 1 WHERE session_id = ? AND superseded = 0`, sessionID); err != nil {
			return err
		}
		if _, err := tx.Exec(`DELETE FROM transcript_packs WHERE session_id = ?`, sessionID); err != nil {
			return err
		}
		out, err = s.appendMessages(tx, sessionID, msgs)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("replace transcript of session %s: %w", sessionID, err)
	}
	s.indexSoon()
	return out, nil
}

// SetDraft keeps the partial answer of the session's model call.
func (s *Store) SetDraft(ctx context.Context, sessionID, text string) error {
	res, err := s.exec(ctx, `UPDATE sessions SET draft = ? WHERE id = ?`, text, sessionID)
	return affected(res, err, "keep the draft of session "+sessionID)
}

// Draft is the session's kept partial answer.
func (s *Store) Draft(ctx context.Context, sessionID string) (string, error) {
	var text string
	err := s.readRow(ctx, `SELECT draft FROM sessions WHERE id = ?`, sessionID).Scan(&text)
	if errors.Is(err, sql.ErrNoRows) {
		return "", fmt.Errorf("load the draft of session %s: %w", sessionID, store.ErrNotFound)
	}
	if err != nil {
		return "", fmt.Errorf("load the draft of session %s: %w", sessionID, err)
	}
	return text, nil
}

// FindPlatformMessage finds a stored message by its platform message id.
func (s *Store) FindPlatformMessage(ctx context.Context, platform, platformMsgID string) (store.Message, error) {
	m, err := scanMessage(s.readRow(ctx, `SELECT `+messageCols+` FROM messages
		WHERE platform = ? AND platform_msg_id = ? AND platform_msg_id <> '' LIMIT 1`, platform, platformMsgID))
	if errors.Is(err, sql.ErrNoRows) {
		return store.Message{}, fmt.Errorf("message %s/%s: %w", platform, platformMsgID, store.ErrNotFound)
	}
	if err != nil {
		return store.Message{}, fmt.Errorf("find message %s/%s: %w", platform, platformMsgID, err)
	}
	rows, err := s.read(ctx, `SELECT `+attachmentCols+` FROM attachments WHERE message_id = ? ORDER BY ordinal`, m.ID)
	if err == nil {
		msgs := []store.Message{m}
		err = fillAttachments(msgs, rows)
		m = msgs[0]
	}
	if err != nil {
		return store.Message{}, fmt.Errorf("find message %s/%s: attachments: %w", platform, platformMsgID, err)
	}
	return m, nil
}

// Search runs a literal full-text search over live messages.
func (s *Store) Search(ctx context.Context, q store.SearchQuery) ([]store.SearchHit, error) {
	match, err := FTSQuery(q.Text)
	if err != nil {
		return nil, err
	}
	if err := s.searchIndex(ctx); err != nil {
		return nil, fmt.Errorf("search %q: %w", q.Text, err)
	}
	var cond strings.Builder
	args := []any{match}
	if q.SessionID != "" {
		cond.WriteString(" AND m.session_id = ?")
		args = append(args, q.SessionID)
	}
	if q.Role != "" {
		cond.WriteString(" AND m.role = ?")
		args = append(args, q.Role)
	}
	limit := q.Limit
	if limit <= 0 {
		limit = 20
	}
	rows, err := s.read(ctx, `SELECT `+prefixed("m.", messageCols)+`,
			snippet(messages_fts, 0, '[', ']', '…', 12), s.title
		FROM messages_fts
		JOIN messages m ON m.id = messages_fts.rowid
		JOIN sessions s ON s.id = m.session_id
		WHERE messages_fts MATCH ? AND m.superseded = 0`+cond.String()+`
		ORDER BY rank`+limitClause(limit), args...)
	if err != nil {
		return nil, fmt.Errorf("search %q: %w", q.Text, err)
	}
	defer rows.Close()
	var out []store.SearchHit
	for rows.Next() {
		var h store.SearchHit
		h.Message, err = scanMessage(rows, &h.Snippet, &h.Title)
		if err != nil {
			return nil, fmt.Errorf("search %q: %w", q.Text, err)
		}
		out = append(out, h)
	}
	return out, rows.Err()
}

// FTSQuery turns a person's raw words into an FTS5 query that matches them
// literally: each word becomes a quoted phrase (all must match), and a
// trailing * keeps its meaning as a prefix search. Operators, quotes and
// parentheses lose their special meaning, so no input is a syntax error.
// Control characters (a NUL ends a string for SQLite's parser) separate
// words like spaces do.
func FTSQuery(raw string) (string, error) {
	var parts []string
	for _, w := range strings.FieldsFunc(raw, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) {
		prefix := strings.HasSuffix(w, "*")
		w = strings.TrimRight(w, "*")
		if !strings.ContainsFunc(w, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsNumber(r) }) {
			continue // only punctuation: the tokenizer would index nothing for it
		}
		p := `"` + strings.ReplaceAll(w, `"`, `""`) + `"`
		if prefix {
			p += "*"
		}
		parts = append(parts, p)
	}
	if len(parts) == 0 {
		return "", fmt.Errorf("search %q: give at least one word with a letter or digit: %w", raw, store.ErrInvalid)
	}
	return strings.Join(parts, " "), nil
}

func prefixed(p, cols string) string {
	fields := strings.Split(cols, ",")
	for i, f := range fields {
		fields[i] = p + strings.TrimSpace(f)
	}
	return strings.Join(fields, ", ")
}
