package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/baton-agent/baton/internal/store"
	"github.com/baton-agent/baton/internal/store/transcriptcache"
)

const messageCols = `id, session_id, seq, role, kind, content, tool_calls, tool_call_id, tool_name,
	platform, platform_msg_id, created_at, superseded`

func scanMessage(row pgx.Row, extra ...any) (store.Message, error) {
	var m store.Message
	var content, toolCalls []byte
	var created int64
	dest := append([]any{&m.ID, &m.SessionID, &m.Seq, &m.Role, &m.Kind, &content, &toolCalls, &m.ToolCallID,
		&m.ToolName, &m.Platform, &m.PlatformMsgID, &created, &m.Superseded}, extra...)
	if err := row.Scan(dest...); err != nil {
		return store.Message{}, err
	}
	m.Content = string(content)
	if toolCalls != nil {
		m.ToolCalls = toolCalls
	}
	m.CreatedAt = fromMicros(created)
	return m, nil
}

func validate(msgs []store.Message) error {
	for i, m := range msgs {
		if m.Role == "" {
			return fmt.Errorf("message %d has no role: %w", i, store.ErrInvalid)
		}
		if err := store.CheckNames("role", string(m.Role)); err != nil {
			return fmt.Errorf("message %d: %w", i, err)
		}
		if err := m.Check(); err != nil {
			return fmt.Errorf("message %d: %w", i, err)
		}
	}
	return nil
}

// AppendMessages stores msgs at the end of the transcript in one transaction.
func (s *Store) AppendMessages(ctx context.Context, sessionID string, msgs ...store.Message) ([]store.Message, error) {
	return s.AppendMessagesWithUsage(ctx, sessionID, store.Usage{}, msgs...)
}

// AppendMessagesWithUsage implements store.Messages.
func (s *Store) AppendMessagesWithUsage(ctx context.Context, sessionID string, u store.Usage, msgs ...store.Message) ([]store.Message, error) {
	if err := validate(msgs); err != nil {
		return nil, fmt.Errorf("append to session %s: %w", sessionID, err)
	}
	if !isText(sessionID) {
		return nil, fmt.Errorf("append to session %s: %w", sessionID, store.ErrNotFound)
	}
	if len(msgs) == 0 {
		if u == (store.Usage{}) {
			return nil, nil
		}
		return nil, s.AddUsage(ctx, sessionID, u)
	}
	var out []store.Message
	err := s.tx(ctx, func(tx pgx.Tx) (err error) {
		if out, err = appendMessages(ctx, tx, sessionID, msgs); err != nil || u == (store.Usage{}) {
			return err
		}
		_, err = tx.Exec(ctx, addUsageSQL, u.InputTokens, u.OutputTokens, sessionID)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("append to session %s: %w", sessionID, notText(err))
	}
	if s.transcripts != nil {
		loaded := make([]store.Message, len(out))
		for i, m := range out {
			loaded[i] = transcriptcache.Loaded(m, fromMicros(micros(m.CreatedAt)))
		}
		s.transcripts.Extend(sessionID, loaded)
	}
	return out, nil
}

// appendMessages inserts msgs in order in tx, with their attachments.
// Taking the seqs moves the session row on, which also locks it: appends
// to one session, from any process, are one at a time.
func appendMessages(ctx context.Context, tx pgx.Tx, sessionID string, msgs []store.Message) ([]store.Message, error) {
	t := nowMicros()
	n := int64(len(msgs))
	var first int64
	err := tx.QueryRow(ctx, `UPDATE sessions SET next_seq = next_seq + $1, message_count = message_count + $1,
		updated_at = $2, draft = '' WHERE id = $3 RETURNING next_seq - $1`, n, t, sessionID).Scan(&first)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, store.ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	out := make([]store.Message, len(msgs))
	for i, m := range msgs {
		m.SessionID, m.Superseded, m.Seq = sessionID, false, first+int64(i)
		if m.CreatedAt.IsZero() {
			m.CreatedAt = fromMicros(t)
		}
		m.CreatedAt = store.Micro(m.CreatedAt)
		var toolCalls []byte
		if len(m.ToolCalls) > 0 {
			toolCalls = m.ToolCalls
		}
		if err := tx.QueryRow(ctx, `INSERT INTO messages (session_id, seq, role, kind, content, tool_calls, tool_call_id,
			tool_name, platform, platform_msg_id, created_at, words) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12::tsvector)
			RETURNING id`, sessionID, m.Seq, string(m.Role), string(m.Kind), []byte(m.Content), toolCalls, m.ToolCallID,
			m.ToolName, m.Platform, m.PlatformMsgID, micros(m.CreatedAt), documentVector(m.Content)).Scan(&m.ID); err != nil {
			return nil, err
		}
		if err := insertAttachments(ctx, tx, &m); err != nil {
			return nil, fmt.Errorf("message %d: %w", i, err)
		}
		out[i] = m
	}
	// The session moves on at the newest message's time.
	if _, err := tx.Exec(ctx, `UPDATE sessions SET updated_at = $1 WHERE id = $2`, micros(out[len(out)-1].CreatedAt), sessionID); err != nil {
		return nil, err
	}
	return out, nil
}

// Transcript loads the live transcript in order.
func (s *Store) Transcript(ctx context.Context, sessionID string) ([]store.Message, error) {
	ts, err := s.turnStart(ctx, sessionID)
	if err != nil {
		return nil, fmt.Errorf("load transcript %s: %w", sessionID, err)
	}
	return ts.Transcript, nil
}

// TurnStart reads the session, its draft and its live transcript in one
// snapshot.
func (s *Store) TurnStart(ctx context.Context, sessionID string) (store.TurnState, error) {
	ts, err := s.turnStart(ctx, sessionID)
	if err != nil {
		return store.TurnState{}, fmt.Errorf("turn start %s: %w", sessionID, err)
	}
	return ts, nil
}

func (s *Store) turnStart(ctx context.Context, sessionID string) (store.TurnState, error) {
	var ts store.TurnState
	if !isText(sessionID) {
		return ts, store.ErrNotFound
	}
	if ts, ok, err := s.cachedTurn(ctx, sessionID); ok || err != nil {
		return ts, err
	}
	var v transcriptcache.Version
	var have []store.Message
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		var err error
		ts.Session, ts.Draft, v, err = readTurnSession(tx.QueryRow(ctx, turnSessionSQL, sessionID))
		if err != nil {
			return err
		}
		from := int64(0)
		if s.transcripts != nil {
			if cv, msgs, ok := s.transcripts.Get(sessionID); ok && cv.Extends(v) {
				have, from = msgs, cv.NextSeq
			}
		}
		if from == v.NextSeq {
			return nil // all cached
		}
		ts.Transcript, err = loadMessages(ctx, tx, `WHERE session_id = $1 AND NOT superseded AND seq >= $2 ORDER BY seq`, sessionID, from)
		return err
	})
	if errors.Is(err, store.ErrNotFound) && s.transcripts != nil {
		s.transcripts.Drop(sessionID)
	}
	if err != nil || s.transcripts == nil {
		return ts, notFound(err)
	}
	out := make([]store.Message, 0, len(have)+len(ts.Transcript))
	out = append(append(out, have...), ts.Transcript...)
	s.transcripts.Put(sessionID, v, out)
	ts.Transcript = transcriptcache.Clone(out)
	return ts, nil
}

