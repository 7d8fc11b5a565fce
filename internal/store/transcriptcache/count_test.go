package transcriptcache

import (
	"fmt"
	"strings"
	"testing"

	"github.com/baton-agent/baton/internal/store"
)

// The cache's count of bytes is the sum of what its transcripts take,
// through puts, extends, replacements and drops, and never over its bound.
func TestTranscriptCacheCountsItsBytes(t *testing.T) {
	c := New(1_000_000, 64<<10)
	check := func(when string) {
		t.Helper()
		sum := 0
		for id, el := range c.entries {
			e := el.Value.(*entry)
			if e.id != id {
				t.Fatalf("%s: entry %s is listed under %s", when, e.id, id)
			}
			if got := transcriptBytes(e.msgs); e.bytes != got {
				t.Fatalf("%s: %s counted at %d bytes, takes %d", when, id, e.bytes, got)
			}
			sum += e.bytes
		}
		if c.bytes != sum || c.lru.Len() != len(c.entries) || c.bytes > c.maxBytes {
			t.Fatalf("%s: %d bytes counted, %d held, %d listed for %d entries, bound %d", when, c.bytes, sum, c.lru.Len(), len(c.entries), c.maxBytes)
		}
	}
	msg := func(seq int64, n int) store.Message {
		return store.Message{Seq: seq, Role: store.RoleUser, SessionID: "s", Content: strings.Repeat("x", n)}
	}
	for i := range 200 {
		id := fmt.Sprint("s", i%37)
		var msgs []store.Message
		for j := range i%5 + 1 {
			msgs = append(msgs, msg(int64(j+1), 100*(i%7)))
		}
		c.Put(id, Version{NextSeq: int64(len(msgs) + 1)}, msgs)
		check("put")
		for j := range i % 4 {
			c.Extend(id, []store.Message{msg(int64(len(msgs)+j+1), 300)})
			check("extend")
		}
		if i%11 == 0 {
			c.Drop(fmt.Sprint("s", (i*7)%37))
			check("drop")
		}
	}
	if len(c.entries) == 0 {
		t.Fatal("nothing cached")
	}
}
