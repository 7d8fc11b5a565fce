package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/baton-agent/baton/internal/store"
)

// Loading a long transcript row by row is dominated by per-column costs:
// every sqlite3_column_* call takes the connection's mutex, and every value
// becomes a Go allocation. loadLive instead asks SQLite for a few long
// strings per chunk of rows (group_concat of each field) and cuts the
// messages out of them in Go: twice as fast on one connection for a
// 20,000-row transcript, with a few allocations per chunk instead of 13
// per row. Message strings share their chunk's memory.
//
// Content may hold any bytes, so it is cut by length. Each metadata field
// is a list of its own, joined with the ASCII unit separator: group_concat
// appends to one growing buffer, where joining a row's fields first
// (with || or concat_ws) would cost SQLite an allocation per join and row.
// AppendMessages refuses that byte, and the record separator, in metadata.
// The parse checks every count and that seq increases, and falls back to
// the row by row query if anything is off (rows written before that rule,
// or a SQLite that would not keep scan order in group_concat or dropped
// the separator next to an empty value), so a wrong answer is never
// returned.

const (
	unitSep   = "\x1f"
	recordSep = "\x1e"
)

// liveChunk is how many seq numbers one packed query covers: enough to
// make per-query costs vanish, small enough that 1 MB bodies stay far
// below SQLite's 1 GB string limit in most sessions (beyond it, the chunk
// is read row by row).
const liveChunk = 512

// Chunks start at seq 1 and every liveChunk seqs after it (a session's
// first message has seq 1), so that a session's first 512 messages are
// a whole chunk. chunkStart is the start of the chunk holding seq (1 for
// any seq below 1, which no message has); the next chunk starts
// liveChunk later.
func chunkStart(seq int64) int64 {
	if seq < 1 {
		return 1
	}
	return (seq-1)/liveChunk*liveChunk + 1
}

// chunkEnd is where the chunk holding seq ends (the next one starts).
func chunkEnd(seq int64) int64 {
	if seq < 1 {
		return 1
	}
	return chunkStart(seq) + liveChunk
}

const packedLiveSQL = `SELECT count(*),
	ifnull(group_concat(id), ''), ifnull(group_concat(seq), ''), ifnull(group_concat(created_at), ''),
	ifnull(group_concat(octet_length(content)), ''), ifnull(group_concat(content, ''), ''),
	ifnull(group_concat(role, '` + unitSep + `'), ''), ifnull(group_concat(kind, '` + unitSep + `'), ''),
	ifnull(group_concat(ifnull(tool_calls, ''), '` + unitSep + `'), ''), ifnull(group_concat(tool_call_id, '` + unitSep + `'), ''),
	ifnull(group_concat(tool_name, '` + unitSep + `'), ''), ifnull(group_concat(platform, '` + unitSep + `'), ''),
	ifnull(group_concat(platform_msg_id, '` + unitSep + `'), '')
	FROM messages WHERE session_id = ? AND seq >= ? AND seq < ? AND superseded = 0`

const liveRowsSQL = `SELECT ` + messageCols + ` FROM messages
	WHERE session_id = ? AND seq >= ? AND seq < ? AND superseded = 0 ORDER BY seq`

// The metadata lists of packedLiveSQL, in order.
const (
	metaRole = iota
	metaKind
	metaToolCalls
	metaToolCallID
	metaToolName
	metaPlatform
	metaPlatformMsgID
	metaFields
)

// errUnpack means a packed chunk could not be trusted; it is read again
// row by row.
var errUnpack = errors.New("packed transcript chunk does not parse")

// A long range is split between the caller's transaction and up to
// maxHelpers more readers, one per spare CPU: SQLite spends most of a cold
// load stepping through rows, and each connection steps on its own.
const (
	maxHelpers = 3
	minPart    = 2 * liveChunk // seqs; a smaller part is not worth a reader
)

