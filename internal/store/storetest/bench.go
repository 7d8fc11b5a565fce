package storetest

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/store"
)

// BenchFactory returns a new, empty store for a benchmark; Bench closes it.
type BenchFactory func(b *testing.B) store.Store

// Bench times the store operations a turn and the gateway make, the same
// on every store, so that their figures sit side by side
// (docs/BENCHMARKS.md).
func Bench(b *testing.B, newStore BenchFactory) {
	open := func(b *testing.B) store.Store {
		s := newStore(b)
		b.Cleanup(func() { s.Close() })
		return s
	}
	b.Run("AppendMessage", func(b *testing.B) {
		s := open(b)
		sess := must(s.CreateSession(b.Context(), store.Session{}))
		for i := 0; b.Loop(); i++ {
			if _, err := s.AppendMessages(b.Context(), sess.ID, store.Message{Role: store.RoleUser, Content: Sentence(i)}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("TurnStart1k", func(b *testing.B) {
		s := open(b)
		sid := Seed(b, s, 1000)
		for b.Loop() {
			ts, err := s.TurnStart(b.Context(), sid)
			if err != nil || len(ts.Transcript) != 1000 {
				b.Fatalf("%d rows, %v", len(ts.Transcript), err)
			}
		}
	})
	b.Run("Transcript20k", func(b *testing.B) {
		s := open(b)
		sid := Seed(b, s, 20000)
		for b.Loop() {
			tr, err := s.Transcript(b.Context(), sid)
			if err != nil || len(tr) != 20000 {
				b.Fatalf("%d rows, %v", len(tr), err)
			}
		}
	})
	b.Run("Search20k", func(b *testing.B) {
		s := open(b)
		Seed(b, s, 20000)
		for b.Loop() {
			hits, err := s.Search(b.Context(), store.SearchQuery{Text: "kubernetes cluster"})
			if err != nil || len(hits) == 0 {
				b.Fatalf("%d hits, %v", len(hits), err)
			}
		}
	})
	b.Run("HandoffCycle", func(b *testing.B) {
		s := open(b)
		sess := must(s.CreateSession(b.Context(), store.Session{}))
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
	})
	b.Run("TurnLease", func(b *testing.B) {
		// What marking a turn costs where turns are leases
		// (agent.StoreTurns): take the session's lease, let it go.
		s := open(b)
		r, ok := s.(store.Replicas)
		if !ok {
			b.Skip("the store has no leases")
		}
		for b.Loop() {
			if _, err := r.TakeLease(b.Context(), "turn:s", "host/1/token", 15*time.Second); err != nil {
				b.Fatal(err)
			}
			if err := r.ReleaseLease(b.Context(), "turn:s", "host/1/token"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("AddInbound", func(b *testing.B) {
		s := open(b)
		for i := 0; b.Loop(); i++ {
			_, isNew, err := s.AddInbound(b.Context(), store.Inbound{Platform: "telegram", PlatformMsgID: fmt.Sprint(i),
				AddressKey: "telegram:dm:1", SenderID: "1", Sender: "ada", Text: Sentence(i)})
			if err != nil || !isNew {
				b.Fatal(isNew, err)
			}
		}
	})
	b.Run("DeliveryCycle", func(b *testing.B) {
		s := open(b)
		for i := 0; b.Loop(); i++ {
			ds, err := s.EnqueueDeliveries(b.Context(), store.Delivery{Key: fmt.Sprintf("reply:%d:part:0", i),
				AddressKey: "telegram:dm:1", Text: Sentence(i)})
			if err != nil {
				b.Fatal(err)
			}
			if err := s.MarkDelivered(b.Context(), ds[0].ID, fmt.Sprint(i)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("PutOpenFile1MiB", func(b *testing.B) {
		s := open(b)
		data := bytes.Repeat([]byte("0123456789abcdef"), 1<<16)
		b.SetBytes(int64(len(data)))
		for i := 0; b.Loop(); i++ {
			copy(data, fmt.Sprintf("%016d", i)) // new bytes each time: a new file
			a, err := s.PutFile(b.Context(), bytes.NewReader(data), "f.bin")
			if err != nil {
				b.Fatal(err)
			}
			f, err := s.OpenFile(b.Context(), a.SHA256)
			if err != nil {
				b.Fatal(err)
			}
			f.Close()
		}
	})
}

// BenchWords are the words benchmark messages are made of.
var BenchWords = []string{"deploy", "kubernetes", "cluster", "coffee", "report", "budget", "agent", "terminal",
	"telegram", "message", "search", "handoff", "session", "weather", "python", "golang"}

// Sentence makes varied, realistic-length message text.
func Sentence(i int) string {
	w := BenchWords
	return fmt.Sprintf("message %d about %s and %s, then %s with the %s before %s", i,
		w[i%len(w)], w[(i/3)%len(w)], w[(i/7)%len(w)], w[(i/11)%len(w)], w[(i/13)%len(w)])
}

// Seed makes a session of n messages (user and assistant in turn) and
// returns its id.
func Seed(b testing.TB, s store.Store, n int) string {
	b.Helper()
	sess, err := s.CreateSession(b.Context(), store.Session{})
	if err != nil {
		b.Fatal(err)
	}
	batch := make([]store.Message, 0, 500)
	for i := range n {
		role := store.RoleUser
		if i%2 == 1 {
			role = store.RoleAssistant
		}
		batch = append(batch, store.Message{Role: role, Content: Sentence(i)})
		if len(batch) == cap(batch) || i == n-1 {
			if _, err := s.AppendMessages(b.Context(), sess.ID, batch...); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	return sess.ID
}
