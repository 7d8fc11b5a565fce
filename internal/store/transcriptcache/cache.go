// Package transcriptcache keeps recently loaded live transcripts in a
// store's process, so that a turn in a long session reads only the rows
// added since the last one. A store checks the cached version against
// the session row at every load (a read of one row), so what other
// processes wrote is always seen: the cache saves rows, never a check.
package transcriptcache

import (
	"container/list"
	"slices"
	"sync"
	"time"
	"unsafe"

	"github.com/baton-agent/baton/internal/store"
)

// Bounds a store uses unless told otherwise, whichever is reached first.
// The bytes bound is what holds in a gateway with thousands of
// conversations: only the recently used transcripts stay, so memory does
// not grow with idle ones. 8 MiB keeps a long session (20,000 messages
// of a sentence each) whole.
const (
	DefaultMessages = 200_000
	DefaultBytes    = 8 << 20
)

// Version identifies a live transcript's contents. Messages are never
// edited in place: appends move NextSeq; replacing the transcript, or
// anything else that changes a live message, bumps Generation; and a
// session deleted and made again under its id has another Born.
type Version struct {
	Born       int64 // what tells one making of the session from another
	Generation int64
	NextSeq    int64
}

// Extends reports whether a transcript cached at v is the start of the
// one at now: the same making and generation, fewer or as many seqs, so
// that only the rows from v.NextSeq on need reading.
func (v Version) Extends(now Version) bool {
	return v.Born == now.Born && v.Generation == now.Generation && v.NextSeq <= now.NextSeq
}

type entry struct {
	id      string
	version Version
	msgs    []store.Message
	bytes   int
}

// Cache is a transcript cache bounded in messages and bytes; the least
// recently used transcripts go first. Safe for concurrent use.
type Cache struct {
	mu       sync.Mutex
	max      int // messages
	maxBytes int
	total    int
	bytes    int
	lru      list.List // of *entry, most recently used first
	entries  map[string]*list.Element
}

// New is a cache holding at most maxMessages messages and about maxBytes
// bytes of them.
func New(maxMessages, maxBytes int) *Cache {
	return &Cache{max: maxMessages, maxBytes: maxBytes, entries: map[string]*list.Element{}}
}

// Get is session id's cached transcript and its version. The messages
// are the cache's: read them, or Clone them for a caller.
func (c *Cache) Get(id string) (Version, []store.Message, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.entries[id]
	if !ok {
		return Version{}, nil, false
	}
	c.lru.MoveToFront(el)
	e := el.Value.(*entry)
	return e.version, e.msgs, true
}

// Put keeps msgs (which the cache now owns) as id's transcript at v.
func (c *Cache) Put(id string, v Version, msgs []store.Message) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.remove(id)
	size := transcriptBytes(msgs)
	if len(msgs) > c.max || size > c.maxBytes {
		return
	}
	c.entries[id] = c.lru.PushFront(&entry{id: id, version: v, msgs: msgs, bytes: size})
	c.total += len(msgs)
	c.bytes += size
	c.evict()
}

// Extend adds msgs, just stored at the end of id's live transcript and
// in the form a load returns them, to its cached transcript if that ends
// where they begin, so the next load need not read them back. Anything
// else leaves the entry as it is: every load checks it anyway.
func (c *Cache) Extend(id string, msgs []store.Message) {
	if len(msgs) == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.entries[id]
	if !ok {
		return
	}
	e := el.Value.(*entry)
	if e.version.NextSeq != msgs[0].Seq {
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
		e.msgs = append(e.msgs, m)
		e.bytes += referencedBytes(m)
	}
	e.bytes += cap(e.msgs) * messageSize
	c.bytes += e.bytes - before
	e.version.NextSeq = msgs[len(msgs)-1].Seq + 1
	c.total += len(msgs)
	c.lru.MoveToFront(el)
	if len(e.msgs) > c.max || e.bytes > c.maxBytes {
		c.remove(id)
	}
	c.evict()
}

// Drop forgets id's transcript.
func (c *Cache) Drop(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.remove(id)
}

// evict drops the least recently used transcripts until the cache is
// within its bounds.
func (c *Cache) evict() {
	for c.total > c.max || c.bytes > c.maxBytes {
		c.remove(c.lru.Back().Value.(*entry).id)
	}
}

func (c *Cache) remove(id string) {
	el, ok := c.entries[id]
	if !ok {
		return
	}
	e := c.lru.Remove(el).(*entry)
	delete(c.entries, id)
	c.total -= len(e.msgs)
	c.bytes -= e.bytes
}

// messageSize is what a message takes in a slice; its strings and slices
// point to more (referencedBytes).
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

// Clone gives a caller its own copy of cached messages: their strings
// are immutable, and their tool calls and attachments are copied so the
// caller cannot reach into the cache.
func Clone(msgs []store.Message) []store.Message {
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

// Loaded is m, as an append returns it, in the form a load returns it,
// for Extend: created is its time as the store reads it back, and empty
// tool calls and attachments are nil, others copied.
func Loaded(m store.Message, created time.Time) store.Message {
	m.CreatedAt = created
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