// testHookBeforeHelper, when set by a test, runs before a helper takes its
// snapshot: a test writes there to make the snapshots differ.
var testHookBeforeHelper func()

// errStale means a helper's snapshot shows another version of the
// transcript than the caller's; the caller reads that part itself.
var errStale = errors.New("transcript changed between snapshots")

// loadRange appends the live messages with from <= seq < v.NextSeq to out,
// as seen in tx's snapshot.
//
// Live seqs are dense (see migration 3), so the part with seqs [lo, hi)
// holds exactly hi-lo messages and each reader fills its own stretch of
// out in place. Should a part hold any other count, the whole range is
// read again in one pass: correct whatever the rows are.
func (s *Store) loadRange(ctx context.Context, tx snapshot, sessionID string, v transcriptVersion, from int64, out []store.Message, made *packs) ([]store.Message, error) {
	total := v.NextSeq - from
	parts := int(min(int64(runtime.GOMAXPROCS(0)), maxHelpers+1, total/minPart))
	if parts < 2 || s.helpers == nil {
		return loadLive(ctx, tx, sessionID, from, v.NextSeq, out, made)
	}
	base := len(out)
	out = slices.Grow(out, int(total))[:base+int(total)]
	// Parts meet where chunks start, so that no chunk is split
	// between readers and each whole one can be read from, or kept as,
	// its pack.
	size := (total + int64(parts) - 1) / int64(parts)
	edge := func(i int) int64 {
		switch i {
		case 0:
			return from
		case parts:
			return v.NextSeq
		}
		return chunkStart(from + int64(i)*size)
	}
	bounds := func(i int) (lo, hi int64, region []store.Message) {
		lo, hi = edge(i), edge(i+1)
		off := base + int(lo-from)
		return lo, hi, out[off : off : off+int(hi-lo)]
	}
	// filled reports whether got is exactly region, written in place.
	filled := func(got, region []store.Message) bool {
		return len(got) == cap(region) && (len(got) == 0 || &got[0] == &region[:1][0])
	}
	errs := make([]error, parts)
	ok := make([]bool, parts)
	var wg sync.WaitGroup
	for i := 1; i < parts; i++ {
		lo, hi, region := bounds(i)
		wg.Go(func() {
			var got []store.Message
			got, errs[i] = s.helperLoad(ctx, sessionID, v, lo, hi, region, made)
			ok[i] = errs[i] == nil && filled(got, region)
		})
	}
	lo, hi, region := bounds(0)
	got, err := loadLive(ctx, tx, sessionID, lo, hi, region, made)
	wg.Wait()
	if err != nil {
		return nil, err
	}
	complete := filled(got, region)
	for i := 1; i < parts && complete; i++ {
		switch {
		case errors.Is(errs[i], errStale):
			lo, hi, region := bounds(i)
			if got, err = loadLive(ctx, tx, sessionID, lo, hi, region, made); err != nil {
				return nil, err
			}
			complete = filled(got, region)
		case errs[i] != nil:
			return nil, errs[i]
		default:
			complete = ok[i]
		}
	}
	if !complete {
		return loadLive(ctx, tx, sessionID, from, v.NextSeq, out[:base], made)
	}
	return out, nil
}

// helperLoad reads [lo, hi) in its own snapshot, after checking that the
// snapshot holds the same transcript version: rows below nextSeq never
// change while createdAt and generation stay the same.
func (s *Store) helperLoad(ctx context.Context, sessionID string, v transcriptVersion, lo, hi int64, dst []store.Message, made *packs) ([]store.Message, error) {
	if testHookBeforeHelper != nil {
		testHookBeforeHelper()
	}
	tx, err := s.beginRead(ctx, true)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	version, err := tx.stmt(ctx, transcriptVersionSQL)
	if err != nil {
		return nil, err
	}
	defer version.Close()
	var got transcriptVersion
	var n, liveFrom int64
	err = version.QueryRowContext(ctx, sessionID).Scan(&got.Born, &got.Generation, &got.NextSeq, &n, &liveFrom)
	if errors.Is(err, sql.ErrNoRows) || err == nil && (got.Born != v.Born || got.Generation != v.Generation || got.NextSeq < v.NextSeq) {
		return nil, errStale
	}
	if err != nil {
		return nil, err
	}
	return loadLive(ctx, tx, sessionID, lo, hi, dst, made)
}

