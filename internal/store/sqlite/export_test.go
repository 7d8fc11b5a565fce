package sqlite

// WithCacheLimit bounds the transcript cache at n messages, so tests can
// make it evict without writing hundreds of thousands of rows.
func WithCacheLimit(n int) Option { return func(s *Store) { s.transcripts = newTranscriptCache(n) } }

// CachedCount is how many messages the transcript cache holds for session
// id, and whether it holds it at all.
func CachedCount(s *Store, id string) (int, bool) {
	_, msgs, ok := s.transcripts.get(id)
	return len(msgs), ok
}
