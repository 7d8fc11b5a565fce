package sqlite

import (
	"container/list"
	"slices"
	"sync"
	"unsafe"

	"github.com/baton-agent/baton/internal/store"
)

// defaultCacheMessages and defaultCacheBytes bound the transcript cache,
// whichever is reached first. The bytes bound is what holds in a gateway
// with thousands of conversations: their transcripts stay in the store,
// and only the recently used ones stay here, so memory does not grow with
// conversations that are idle (a transcript evicted is read again, from
// its packs, at its next turn). 8 MiB keeps a long session (20,000
// messages of a sentence each, 6.6 MB) whole.
const (
	defaultCacheMessages = 200_000
	defaultCacheBytes    = 8 << 20
)

// transcriptVersion identifies a live transcript's contents. Messages are
// never edited in place: appends move nextSeq, replacements bump
// generation, and a deleted-then-recreated session has a new createdAt.
type transcriptVersion struct {
	createdAt  int64
	generation int64
	nextSeq    int64
}

type cachedTranscript struct {
	id      string
	version transcriptVersion
	msgs    []store.Message
	bytes   int
}

// transcriptCache keeps recently loaded transcripts so that a turn in a
// long session reads only the rows added since the last turn. It is checked
// against the session row on every load, so writes by another process are
// always seen. Least recently used transcripts go first.
type transcriptCache struct {
	mu       sync.Mutex
	max      int // messages
	maxBytes int
	total    int // messages
	bytes    int
	lru      list.List // of *cachedTranscript, most recently used first
	entries  map[string]*list.Element
}

func newTranscriptCache(maxMessages int) *transcriptCache {
	return newTranscriptCacheOf(maxMessages, defaultCacheBytes)
}

func newTranscriptCacheOf(maxMessages, maxBytes int) *transcriptCache {
	return &transcriptCache{max: maxMessages, maxBytes: maxBytes, entries: map[string]*list.Element{}}
}

// get returns the cached transcript for id and its version, if any.
func (c *transcriptCache) get(id string) (transcriptVersion, []store.Message, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.entries[id]
	if !ok {
		return transcriptVersion{}, nil, false
	}
	c.lru.MoveToFront(el)
	e := el.Value.(*cachedTranscript)
	return e.version, e.msgs, true
}

// put stores msgs (which the cache now owns) and evicts the least recently
// used transcripts beyond the bounds.
func (c *transcriptCache) put(id string, v transcriptVersion, msgs []store.Message) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.remove(id)
	size := transcriptBytes(msgs)
	if len(msgs) > c.max || size > c.maxBytes {
		return
	}
	c.entries[id] = c.lru.PushFront(&cachedTranscript{id: id, version: v, msgs: msgs, bytes: size})
	c.total += len(msgs)
	c.bytes += size
	c.evict()
}

// evict drops the least recently used transcripts until the cache is
// within its bounds.
func (c *transcriptCache) evict() {
	for c.total > c.max || c.bytes > c.maxBytes {
		c.remove(c.lru.Back().Value.(*cachedTranscript).id)
	}
}

// remove drops id's transcript, if cached.
func (c *transcriptCache) remove(id string) {
	el, ok := c.entries[id]
	if !ok {
		return
	}
	e := c.lru.Remove(el).(*cachedTranscript)
	delete(c.entries, id)
	c.total -= len(e.msgs)
	c.bytes -= e.bytes
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
	el, ok := c.entries[id]
	if !ok {
		return
	}
	e := el.Value.(*cachedTranscript)
	if e.version.nextSeq != msgs[0].Seq {
		return
	}
	for i := 1; i < len(msgs); i++ {
		if msgs[i].Seq != msgs[i-1].Seq+1 {
			return
		}
	}
	// Appending in place is safe: a caller holding the old slice reads
	// only up to its own length.
	before := e.bytes
	e.bytes -= cap(e.msgs) * messageSize
	for _, m := range msgs {
		m = asLoaded(m)
		e.msgs = append(e.msgs, m)
		e.bytes += referencedBytes(m)
	}
	e.bytes += cap(e.msgs) * messageSize
	c.bytes += e.bytes - before
	e.version.nextSeq = msgs[len(msgs)-1].Seq + 1
	c.total += len(msgs)
	c.lru.MoveToFront(el)
	if len(e.msgs) > c.max || e.bytes > c.maxBytes {
		c.remove(id)
	}
	c.evict()
}

// messageSize is what a message takes in a slice; its strings and
// slices point to more (referencedBytes).
const messageSize = int(unsafe.Sizeof(store.Message{}))

// referencedBytes is about what m's strings and slices hold beyond the
// message itself, each rounded up as the allocator rounds small objects.
func referencedBytes(m store.Message) int {
	n := allocated(len(m.SessionID)) + allocated(len(m.Role)) + allocated(len(m.Kind)) + allocated(len(m.Content)) +
		allocated(len(m.ToolCalls)) + allocated(len(m.ToolCallID)) + allocated(len(m.ToolName)) +
		allocated(len(m.Platform)) + allocated(len(m.PlatformMsgID)) + allocated(cap(m.Attachments)*int(unsafe.Sizeof(store.Attachment{})))
	for _, a := range m.Attachments {
		n += allocated(len(a.Name)) + allocated(len(a.MediaType)) + allocated(len(a.SHA256)) + allocated(len(a.Transcript))
	}
	return n
}

// allocated is about what the heap gives an object of n bytes.
func allocated(n int) int {
	if n == 0 {
		return 0
	}
	return (n + 15) &^ 15
}

// transcriptBytes is about what msgs, as cached, take in memory.
func transcriptBytes(msgs []store.Message) int {
	n := cap(msgs) * messageSize
	for _, m := range msgs {
		n += referencedBytes(m)
	}
	return n
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
	c.remove(id)
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