// turnSessionSQL reads a session, its draft and what tells whether a
// cached transcript of it is current.
const turnSessionSQL = `SELECT ` + sessionCols + `, draft, made, generation, next_seq FROM sessions WHERE id = $1`

func readTurnSession(row pgx.Row) (store.Session, string, transcriptcache.Version, error) {
	var draft []byte
	var v transcriptcache.Version
	sess, err := scanSession(row, &draft, &v.Born, &v.Generation, &v.NextSeq)
	if errors.Is(err, pgx.ErrNoRows) {
		return store.Session{}, "", v, store.ErrNotFound
	}
	return sess, string(draft), v, err
}

// cachedTurn answers from the transcript cache when the session row, read
// in one statement, shows the cached transcript is the current one: then
// no transaction and no message row is needed. ok is false when it cannot
// answer.
func (s *Store) cachedTurn(ctx context.Context, sessionID string) (ts store.TurnState, ok bool, err error) {
	if s.transcripts == nil {
		return ts, false, nil
	}
	cv, msgs, cached := s.transcripts.Get(sessionID)
	if !cached {
		return ts, false, nil
	}
	var v transcriptcache.Version
	ts.Session, ts.Draft, v, err = readTurnSession(s.pool.QueryRow(ctx, turnSessionSQL, sessionID))
	if errors.Is(err, store.ErrNotFound) {
		s.transcripts.Drop(sessionID)
		return store.TurnState{}, false, err
	}
	if err != nil || v != cv {
		return store.TurnState{}, false, nil // the full load says what is wrong
	}
	ts.Transcript = transcriptcache.Clone(msgs)
	return ts, true, nil
}

// notFound makes a lookup by a name that cannot be stored (not text) find
// nothing, as in every store.
func notFound(err error) error {
	switch pgCode(err) {
	case "22021", "22P05":
		return fmt.Errorf("%w (%w)", store.ErrNotFound, err)
	}
	return err
}

