package gateway

import (
	"context"
	"log/slog"
	"sync"

	"github.com/baton-agent/baton/internal/platform"
	"github.com/baton-agent/baton/internal/store"
)

// streamedReplies keeps which messages were streamed for an answer not yet
// in the outbox: in memory for this run, and in the store (platform
// state) as each is posted, so that a gateway stopped mid-stream edits
// them at its next start instead of posting the answer again below them.
// It has its own lock.
type streamedReplies struct {
	st  store.Store
	log *slog.Logger

	mu  sync.Mutex
	ids map[string][]string // answer's outbox key → the streamed messages its parts replace
}

func newStreamedReplies(st store.Store, log *slog.Logger) *streamedReplies {
	return &streamedReplies{st: st, log: log, ids: map[string][]string{}}
}

// note records the messages a stream posted for the answer that will be
// delivered under key: part i of it edits ids[i] instead of posting again.
func (r *streamedReplies) note(key string, ids []string) {
	if len(ids) == 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ids[key] = ids
}

// of is the messages streamed for the answer to be delivered under key,
// one per part; nil if none.
func (r *streamedReplies) of(key string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.ids[key]
}

// drop forgets, here, the messages streamed for the answer under key.
func (r *streamedReplies) drop(key string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.ids, key)
}

// streamedState is the platform memory key under which the message
// streamed for part i of the answer under key is recorded until the
// answer is in the outbox.
func streamedState(key string, i int) string { return "gateway.streamed:" + partKey(key, i) }

// record records, in the store, the message posted at addr for part i of
// the answer under key. A failure costs only the edit after a crash: the
// answer would then be posted anew.
func (r *streamedReplies) record(ctx context.Context, addr platform.Address, key string, i int, id string) {
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), storeTimeout)
	defer cancel()
	if err := r.st.SetPlatformState(wctx, addr.Platform, streamedState(key, i), id); err != nil {
		r.log.Warn("record a streamed message", "to", addr.Key(), "err", err)
	}
}

// before is what an earlier run recorded as streamed at addr for the
// answer under key and did not finish: the messages left half-written,
// one per part.
func (r *streamedReplies) before(ctx context.Context, addr platform.Address, key string) []string {
	var ids []string
	for i := 0; ; i++ {
		id, err := r.st.PlatformState(ctx, addr.Platform, streamedState(key, i))
		if err != nil {
			r.log.Warn("read the messages streamed before a restart", "to", addr.Key(), "err", err)
			return ids
		}
		if id == "" {
			return ids
		}
		ids = append(ids, id)
	}
}

// forget clears the records of the first n messages streamed for the
// answer under key: the outbox holds them now, or they stay as shown.
func (r *streamedReplies) forget(ctx context.Context, addr platform.Address, key string, n int) {
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), storeTimeout)
	defer cancel()
	for i := range n {
		if err := r.st.SetPlatformState(wctx, addr.Platform, streamedState(key, i), ""); err != nil {
			r.log.Warn("forget a streamed message", "to", addr.Key(), "err", err)
		}
	}
}
