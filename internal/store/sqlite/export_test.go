package sqlite

// WithCacheLimit bounds the transcript cache at n messages, so tests can
// make it evict without writing hundreds of thousands of rows.
func WithCacheLimit(n int) Option { return func(s *Store) { s.transcripts = newTranscriptCache(n) } }
