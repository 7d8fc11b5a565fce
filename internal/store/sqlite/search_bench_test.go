package sqlite_test

import (
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/store"
)

// BenchmarkSearchAfter1M writes 1,000,000 messages (1,000 sessions of
// 1,000, in turns of 100), then times the first search and 200 more, each
// after another turn of 10 messages is stored, each for a word in 100 of
// the messages: a search must not wait for
// the full-text index to catch up with what was written. It takes a few
// minutes, so it runs only with BATON_BENCH_1M=1:
//
//	BATON_BENCH_1M=1 go test -run '^$' -bench SearchAfter1M -benchtime 1x ./internal/store/sqlite
//
// codes is how many distinct code words coded uses: each is in 100 of a
// million messages.
const codes = 10000

// coded is sentence(i) with a rarer word, "code" and a number.
func coded(i int) string { return fmt.Sprintf("%s (code%d)", sentence(i), i%codes) }

func BenchmarkSearchAfter1M(b *testing.B) {
	if os.Getenv("BATON_BENCH_1M") == "" {
		b.Skip("writes 1,000,000 messages; set BATON_BENCH_1M=1 to run it")
	}
	const sessions, perSession, turn = 1000, 1000, 100
	for b.Loop() {
		b.StopTimer()
		s := openTemp(b)
		ids := make([]string, sessions)
		for i := range ids {
			sess, err := s.CreateSession(b.Context(), store.Session{OwnerID: "u"})
			if err != nil {
				b.Fatal(err)
			}
			ids[i] = sess.ID
		}
		start := time.Now()
		batch := make([]store.Message, turn)
		for i := range sessions * perSession / turn {
			for j := range batch {
				batch[j] = store.Message{Role: store.RoleUser, Content: coded(i*turn + j)}
			}
			if _, err := s.AppendMessages(b.Context(), ids[i%sessions], batch...); err != nil {
				b.Fatal(err)
			}
		}
		written := time.Since(start)

		search := func(q string) time.Duration {
			t := time.Now()
			hits, err := s.Search(b.Context(), store.SearchQuery{Text: q})
			if err != nil || len(hits) == 0 {
				b.Fatalf("search %q: %d hits, %v", q, len(hits), err)
			}
			return time.Since(t)
		}
		b.StartTimer()
		first := search("code123")
		var took, rare, pair []time.Duration
		for i := range 200 {
			b.StopTimer()
			more := make([]store.Message, 10)
			for j := range more {
				more[j] = store.Message{Role: store.RoleAssistant, Content: coded(i*10 + j)}
			}
			if _, err := s.AppendMessages(b.Context(), ids[i%sessions], more...); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			// A word in 100 of the million messages, alone or with a
			// common one, as a person looks for one thing.
			q := fmt.Sprintf("code%d", i*37%codes)
			if i%2 == 1 {
				q += " " + words[i%len(words)]
			}
			d := search(q)
			took = append(took, d)
			if i%2 == 1 {
				pair = append(pair, d)
			} else {
				rare = append(rare, d)
			}
		}
		b.StopTimer()
		slices.Sort(took)
		slices.Sort(rare)
		slices.Sort(pair)
		ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
		b.ReportMetric(ms(first), "first-ms")
		b.ReportMetric(ms(took[len(took)/2]), "p50-ms")
		b.ReportMetric(ms(took[len(took)*99/100]), "p99-ms")
		b.ReportMetric(ms(took[len(took)-1]), "max-ms")
		b.ReportMetric(ms(rare[len(rare)*99/100]), "p99-one-word-ms")
		b.ReportMetric(ms(pair[len(pair)*99/100]), "p99-two-words-ms")
		b.ReportMetric(float64(sessions*perSession)/written.Seconds(), "written-msg/s")
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
		fmt.Fprintf(os.Stderr, "1M written in %v; first search %v\n", written.Round(time.Millisecond), first.Round(time.Millisecond))
		b.StartTimer()
	}
}
