package sqlite_test

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/store"
	"github.com/baton-agent/baton/internal/store/sqlite"
	"github.com/baton-agent/baton/internal/store/storetest"
)

// words are what every benchmark message is made of (storetest.Sentence).
var words = storetest.BenchWords

func sentence(i int) string { return storetest.Sentence(i) }

func BenchmarkAppendMessage(b *testing.B) {
	s := openTemp(b)
	defer s.Close()
	sess, _ := s.CreateSession(b.Context(), store.Session{})
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if _, err := s.AppendMessages(b.Context(), sess.ID, store.Message{Role: store.RoleUser, Content: sentence(i)}); err != nil {
			b.Fatal(err)
		}
	}
}

func seed(b *testing.B, s store.Store, n int) string { return seedAny(b, s, n) }

func seedAny(b testing.TB, s store.Store, n int) string { return storetest.Seed(b, s, n) }

// BenchmarkLoadTranscript20k loads a 20,000-message transcript: cold is a
// process that never read the session (no transcript cache), split
// between readers or on one, reading the packs an earlier load kept;
// first is the first load ever, which reads every row and keeps the packs
// (saved in the background, outside the timing); warm is a later turn in
// the same process after one new message.
func BenchmarkLoadTranscript20k(b *testing.B) {
	cold := func(name string, first bool, opts ...sqlite.Option) {
		b.Run(name, func(b *testing.B) {
			s, err := sqlite.Open(b.Context(), filepath.Join(b.TempDir(), sqlite.FileName), opts...)
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			sid := seed(b, s, 20000)
			for b.Loop() {
				if first {
					b.StopTimer()
					if err := sqlite.DropPacks(s); err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
				}
				tr, err := s.Transcript(b.Context(), sid)
				if err != nil || len(tr) != 20000 {
					b.Fatalf("%d rows, %v", len(tr), err)
				}
			}
		})
	}
	cold("cold", false, sqlite.WithoutTranscriptCache())
	// One reader only: the figure for a single CPU.
	cold("cold-sequential", false, sqlite.WithoutTranscriptCache(), sqlite.WithSequentialLoads())
	cold("first", true, sqlite.WithoutTranscriptCache())
	cold("first-sequential", true, sqlite.WithoutTranscriptCache(), sqlite.WithSequentialLoads())
	b.Run("warm", func(b *testing.B) {
		s := openTemp(b)
		defer s.Close()
		sid := seed(b, s, 20000)
		if _, err := s.Transcript(b.Context(), sid); err != nil {
			b.Fatal(err)
		}
		n := 20000
		for b.Loop() {
			b.StopTimer()
			if _, err := s.AppendMessages(b.Context(), sid, store.Message{Role: store.RoleUser, Content: "next turn"}); err != nil {
				b.Fatal(err)
			}
			n++
			b.StartTimer()
			tr, err := s.Transcript(b.Context(), sid)
			if err != nil || len(tr) != n {
				b.Fatalf("%d rows, %v", len(tr), err)
			}
		}
	})
}

func BenchmarkHandoffCycle(b *testing.B) {
	s := openTemp(b)
	defer s.Close()
	sess, _ := s.CreateSession(b.Context(), store.Session{})
	b.ResetTimer()
	for b.Loop() {
		h, err := s.RequestHandoff(b.Context(), sess.ID, "cli", "web")
		if err != nil {
			b.Fatal(err)
		}
		if _, ok, err := s.ClaimHandoff(b.Context(), h.ID, "gw", time.Minute); !ok || err != nil {
			b.Fatal(ok, err)
		}
		if ok, err := s.CompleteHandoff(b.Context(), h.ID, "gw"); !ok || err != nil {
			b.Fatal(ok, err)
		}
	}
}

func BenchmarkSearch20k(b *testing.B) {
	s := openTemp(b)
	defer s.Close()
	seed(b, s, 20000)
	b.ResetTimer()
	for b.Loop() {
		hits, err := s.Search(b.Context(), store.SearchQuery{Text: "kubernetes cluster"})
		if err != nil || len(hits) == 0 {
			b.Fatalf("%d hits, %v", len(hits), err)
		}
	}
}

// BenchmarkAddInbound stores one inbound event with a fresh platform id,
// as the gateway does before acknowledging each message.
func BenchmarkAddInbound(b *testing.B) {
	s := openTemp(b)
	defer s.Close()
	for i := 0; b.Loop(); i++ {
		_, isNew, err := s.AddInbound(b.Context(), store.Inbound{Platform: "telegram", PlatformMsgID: fmt.Sprint(i),
			AddressKey: "telegram:dm:1", SenderID: "1", Sender: "ada", Text: sentence(i)})
		if err != nil || !isNew {
			b.Fatal(isNew, err)
		}
	}
}

// BenchmarkDeliveryCycle enqueues one reply and marks it sent: the
// outbox's cost per message delivered.
func BenchmarkDeliveryCycle(b *testing.B) {
	s := openTemp(b)
	defer s.Close()
	for i := 0; b.Loop(); i++ {
		ds, err := s.EnqueueDeliveries(b.Context(), store.Delivery{Key: fmt.Sprintf("reply:%d:part:0", i),
			AddressKey: "telegram:dm:1", Text: sentence(i)})
		if err != nil {
			b.Fatal(err)
		}
		if err := s.MarkDelivered(b.Context(), ds[0].ID, fmt.Sprint(i)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStore runs the store operations every store is timed on, as
// the Postgres store's benchmark of the same name does.
func BenchmarkStore(b *testing.B) {
	storetest.Bench(b, func(b *testing.B) store.Store { return openTemp(b) })
}
