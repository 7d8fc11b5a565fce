package sqlite

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// The full-text index is kept current in the background. Indexing a
// message as it is stored (a trigger) cost every append an FTS5 segment of
// its own: about two and a half times the append. Indexing only when
// someone searched made the first search after a million appends wait
// 15 s for all of them. So each process indexes what it stores shortly
// after: once indexDelay has passed since the first message stored after
// the last run, on the writer connection, in steps of at most indexChunk
// messages (each a write of its own, so the writes queued meanwhile wait
// for one step at most). A search indexes synchronously only what the
// background has not reached yet, and only up to searchIndexRows (a few
// milliseconds); beyond that it answers from the index as it is and the
// background goes on. Messages a killed process left unindexed, or a
// store from an earlier baton held, are indexed by the next process to
// open the store.
//
// fts_state.indexed_upto is the mark: every message with an id at or
// below it is indexed, none above it (migration 1).
//
// Close indexes what is left only when it is little (closeIndexRows): a
// short-lived process (`baton -p`, `baton sessions list`) opening a store
// with a long backlog leaves it to the next, instead of taking seconds to
// exit.
const (
	indexDelay      = 50 * time.Millisecond
	indexChunk      = 2000
	searchIndexRows = 1000
	closeIndexRows  = 10 * indexChunk
)

// indexer is the background indexing of one store.
type indexer struct {
	wake chan struct{} // buffered: a wake while it runs is kept for after
	done chan struct{} // closed when it has stopped
}

// startIndexer starts the background indexing, with a run at once for
// what earlier processes left.
func (s *Store) startIndexer() {
	if s.noIndexer {
		return
	}
	s.index = &indexer{wake: make(chan struct{}, 1), done: make(chan struct{})}
	s.index.wake <- struct{}{}
	go func() {
		defer close(s.index.done)
		s.runIndexer()
	}()
}

// indexSoon tells the indexer that messages were stored.
func (s *Store) indexSoon() {
	if s.index == nil {
		return
	}
	select {
	case s.index.wake <- struct{}{}:
	default: // already due
	}
}

func (s *Store) runIndexer() {
	for {
		select {
		case <-s.closing:
			s.indexAll(closeIndexRows) // what this process stored last, so nobody waits for it
			return
		case <-s.index.wake:
		}
		select {
		case <-s.closing:
		case <-time.After(indexDelay): // more may come: index them together
		}
		s.indexAll(0)
	}
}

// indexAll indexes every message not indexed yet, one step at a time,
// until the store closes; with a limit, only if no more than limit are
// left.
func (s *Store) indexAll(limit int64) {
	for {
		more, err := s.indexStep(context.Background(), limit)
		if err != nil {
			if !errors.Is(err, errStoreClosed) && !errors.Is(err, errTooMany) {
				slog.Warn("index stored messages for search", "store", s.path, "err", err)
			}
			return
		}
		if !more {
			return
		}
		if limit == 0 {
			select {
			case <-s.closing:
				return // Close indexes what is left, if little
			default:
			}
		}
	}
}

// errTooMany is a step that found more left to index than its limit.
var errTooMany = errors.New("more messages to index than a search waits for")

// indexStep indexes up to indexChunk messages above the mark and moves
// it; more reports whether messages are left. With a limit, it indexes
// nothing (errTooMany) when more than limit are left. It reads the mark
// under the write lock, so two processes indexing at once never index a
// message twice.
func (s *Store) indexStep(ctx context.Context, limit int64) (more bool, err error) {
	err = s.tx(ctx, func(tx *wtx) error {
		var upto, last int64
		if err := tx.QueryRow(`SELECT indexed_upto, (SELECT COALESCE(MAX(id), 0) FROM messages) FROM fts_state`).Scan(&upto, &last); err != nil {
			return fmt.Errorf("read the index's mark: %w", err)
		}
		if last <= upto {
			return nil
		}
		if limit > 0 && last-upto > limit {
			return errTooMany
		}
		to := min(last, upto+indexChunk)
		if _, err := tx.Exec(`INSERT INTO messages_fts(rowid, content)
			SELECT id, content FROM messages WHERE id > ? AND id <= ?`, upto, to); err != nil {
			return fmt.Errorf("index messages: %w", err)
		}
		more = to < last
		_, err := tx.Exec(`UPDATE fts_state SET indexed_upto = ?`, to)
		return err
	})
	return more, err
}

// searchIndex brings the index up to date before a search when what is
// left to index is little; otherwise the search answers from the index as
// it is, and the background indexes the rest.
func (s *Store) searchIndex(ctx context.Context) error {
	var upto, last int64
	err := s.readRow(ctx, `SELECT indexed_upto, (SELECT COALESCE(MAX(id), 0) FROM messages) FROM fts_state`).Scan(&upto, &last)
	if err != nil {
		return fmt.Errorf("read the index's mark: %w", err)
	}
	switch {
	case last <= upto:
		return nil
	case last-upto > searchIndexRows:
		s.indexSoon()
		return nil
	}
	_, err = s.indexStep(ctx, searchIndexRows)
	if errors.Is(err, errTooMany) {
		s.indexSoon()
		return nil
	}
	return err
}
