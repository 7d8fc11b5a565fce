package sqlite

import (
	"slices"
	"sync"

	"github.com/baton-agent/baton/internal/store"
)

// defaultCacheMessages bounds the transcript cache: about 200 MB at the
// most for typical chat messages, far less in practice.
const defaultCacheMessages = 200_000

// transcriptVersion identifies a live transcript's contents. Messages are
// never edited in place: appends move nextSeq, replacements bump
// generation, and a deleted-then-recreated session has a new createdAt.
type transcriptVersion struct {
	createdAt  int64
	generation int64
	nextSeq    int64
}

type cachedTranscript struct {
	version transcriptVersion
	msgs    []store.Message
	used    uint64
}

// transcriptCache keeps recently loaded transcripts so that a turn in a
// long session reads only the rows added since the last turn. It is checked
// against the session row on every load, so writes by another process are
// always seen.
type transcriptCache struct {
	mu      sync.Mutex
	max     int
	total   int
	clock   uint64
	entries map[string]*cachedTranscript
}

func newTranscriptCache(maxMessages int) *transcriptCache {
	return &transcriptCache{max: maxMessages, entries: map[string]*cachedTranscript{}}
}

// get returns the cached transcript for id and its version, if any.
func (c *transcriptCache) get(id string) (transcriptVersion, []store.Message, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[id]
	if !ok {
		return transcriptVersion{}, nil, false
	}
	c.clock++
	e.used = c.clock
	return e.version, e.msgs, true
}

// put stores msgs (which the cache now owns) and evicts the least recently
// used transcripts beyond the bound.
func (c *transcriptCache) put(id string, v transcriptVersion, msgs []store.Message) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.entries[id]; ok {
		c.total -= len(old.msgs)
		delete(c.entries, id)
	}
	if len(msgs) > c.max {
		return
	}
	c.clock++
	c.entries[id] = &cachedTranscript{version: v, msgs: msgs, used: c.clock}
	c.total += len(msgs)
	for c.total > c.max {
		var oldest string
		var at uint64
		for k, e := range c.entries {
			if oldest == "" || e.used < at {
				oldest, at = k, e.used
			}
		}
		c.total -= len(c.entries[oldest].msgs)
		delete(c.entries, oldest)
	}
}

// extend adds msgs, just stored at the end of session id's live
// transcript, to its cached transcript if that ends where they begin, so
// the next load need not read them back. Anything else leaves the entry
// as it is: every load checks it against the session row anyway.
func (c *transcriptCache) extend(id string, msgs []store.Message) {
	if len(msgs) == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[id]
	if !ok || e.version.nextSeq != msgs[0].Seq {
		return
	}
	for i := 1; i < len(msgs); i++ {
		if msgs[i].Seq != msgs[i-1].Seq+1 {
			return
		}
	}
	// Appending in place is safe: a caller holding the old slice reads
	// only up to its own length.
	for _, m := range msgs {
		e.msgs = append(e.msgs, asLoaded(m))
	}
	e.version.nextSeq = msgs[len(msgs)-1].Seq + 1
	c.total += len(msgs)
	if c.total > c.max {
		c.total -= len(e.msgs)
		delete(c.entries, id)
	}
}

// asLoaded is m, as returned by an append, in the form a load returns it.
func asLoaded(m store.Message) store.Message {
	m.CreatedAt = fromNanos(toNanos(m.CreatedAt))
	if len(m.ToolCalls) == 0 {
		m.ToolCalls = nil
	} else {
		m.ToolCalls = slices.Clone(m.ToolCalls)
	}
	if len(m.Attachments) == 0 {
		m.Attachments = nil
	} else {
		m.Attachments = slices.Clone(m.Attachments)
	}
	return m
}

func (c *transcriptCache) drop(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.entries[id]; ok {
		c.total -= len(old.msgs)
		delete(c.entries, id)
	}
}

// clone gives callers their own slice; message fields are immutable
// strings, and ToolCalls is copied so a caller cannot reach the cache.
func clone(msgs []store.Message) []store.Message {
	out := slices.Clone(msgs)
	for i := range out {
		if out[i].ToolCalls != nil {
			out[i].ToolCalls = slices.Clone(out[i].ToolCalls)
		}
		if out[i].Attachments != nil {
			out[i].Attachments = slices.Clone(out[i].Attachments)
		}
	}
	return out
}
