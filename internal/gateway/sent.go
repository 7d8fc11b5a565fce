package gateway

import (
	"sync"

	"github.com/baton-agent/baton/internal/store"
)

// maxSentMarks bounds the addresses whose highest sent delivery is
// remembered (sentMarks.upTo). Past it, marks are dropped and the highest
// dropped one stands for every address without a mark: an answer stored
// below it is sent after reading the outbox, as when something unsent
// came before it. Delivery ids grow across addresses, so that is only
// ever too careful.
const maxSentMarks = 4096

// sentMarks is what this process knows it sent: the highest delivery id
// sent to each address (so a flush need not read the outbox for what it
// just stored), and the deliveries the service took whose record as sent
// the store has not taken yet (so no flush sends them again). It has its
// own lock.
type sentMarks struct {
	mu         sync.Mutex
	upTo       map[string]int64 // address key → the highest delivery id sent there
	floor      int64            // the highest mark dropped from upTo, standing for every address without one
	limit      int              // how many addresses upTo keeps
	unrecorded map[int64]string // delivery id → platform message id: sent, its record failed
}

func newSentMarks(limit int) *sentMarks {
	return &sentMarks{upTo: map[string]int64{}, limit: limit, unrecorded: map[int64]string{}}
}

// note records that delivery id to key is sent (or given up on) by this
// process. Called with key's send lock held, in id order: a flush sends an
// address's deliveries lowest id first and stops at the first it cannot
// send.
func (m *sentMarks) note(key string, id int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.upTo[key]; !ok {
		for k, v := range m.upTo {
			if len(m.upTo) < m.limit {
				break
			}
			m.floor = max(m.floor, v)
			delete(m.upTo, k)
		}
	}
	m.upTo[key] = max(m.upTo[key], id)
}

// unsent reports whether ds, just stored for key with nothing unsent
// before them, are all still unsent: stored unsent, and above everything
// this process sent to key. Another flush may have sent them meanwhile,
// lowest id first, so the mark says whether it did.
func (m *sentMarks) unsent(key string, ds []store.Delivery) bool {
	m.mu.Lock()
	upTo := max(m.upTo[key], m.floor)
	m.mu.Unlock()
	for i, d := range ds {
		if !d.SentAt.IsZero() || d.ID <= upTo || i > 0 && d.ID <= ds[i-1].ID {
			return false
		}
	}
	return true
}

// notRecorded remembers a delivery the service took, until recorded.
func (m *sentMarks) notRecorded(deliveryID int64, platformMsgID string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.unrecorded[deliveryID] = platformMsgID
}

// recorded forgets a delivery the store now records as sent.
func (m *sentMarks) recorded(deliveryID int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.unrecorded, deliveryID)
}

// before is the platform message id of a delivery sent by this run whose
// record as sent failed; ok is false for any other.
func (m *sentMarks) before(deliveryID int64) (platformMsgID string, ok bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	platformMsgID, ok = m.unrecorded[deliveryID]
	return platformMsgID, ok
}
