package sqlite

import (
	"context"
	"time"
)

// WithCacheLimit bounds the transcript cache at n messages, so tests can
// make it evict without writing hundreds of thousands of rows.
func WithCacheLimit(n int) Option { return func(s *Store) { s.transcripts = newTranscriptCache(n) } }

// CachedCount is how many messages the transcript cache holds for session
// id, and whether it holds it at all.
func CachedCount(s *Store, id string) (int, bool) {
	_, msgs, ok := s.transcripts.Get(id)
	return len(msgs), ok
}

// WaitPacks waits for the transcript packs being saved in the background.
func WaitPacks(s *Store) { s.bg.Wait() }

// DropPacks deletes every transcript pack, so the next load reads rows
// as the first load of a transcript does, and waits for the checkpoints
// of the writes that made and deleted them.
func DropPacks(s *Store) error {
	s.bg.Wait()
	if _, err := s.exec(context.Background(), `DELETE FROM transcript_packs`); err != nil {
		return err
	}
	for s.checkpoints != nil && !s.checkpoints.idle() {
		time.Sleep(time.Millisecond)
	}
	return nil
}

// WithoutBackgroundIndex leaves the full-text index to searches, so tests
// can see what a search indexes itself.
func WithoutBackgroundIndex() Option { return func(s *Store) { s.noIndexer = true } }

// SearchIndex does what a search does to the index before it queries.
func SearchIndex(ctx context.Context, s *Store) error { return s.searchIndex(ctx) }

// WithoutIdleCheckpoints leaves what a store stores in its write-ahead
// log until 1,000 pages are written, as SQLite alone would: tests that
// lose the log need something in it.
func WithoutIdleCheckpoints() Option { return func(s *Store) { s.noIdleCheckpoint = true } }
