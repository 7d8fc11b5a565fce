package gateway

import (
	"fmt"
	"sync"
	"time"
)

// Rate is how many messages one person may send in a burst, and how
// quickly the allowance comes back.
type Rate struct {
	Burst int           // messages taken at once
	Every time.Duration // one more message allowed per Every
}

// DefaultRate takes bursts of 20 (a pasted list, a few quick lines) and
// 30 messages a minute after that: more than a person types, less than a
// runaway script or a leaked account can do harm with.
func DefaultRate() Rate { return Rate{Burst: 20, Every: 2 * time.Second} }

// senderRates is a token bucket per person.
type senderRates struct {
	mu      sync.Mutex
	buckets map[string]*bucket
}

type bucket struct {
	tokens float64
	at     time.Time
}

func newSenderRates() *senderRates { return &senderRates{buckets: map[string]*bucket{}} }

// take reports whether who may send one more message at now.
func (s *senderRates) take(who string, r Rate, now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.buckets[who]
	if !ok {
		b = &bucket{tokens: float64(r.Burst), at: now}
		s.buckets[who] = b
	}
	b.tokens = min(float64(r.Burst), b.tokens+float64(now.Sub(b.at))/float64(r.Every))
	b.at = now
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

// tooFast tells a person why their message was not taken.
func tooFast(r Rate) string {
	perMinute := int(time.Minute / r.Every)
	return fmt.Sprintf("⚠️ That message was not taken: you are writing faster than I take messages "+
		"(%d at once, then %d a minute). Wait a moment and send it again.", r.Burst, perMinute)
}
