package sqlite

import (
	"github.com/baton-agent/baton/internal/store"
	"github.com/baton-agent/baton/internal/store/transcriptcache"
)

// transcriptVersion identifies a live transcript's contents: Born is the
// session row's created_at, which a session deleted and made again under
// its id does not share.
type transcriptVersion = transcriptcache.Version

// newTranscriptCache is the store's transcript cache (one policy for
// every store: internal/store/transcriptcache), bounded in messages and
// in transcriptcache.DefaultBytes.
func newTranscriptCache(maxMessages int) *transcriptcache.Cache {
	return transcriptcache.New(maxMessages, transcriptcache.DefaultBytes)
}

// extendCache adds appended messages to a cached transcript, in the form
// a load would give them.
func (s *Store) extendCache(sessionID string, msgs []store.Message) {
	if s.transcripts == nil {
		return
	}
	loaded := make([]store.Message, len(msgs))
	for i, m := range msgs {
		loaded[i] = transcriptcache.Loaded(m, fromNanos(toNanos(m.CreatedAt)))
	}
	s.transcripts.Extend(sessionID, loaded)
}
