package transcriptcache

import (
	"strings"
	"testing"

	"github.com/baton-agent/baton/internal/store"
)

func msgs(from, n int, text string) []store.Message {
	out := make([]store.Message, n)
	for i := range out {
		out[i] = store.Message{Seq: int64(from + i), Role: store.RoleUser, Content: text}
	}
	return out
}

func TestLeastRecentlyUsedGoFirstByBytes(t *testing.T) {
	one := msgs(1, 10, strings.Repeat("x", 1000))
	c := New(1000, transcriptBytes(one)*2+transcriptBytes(one)/2) // room for two
	c.Put("a", Version{NextSeq: 11}, msgs(1, 10, strings.Repeat("x", 1000)))
	c.Put("b", Version{NextSeq: 11}, msgs(1, 10, strings.Repeat("x", 1000)))
	c.Get("a") // b is now the least recently used
	c.Put("c", Version{NextSeq: 11}, msgs(1, 10, strings.Repeat("x", 1000)))
	for id, want := range map[string]bool{"a": true, "b": false, "c": true} {
		if _, _, ok := c.Get(id); ok != want {
			t.Errorf("%s cached: %v, want %v", id, ok, want)
		}
	}
	c.Put("huge", Version{}, msgs(1, 100, strings.Repeat("x", 1000)))
	if _, _, ok := c.Get("huge"); ok {
		t.Error("a transcript over the whole bound was kept")
	}
	if c.bytes > c.maxBytes || c.total > c.max {
		t.Errorf("cache holds %d bytes, %d messages; bounds %d, %d", c.bytes, c.total, c.maxBytes, c.max)
	}
}

func TestExtendOnlyWhereTheCachedTranscriptEnds(t *testing.T) {
	c := New(DefaultMessages, DefaultBytes)
	c.Put("s", Version{Born: 1, NextSeq: 4}, msgs(1, 3, "m"))
	c.Extend("s", msgs(5, 1, "after a gap"))
	if v, got, _ := c.Get("s"); v.NextSeq != 4 || len(got) != 3 {
		t.Fatalf("a gap extended the transcript: %+v, %d messages", v, len(got))
	}
	c.Extend("s", msgs(4, 2, "next"))
	v, got, _ := c.Get("s")
	if v.NextSeq != 6 || len(got) != 5 || got[4].Seq != 5 {
		t.Fatalf("extended: %+v, %d messages", v, len(got))
	}
	if !(Version{Born: 1, NextSeq: 6}).Extends(Version{Born: 1, NextSeq: 9}) ||
		(Version{Born: 1, NextSeq: 6}).Extends(Version{Born: 2, NextSeq: 9}) ||
		(Version{Born: 1, NextSeq: 6}).Extends(Version{Born: 1, Generation: 1, NextSeq: 9}) ||
		(Version{Born: 1, NextSeq: 6}).Extends(Version{Born: 1, NextSeq: 5}) {
		t.Error("Extends is wrong about making, generation or seqs")
	}
	mine := Clone(got)
	mine[0].Content = "changed"
	if _, got, _ := c.Get("s"); got[0].Content != "m" {
		t.Error("a clone's change reached the cache")
	}
}
