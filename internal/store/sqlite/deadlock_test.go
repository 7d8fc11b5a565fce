package sqlite_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/store"
)

// A write transaction and a first-time statement on the writer must never
// wait for each other: the gateway's worker (renewing a lease, recording a
// destination) and a mailbox (enqueueing a reply) do exactly this at once.
// Each round uses a fresh store, so every plain statement is prepared for
// the first time while transactions run.
func TestTransactionsAndFirstStatementsDoNotDeadlock(t *testing.T) {
	for round := range 15 {
		s := openTemp(t)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second) // a hang guard
		sess, err := s.CreateSession(ctx, store.Session{})
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		errs := make(chan error, 64)
		for g := range 4 {
			wg.Add(2)
			go func() {
				defer wg.Done()
				for i := range 10 {
					_, err := s.EnqueueDeliveries(ctx, store.Delivery{Key: keyOf(round, g, i), AddressKey: "web:dm:main", Text: "x"})
					if err != nil {
						errs <- err
						return
					}
				}
			}()
			go func() {
				defer wg.Done()
				steps := []func() error{
					func() error { return s.SetHomeChannel(ctx, "web", "web:dm:main") },
					func() error { _, err := s.HomeChannels(ctx); return err },
					func() error { _, err := s.RenewHandoff(ctx, 1, "x", time.Second); return err },
					func() error { _, err := s.CompleteHandoff(ctx, 1, "x"); return err },
					func() error { return s.AddUsage(ctx, sess.ID, store.Usage{InputTokens: 1}) },
					func() error { return s.SetModel(ctx, sess.ID, "m") },
				}
				for _, step := range steps {
					if err := step(); err != nil {
						errs <- err
						return
					}
				}
			}()
		}
		wg.Wait()
		cancel()
		close(errs)
		for err := range errs {
			t.Fatalf("round %d: %v", round, err)
		}
	}
}

func keyOf(round, g, i int) string {
	return "k:" + string(rune('a'+round)) + ":" + string(rune('a'+g)) + ":" + string(rune('a'+i))
}
