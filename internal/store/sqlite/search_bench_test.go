package sqlite_test

import (
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/store"
	"github.com/baton-agent/baton/internal/store/sqlite"
)

// codes is how many distinct code words coded uses: each is in 100 of a
// million messages.
const codes = 10000

// coded is sentence(i) with a rarer word, "code" and a number.
func coded(i int) string { return fmt.Sprintf("%s (code%d)", sentence(i), i%codes) }

// BenchmarkSearchAfter1M writes 1,000,000 messages (1,000 sessions of
// 1,000, in turns of 100), then times the first search and 200 more, each
// right after another turn of 10 messages is stored. Each search is timed
// in its two parts: the wait, for the full-text index to take in what was
// stored before it (SearchIndex, what Search does first), and the query.
// Each looks for a word in 100 of the messages, alone or with one of the
// 16 words every message is made of (each in about a third of them: a
// costly query for FTS5 whatever the index's state). It takes minutes,
// so it runs only with BATON_BENCH_1M=1:
//
//	BATON_BENCH_1M=1 go test -run '^$' -bench SearchAfter1M -benchtime 1x ./internal/store/sqlite
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

		// search times the wait for the index and the whole search.
		search := func(q string) (wait, whole time.Duration) {
			t := time.Now()
			if err := sqlite.SearchIndex(b.Context(), s); err != nil {
				b.Fatal(err)
			}
			wait = time.Since(t)
			hits, err := s.Search(b.Context(), store.SearchQuery{Text: q})
			if err != nil || len(hits) == 0 {
				b.Fatalf("search %q: %d hits, %v", q, len(hits), err)
			}
			return wait, time.Since(t)
		}
		b.StartTimer()
		firstWait, first := search("code123")
		var waits, whole, one, two []time.Duration
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
			q := fmt.Sprintf("code%d", i*37%codes)
			if i%2 == 1 {
				q += " " + words[i%len(words)]
			}
			w, d := search(q)
			waits, whole = append(waits, w), append(whole, d)
			if i%2 == 1 {
				two = append(two, d)
			} else {
				one = append(one, d)
			}
		}
		b.StopTimer()
		for _, l := range [][]time.Duration{waits, whole, one, two} {
			slices.Sort(l)
		}
		ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
		p99 := func(l []time.Duration) float64 { return ms(l[len(l)*99/100]) }
		b.ReportMetric(ms(firstWait), "first-wait-ms")
		b.ReportMetric(ms(first), "first-ms")
		b.ReportMetric(ms(waits[len(waits)/2]), "wait-p50-ms")
		b.ReportMetric(p99(waits), "wait-p99-ms")
		b.ReportMetric(ms(waits[len(waits)-1]), "wait-max-ms")
		b.ReportMetric(ms(whole[len(whole)/2]), "p50-ms")
		b.ReportMetric(p99(whole), "p99-ms")
		b.ReportMetric(p99(one), "one-word-p99-ms")
		b.ReportMetric(p99(two), "two-words-p99-ms")
		b.ReportMetric(float64(sessions*perSession)/written.Seconds(), "written-msg/s")
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
}
