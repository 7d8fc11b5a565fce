package gateway

import (
	"context"
	"encoding/json"
	"log/slog"

	"github.com/baton-agent/baton/internal/gateway/control"
	"github.com/baton-agent/baton/internal/platform"
	"github.com/baton-agent/baton/internal/store"
)

// mirror shows, on the web chat pages connected to this replica, what
// another replica sent to its own pages (platform.Mirror): a page
// connects to one replica, and a reply goes out through the replica
// that answered, so without it a person's second tab, or a page on a
// replica that stalled while another took its message over, would not
// see the answer until it read the conversation again. Sends are told
// over the store's signals; nil when alone or without them.
type mirror struct {
	st     store.Store
	sig    store.Signals
	me     string
	places *platforms
	log    *slog.Logger
}

func newMirror(cfg Config, places *platforms) *mirror {
	sig, ok := control.SignalsOf(cfg.Store)
	if !cfg.Shared || !ok {
		return nil
	}
	return &mirror{st: cfg.Store, sig: sig, me: cfg.Claimer, places: places, log: cfg.Log}
}

// mirrored reports whether d, sent at addr, is shown by the other
// replicas too: a plain message (not an approval question, which only
// the replica running its turn can take an answer to) with a key, to a
// platform that mirrors.
func (m *mirror) mirrored(addr platform.Address, d store.Delivery) bool {
	if m == nil || d.Key == "" || len(d.Attachments) > 0 {
		return false
	}
	switch d.Kind {
	case store.DeliveryApproval, store.DeliveryApprovalExpired:
		return false
	}
	a, ok := m.places.adapter(addr.Platform)
	if !ok {
		return false
	}
	_, ok = a.(platform.Mirror)
	return ok
}

// sent tells the other replicas that d was sent here, when they show it
// too. A signal lost costs only the live view: the page shows the
// answer when it next reads the conversation.
func (m *mirror) sent(ctx context.Context, addr platform.Address, d store.Delivery) {
	if !m.mirrored(addr, d) {
		return
	}
	b, _ := json.Marshal(control.Sent{Replica: m.me, Key: d.Key})
	if len(b) > store.MaxSignalPayload {
		return
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), storeTimeout)
	defer cancel()
	if err := m.sig.Notify(sctx, control.TopicSent, string(b)); err != nil {
		m.log.Debug("tell the other replicas of a sent message", "to", addr.Key(), "err", err)
	}
}

// run shows what the other replicas send, until ctx ends.
func (m *mirror) run(ctx context.Context) {
	if m == nil {
		return
	}
	ch, err := m.sig.Listen(ctx, control.TopicSent)
	if err != nil {
		m.log.Warn("cannot hear what other replicas send; pages here show it when they next read a conversation", "err", err)
		return
	}
	for s := range ch {
		var sent control.Sent
		if s.Missed || json.Unmarshal([]byte(s.Payload), &sent) != nil || sent.Replica == m.me {
			continue
		}
		m.show(ctx, sent.Key)
	}
}

// show shows the delivery stored under key on the pages here.
func (m *mirror) show(ctx context.Context, key string) {
	rctx, cancel := context.WithTimeout(ctx, storeTimeout)
	d, err := m.st.DeliveryByKey(rctx, key)
	cancel()
	if err != nil {
		m.log.Debug("read a message another replica sent", "key", key, "err", err)
		return
	}
	addr, err := platform.ParseKey(d.AddressKey)
	if err != nil || !m.mirrored(addr, d) {
		return
	}
	a, _ := m.places.adapter(addr.Platform)
	a.(platform.Mirror).Mirror(platform.WithDeliveryKey(ctx, d.Key), addr, platform.Message{
		Text: d.Text, Kind: messageKind(d.Kind), Place: d.Data.Place,
	})
}

// messageKind is the platform's name of a stored delivery's kind; one it
// does not know is sent as an answer.
func messageKind(k store.DeliveryKind) platform.MessageKind {
	switch k {
	case store.DeliveryApproval:
		return platform.MessageApproval
	case store.DeliveryApprovalExpired:
		return platform.MessageApprovalExpired
	case store.DeliveryElsewhere:
		return platform.MessageElsewhere
	case store.DeliveryGreeting:
		return platform.MessageGreeting
	case store.DeliveryNotice:
		return platform.MessageNotice
	}
	return ""
}