// loadLive appends the live messages with from <= seq < until to out, in
// seq order, reading in the snapshot of tx. It walks the chunks
// (chunkStart): a whole chunk is read from its pack when there
// is one, and otherwise with the packed query, its result added to made
// to be kept as the chunk's pack.
func loadLive(ctx context.Context, tx snapshot, sessionID string, from, until int64, out []store.Message, made *packs) ([]store.Message, error) {
	if from >= until {
		return out, nil
	}
	packed, err := tx.stmt(ctx, packedLiveSQL)
	if err != nil {
		return nil, err
	}
	defer packed.Close()
	var stored *sql.Stmt // the packs' statement, prepared at the first whole chunk
	defer func() {
		if stored != nil {
			stored.Close()
		}
	}()
	for lo := from; lo < until; {
		hi := min(until, chunkEnd(lo))
		whole := hi-lo == liveChunk
		if whole {
			if stored == nil {
				if stored, err = tx.stmt(ctx, packSQL); err != nil {
					return nil, err
				}
			}
			var p pack
			err := stored.QueryRowContext(ctx, sessionID, lo).Scan(p.dest()...)
			if err == nil {
				if more, ok := p.unpackWhole(out, sessionID, lo); ok {
					out, lo = more, hi
					continue
				}
			} else if !errors.Is(err, sql.ErrNoRows) {
				return nil, err
			}
		}
		p := pack{first: lo}
		err := packed.QueryRowContext(ctx, sessionID, lo, hi).Scan(p.dest()...)
		if err == nil {
			var more []store.Message
			if more, err = p.unpack(out, sessionID); err == nil {
				if whole && p.holds(more[len(out):], lo) {
					made.add(p)
				}
				out, lo = more, hi
				continue
			}
		}
		if !errors.Is(err, errUnpack) && !isTooBig(err) {
			return nil, err
		}
		if out, err = loadLiveRows(ctx, tx, sessionID, lo, hi, out); err != nil {
			return nil, err
		}
		lo = hi
	}
	return out, nil
}