// loadMessages reads the messages a WHERE … ORDER BY clause selects, with
// their attachments.
func loadMessages(ctx context.Context, q querier, where string, args ...any) ([]store.Message, error) {
	rows, err := q.Query(ctx, `SELECT `+messageCols+` FROM messages `+where, args...)
	if err != nil {
		return nil, err
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.Message, error) { return scanMessage(r) })
	if err != nil || len(out) == 0 {
		return out, err
	}
	at := make(map[int64]int, len(out))
	lo, hi := out[0].ID, out[0].ID
	sessions := map[string]bool{}
	for i, m := range out {
		at[m.ID] = i
		lo, hi = min(lo, m.ID), max(hi, m.ID)
		sessions[m.SessionID] = true
	}
	// One session's messages (a transcript) find their attachments by the
	// session's index, over the range of their ids; others by id.
	var arows pgx.Rows
	if len(sessions) == 1 {
		arows, err = q.Query(ctx, `SELECT `+attachmentCols+` FROM attachments WHERE session_id = $1 AND message_id BETWEEN $2 AND $3
			ORDER BY message_id, ordinal`, out[0].SessionID, lo, hi)
	} else {
		ids := make([]int64, 0, len(out))
		for _, m := range out {
			ids = append(ids, m.ID)
		}
		arows, err = q.Query(ctx, `SELECT `+attachmentCols+` FROM attachments WHERE message_id = ANY($1) ORDER BY message_id, ordinal`, ids)
	}
	if err != nil {
		return nil, err
	}
	as, err := pgx.CollectRows(arows, func(r pgx.CollectableRow) (store.Attachment, error) { return scanAttachment(r) })
	if err != nil {
		return nil, err
	}
	for _, a := range as {
		if i, ok := at[a.MessageID]; ok { // the range may hold superseded ones
			out[i].Attachments = append(out[i].Attachments, a)
		}
	}
	return out, nil
}

// History loads every message ever stored for the session.
func (s *Store) History(ctx context.Context, sessionID string) ([]store.Message, error) {
	if !isText(sessionID) {
		return nil, fmt.Errorf("load history %s: %w", sessionID, store.ErrNotFound)
	}
	var out []store.Message
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		var exists bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM sessions WHERE id = $1)`, sessionID).Scan(&exists); err != nil {
			return err
		}
		if !exists {
			return store.ErrNotFound
		}
		var err error
		out, err = loadMessages(ctx, tx, `WHERE session_id = $1 ORDER BY seq`, sessionID)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("load history %s: %w", sessionID, notFound(err))
	}
	return out, nil
}

// ReplaceTranscript supersedes the live transcript with msgs atomically.
func (s *Store) ReplaceTranscript(ctx context.Context, sessionID string, msgs []store.Message) ([]store.Message, error) {
	if err := validate(msgs); err != nil {
		return nil, fmt.Errorf("replace transcript of session %s: %w", sessionID, err)
	}
	if !isText(sessionID) {
		return nil, fmt.Errorf("replace transcript of session %s: %w", sessionID, store.ErrNotFound)
	}
	var out []store.Message
	err := s.tx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE sessions SET message_count = 0, draft = '', generation = generation + 1 WHERE id = $1`, sessionID)
		if err := affected(tag, err, "session "+sessionID); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE messages SET superseded = true WHERE session_id = $1 AND NOT superseded`, sessionID); err != nil {
			return err
		}
		if len(msgs) == 0 {
			return nil
		}
		out, err = appendMessages(ctx, tx, sessionID, msgs)
		return err
	})
	if s.transcripts != nil {
		s.transcripts.Drop(sessionID)
	}
	if err != nil {
		return nil, fmt.Errorf("replace transcript of session %s: %w", sessionID, notFound(err))
	}
	return out, nil
}

// SetDraft keeps the partial answer of the session's model call.
func (s *Store) SetDraft(ctx context.Context, sessionID, text string) error {
	if !isText(sessionID) {
		return fmt.Errorf("keep the draft of session %s: %w", sessionID, store.ErrNotFound)
	}
	tag, err := s.pool.Exec(ctx, `UPDATE sessions SET draft = $1 WHERE id = $2`, []byte(text), sessionID)
	return affected(tag, notFound(err), "keep the draft of session "+sessionID)
}

// Draft is the session's kept partial answer.
func (s *Store) Draft(ctx context.Context, sessionID string) (string, error) {
	if !isText(sessionID) {
		return "", fmt.Errorf("load the draft of session %s: %w", sessionID, store.ErrNotFound)
	}
	var text []byte
	err := s.pool.QueryRow(ctx, `SELECT draft FROM sessions WHERE id = $1`, sessionID).Scan(&text)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", fmt.Errorf("load the draft of session %s: %w", sessionID, store.ErrNotFound)
	}
	if err != nil {
		return "", fmt.Errorf("load the draft of session %s: %w", sessionID, notFound(err))
	}
	return string(text), nil
}

// FindPlatformMessage finds a stored message by its platform message id.
func (s *Store) FindPlatformMessage(ctx context.Context, platform, platformMsgID string) (store.Message, error) {
	if !isText(platform, platformMsgID) {
		return store.Message{}, fmt.Errorf("message %s/%s: %w", platform, platformMsgID, store.ErrNotFound)
	}
	ms, err := loadMessages(ctx, s.pool, `WHERE platform = $1 AND platform_msg_id = $2 AND platform_msg_id <> '' ORDER BY id LIMIT 1`,
		platform, platformMsgID)
	if err == nil && len(ms) == 0 {
		err = store.ErrNotFound
	}
	if err != nil {
		return store.Message{}, fmt.Errorf("message %s/%s: %w", platform, platformMsgID, notFound(err))
	}
	return ms[0], nil
}

// querier is what reads run on: the pool or a transaction.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}