// loadLiveRows is the plain query, for chunks the packed one cannot serve.
func loadLiveRows(ctx context.Context, tx snapshot, sessionID string, from, until int64, out []store.Message) ([]store.Message, error) {
	rows, err := tx.QueryContext(ctx, liveRowsSQL, sessionID, from, until)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		m, err := scanMessage(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, rows.Err()
}

// A pack is one chunk as the packed query returns it, kept in
// transcript_packs.
type pack struct {
	first                          int64
	n                              int
	ids, seqs, created, lens, body string
	meta                           [metaFields]string
}

// packSQL reads a chunk's pack, its columns in packedLiveSQL's order.
const packSQL = `SELECT n, ids, seqs, created, lens, content, roles, kinds, tool_calls, tool_call_ids,
	tool_names, platforms, platform_msg_ids FROM transcript_packs WHERE session_id = ? AND first_seq = ?`

// savePackSQL keeps a pack while its chunk is still live in the version of
// the session it was read from: a transcript replaced since, or a session
// deleted and made again under the same id, has no use for it.
const savePackSQL = `INSERT OR REPLACE INTO transcript_packs (session_id, first_seq, n, ids, seqs, created, lens,
	content, roles, kinds, tool_calls, tool_call_ids, tool_names, platforms, platform_msg_ids)
	SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15
	FROM sessions WHERE id = ?1 AND live_from <= ?2 AND next_seq >= ?2 + ?16 AND created_at = ?17`

// dest is what Scan fills, in packSQL's (and packedLiveSQL's) order.
func (p *pack) dest() []any {
	d := make([]any, 0, 6+metaFields)
	d = append(d, &p.n, &p.ids, &p.seqs, &p.created, &p.lens, &p.body)
	for j := range p.meta {
		d = append(d, &p.meta[j])
	}
	return d
}

func (p *pack) unpack(dst []store.Message, sessionID string) ([]store.Message, error) {
	return unpack(dst, sessionID, p.n, p.ids, p.seqs, p.created, p.lens, p.body, p.meta)
}

// holds reports whether msgs are the whole chunk starting at first: as
// many as a chunk holds, seqs increasing (unpack checks) from first to
// its last.
func (p *pack) holds(msgs []store.Message, first int64) bool {
	return len(msgs) == liveChunk && msgs[0].Seq == first && msgs[len(msgs)-1].Seq == first+liveChunk-1
}

// unpackWhole appends a stored pack's messages to dst, if it is whole
// and parses; a pack that is not is read again from the rows and saved
// anew.
func (p *pack) unpackWhole(dst []store.Message, sessionID string, first int64) ([]store.Message, bool) {
	if p.n != liveChunk {
		return dst, false
	}
	more, err := p.unpack(dst, sessionID)
	if err != nil || !p.holds(more[len(dst):], first) {
		return dst, false
	}
	return more, true
}

// packs collects the packs a load made, from every reader it used.
type packs struct {
	mu   sync.Mutex
	list []pack
}

func (ps *packs) add(p pack) {
	ps.mu.Lock()
	ps.list = append(ps.list, p)
	ps.mu.Unlock()
}

// savePacks keeps the packs a load made, in the background: the load has
// its messages already, and a pack is only a quicker way to them, so a
// pack that cannot be saved (the store closing, the disk full) is left
// for the next load to make again.
func (s *Store) savePacks(sessionID string, v transcriptVersion, ps *packs) {
	if len(ps.list) == 0 {
		return
	}
	s.bgMu.Lock()
	defer s.bgMu.Unlock()
	if s.bgClosed {
		return
	}
	s.bg.Go(func() {
		_ = s.tx(context.Background(), func(tx *wtx) error {
			for _, p := range ps.list {
				args := []any{sessionID, p.first, p.n, p.ids, p.seqs, p.created, p.lens, p.body}
				for _, m := range p.meta {
					args = append(args, m)
				}
				args = append(args, liveChunk, v.Born)
				if _, err := tx.Exec(savePackSQL, args...); err != nil {
					return err
				}
			}
			return nil
		})
	})
}

// unpack cuts n messages out of one packed chunk and appends them to dst.
// On error dst is unchanged in length (its spare capacity may be written).
func unpack(dst []store.Message, sessionID string, n int, ids, seqs, createds, lens, content string, meta [metaFields]string) ([]store.Message, error) {
	if n == 0 {
		return dst, nil
	}
	grown := slices.Grow(dst, n)
	out := grown[len(dst) : len(dst)+n]
	prevSeq := int64(-1 << 63)
	for i := range out {
		last := i == n-1
		var id, seq, created, size int64
		var ok bool
		if id, ids, ok = nextInt(ids, last); !ok {
			return nil, errUnpack
		}
		if seq, seqs, ok = nextInt(seqs, last); !ok || seq <= prevSeq {
			return nil, errUnpack
		}
		prevSeq = seq
		if created, createds, ok = nextInt(createds, last); !ok {
			return nil, errUnpack
		}
		if size, lens, ok = nextInt(lens, last); !ok || size < 0 || size > int64(len(content)) {
			return nil, errUnpack
		}
		var body string
		body, content = content[:size], content[size:]
		var f [metaFields]string
		for j := range meta {
			if f[j], meta[j], ok = nextField(meta[j], last); !ok {
				return nil, errUnpack
			}
		}
		var toolCalls []byte
		if f[metaToolCalls] != "" {
			toolCalls = []byte(f[metaToolCalls])
		}
		// Every field is written: out may be spare capacity that an earlier,
		// failed unpack scribbled on.
		out[i] = store.Message{ID: id, SessionID: sessionID, Seq: seq, Role: internRole(f[metaRole]),
			Kind: internKind(f[metaKind]), Content: body, ToolCalls: toolCalls, ToolCallID: f[metaToolCallID],
			ToolName: f[metaToolName], Platform: f[metaPlatform], PlatformMsgID: f[metaPlatformMsgID],
			CreatedAt: fromNanos(created)}
	}
	if ids != "" || seqs != "" || createds != "" || lens != "" || content != "" || meta != [metaFields]string{} {
		return nil, errUnpack
	}
	return grown[:len(dst)+n], nil
}

// nextField cuts one value from the front of a metadata list. The last
// value has no separator after it, and none in it: a separator too many
// anywhere in the list (a value holding one) shows up there.
func nextField(list string, last bool) (string, string, bool) {
	if last {
		return list, "", !strings.Contains(list, unitSep)
	}
	return strings.Cut(list, unitSep)
}

// nextInt reads one decimal from the front of a comma-separated list; the
// last one has no comma after it. It is strconv.ParseInt without the
// error values, which cost more than the parsing here.
func nextInt(list string, last bool) (int64, string, bool) {
	i, neg := 0, false
	if i < len(list) && list[i] == '-' {
		i, neg = 1, true
	}
	start := i
	var v uint64
	for ; i < len(list) && list[i] >= '0' && list[i] <= '9'; i++ {
		if i-start >= 19 { // more digits than an int64 holds
			return 0, "", false
		}
		v = v*10 + uint64(list[i]-'0')
	}
	if i == start || v > 1<<63 || !neg && v == 1<<63 {
		return 0, "", false
	}
	if last {
		if i != len(list) {
			return 0, "", false
		}
	} else {
		if i == len(list) || list[i] != ',' {
			return 0, "", false
		}
		i++
	}
	if neg {
		return -int64(v), list[i:], true
	}
	return int64(v), list[i:], true
}

// internRole returns the constant for the common roles, so that a loaded
// transcript does not keep each chunk alive just for its role strings.
func internRole(r string) store.Role {
	switch store.Role(r) {
	case store.RoleUser:
		return store.RoleUser
	case store.RoleAssistant:
		return store.RoleAssistant
	case store.RoleTool:
		return store.RoleTool
	case store.RoleSystem:
		return store.RoleSystem
	}
	return store.Role(strings.Clone(r))
}

// internKind is internRole for kinds: most messages have none, and the
// few that do should not keep their chunk alive either.
func internKind(k string) store.MessageKind {
	switch store.MessageKind(k) {
	case "":
		return ""
	case store.KindHandoff:
		return store.KindHandoff
	case store.KindSummary:
		return store.KindSummary
	case store.KindNotice:
		return store.KindNotice
	}
	return store.MessageKind(strings.Clone(k))
}

// checkSeparators refuses the byte that separates packed metadata, and the
// record separator, kept free alike so the packing can use it without
// sending rows to the slow path.
func checkSeparators(i int, m store.Message) error {
	for _, f := range [...]struct{ name, v string }{{"role", string(m.Role)}, {"kind", string(m.Kind)}, {"tool call id", m.ToolCallID},
		{"tool name", m.ToolName}, {"platform", m.Platform}, {"platform message id", m.PlatformMsgID}} {
		if strings.ContainsAny(f.v, unitSep+recordSep) {
			return fmt.Errorf("message %d: %s contains a control character (0x1e or 0x1f): %w", i, f.name, store.ErrInvalid)
		}
	}
	if bytes.ContainsAny(m.ToolCalls, unitSep+recordSep) {
		return fmt.Errorf("message %d: tool calls contain a raw control character (0x1e or 0x1f): %w", i, store.ErrInvalid)
	}
	return nil
}
