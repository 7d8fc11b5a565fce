package gateway

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/baton-agent/baton/internal/platform"
	"github.com/baton-agent/baton/internal/retry"
	"github.com/baton-agent/baton/internal/store"
)

// ErrNoAdapter is returned when a message is for a platform this gateway
// does not run.
var ErrNoAdapter = errors.New("platform not running in this gateway")

// storeTimeout bounds one store write made on delivery's behalf.
const storeTimeout = 10 * time.Second

// deliver splits text to the platform's limit, stores the parts in the
// outbox under key (so a retry of the same key never posts twice), and
// sends everything pending for addr, in order. When the sends fail for a
// whole retry series, what is left is sent in the background later.
func (g *Gateway) deliver(ctx context.Context, addr platform.Address, key, text string) error {
	return g.deliverAll(ctx, addr, nil, outgoing{key: key, text: text})
}

// outgoing is a message to deliver and its outbox key; kind and data say
// what it is beyond its text (store.Delivery).
type outgoing struct {
	key, text string
	kind      store.DeliveryKind
	data      store.DeliveryData
}

// deliverAll is deliver for several messages, stored in one write. With
// in, the write also marks that inbound event done (its answer is in the
// outbox from then on) and in.DoneAt is set.
func (g *Gateway) deliverAll(ctx context.Context, addr platform.Address, in *store.Inbound, msgs ...outgoing) error {
	a, ok := g.adapters[addr.Platform]
	if !ok {
		return fmt.Errorf("deliver to %s: %w", addr.Key(), ErrNoAdapter)
	}
	var ds []store.Delivery
	streamed := map[string]int{} // outbox key → messages streamed for it
	for _, m := range msgs {
		parts := []string{m.text}
		if l, ok := a.(platform.Limiter); ok {
			parts = platform.Split(m.text, l.MaxMessageLen(), l.MessageLen)
		}
		// Streamed parts are stored with the message each edits, so the
		// edit survives a restart before it is sent.
		ids := g.streamedFor(m.key)
		if len(ids) > 0 {
			streamed[m.key] = len(ids)
		}
		for i, p := range parts {
			d := store.Delivery{Key: partKey(m.key, i), AddressKey: addr.Key(), Text: p}
			if i == len(parts)-1 {
				// A message split in parts is what it is once, at its end.
				d.Kind, d.Data = m.kind, m.data
			}
			if i < len(ids) {
				d.PlatformMsgID = ids[i]
			}
			ds = append(ds, d)
		}
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), storeTimeout)
	defer cancel()
	if in == nil {
		if _, err := g.st.EnqueueDeliveries(wctx, ds...); err != nil {
			return notRecorded("store reply for "+addr.Key(), err)
		}
		g.streamedStored(ctx, addr, streamed)
		return g.flush(ctx, addr)
	}
	ans, err := g.st.AnswerInbound(wctx, in.ID, ds...)
	if err != nil {
		return notRecorded("store reply for "+addr.Key(), err)
	}
	g.streamedStored(ctx, addr, streamed)
	in.DoneAt = time.Now()
	if ans.Behind {
		return g.flush(ctx, addr) // after what waits before it
	}
	return g.flush(ctx, addr, ans.Deliveries...)
}

// streamedStored forgets the streamed messages the outbox holds now
// (streamed: outbox key → how many), here and in the store. Until then
// they are kept: an answer the store refused is delivered again later.
func (g *Gateway) streamedStored(ctx context.Context, addr platform.Address, streamed map[string]int) {
	for key, n := range streamed {
		g.dropStreamed(key)
		g.forgetStreamed(ctx, addr, key, n)
	}
}

// partKey is the outbox key of part i of the reply stored under key.
func partKey(key string, i int) string { return key + ":part:" + strconv.Itoa(i) }

// flush sends every stored, unsent delivery for addr, oldest first. It
// stops at the first one that cannot be sent, so order is kept, and leaves
// what is left to a background resend; or, when nobody is there to
// receive it (platform.ErrAway), to the adapter's Redeliver.
//
// known, when given, are deliveries just stored for addr with nothing
// unsent before them: unless this process has sent any of them meanwhile,
// they are what is pending, and the outbox need not be read.
func (g *Gateway) flush(ctx context.Context, addr platform.Address, known ...store.Delivery) error {
	err := g.flushOnce(ctx, addr, known...)
	if err != nil && !errors.Is(err, platform.ErrPermanent) && g.work() != nil && g.work().Err() == nil {
		g.resend(addr)
	}
	return err
}

// flushOnce is one pass of flush, each part tried for one retry series.
func (g *Gateway) flushOnce(ctx context.Context, addr platform.Address, known ...store.Delivery) error {
	a, ok := g.adapters[addr.Platform]
	if !ok {
		return fmt.Errorf("deliver to %s: %w", addr.Key(), ErrNoAdapter)
	}
	unlock, err := g.send.lock(ctx, addr.Key())
	if err != nil {
		return fmt.Errorf("deliver to %s: %w", addr.Key(), err)
	}
	defer unlock()
	// Whoever stores a delivery flushes after, so what is stored while
	// this pass sends is sent by that flush, which waits for the lock: a
	// pass reads again only when it got a full page.
	for {
		pending := known
		if known == nil || !g.unsentHere(addr.Key(), known) {
			var err error
			if pending, err = g.st.PendingDeliveries(ctx, addr.Key(), store.DefaultQueueLimit); err != nil {
				return fmt.Errorf("load pending replies for %s: %w", addr.Key(), err)
			}
		}
		known = nil
		for _, d := range pending {
			if id, ok := g.sentBefore(d.ID); ok {
				// The service has it; only the record is missing.
				g.noteSentTo(addr.Key(), d.ID)
				if err := g.markSent(ctx, d.ID, id); err != nil {
					return err
				}
				continue
			}
			id, err := g.sendOne(ctx, a, addr, d)
			if errors.Is(err, platform.ErrAway) {
				// Kept, in order, for when someone is there: the adapter
				// asks for it then (Redeliverer).
				g.log.Debug("reply waits for someone to receive it", "to", addr.Key(), "err", err)
				return nil
			}
			if errors.Is(err, platform.ErrPermanent) {
				// It can never arrive; holding it would block every later
				// message to this place. It stays in the store, abandoned.
				g.log.Error("giving up on a message that cannot be delivered", "to", addr.Key(), "err", err)
				g.noteSentTo(addr.Key(), d.ID)
				wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), storeTimeout)
				aerr := g.st.AbandonDelivery(wctx, d.ID, err.Error())
				cancel()
				if aerr != nil {
					return fmt.Errorf("abandon delivery %d: %w", d.ID, aerr)
				}
				return err
			}
			if err != nil {
				return err
			}
			g.noteSentTo(addr.Key(), d.ID)
			if err := g.markSent(ctx, d.ID, id); err != nil {
				return err
			}
		}
		if len(pending) < store.DefaultQueueLimit {
			return nil
		}
	}
}

// maxSentMarks bounds the addresses whose highest sent delivery is
// remembered (sentUpTo). Past it, marks are dropped and the highest
// dropped one stands for every address without a mark: an answer stored
// below it is sent after reading the outbox, as when something unsent
// came before it. Delivery ids grow across addresses, so that is only
// ever too careful.
const maxSentMarks = 4096

// noteSentTo records that delivery id to key is sent (or given up on) by
// this process. Called with key's send lock held, in id order: a flush
// sends an address's deliveries lowest id first and stops at the first it
// cannot send.
func (g *Gateway) noteSentTo(key string, id int64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if _, ok := g.sentUpTo[key]; !ok {
		for k, v := range g.sentUpTo {
			if len(g.sentUpTo) < g.sentMarks {
				break
			}
			g.sentFloor = max(g.sentFloor, v)
			delete(g.sentUpTo, k)
		}
	}
	g.sentUpTo[key] = max(g.sentUpTo[key], id)
}

// unsentHere reports whether ds, just stored for key with nothing unsent
// before them, are all still unsent: stored unsent, and above everything
// this process sent to key. Another flush may have sent them meanwhile,
// lowest id first, so the mark says whether it did.
func (g *Gateway) unsentHere(key string, ds []store.Delivery) bool {
	g.mu.Lock()
	upTo := max(g.sentUpTo[key], g.sentFloor)
	g.mu.Unlock()
	for i, d := range ds {
		if !d.SentAt.IsZero() || d.ID <= upTo || i > 0 && d.ID <= ds[i-1].ID {
			return false
		}
	}
	return true
}

// markSent records a delivery the service took as sent. Until the store
// takes the record it is remembered here, so that no flush sends it
// again, and the record alone is tried again under the Rerecord policy.
func (g *Gateway) markSent(ctx context.Context, deliveryID int64, platformMsgID string) error {
	g.mu.Lock()
	g.sentNotRecorded[deliveryID] = platformMsgID
	g.mu.Unlock()
	err := retry.Do(ctx, g.cfg.Rerecord, func(ctx context.Context) error {
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), storeTimeout)
		defer cancel()
		err := g.st.MarkDelivered(wctx, deliveryID, platformMsgID)
		if err != nil && !store.Transient(err) {
			return retry.Stop(err)
		}
		return err
	}, func(err error, wait time.Duration) {
		g.log.Warn("a sent reply could not be recorded as sent; recording it again, not sending it", "id", deliveryID, "in", wait.Round(time.Millisecond), "err", err)
	})
	if err != nil {
		return fmt.Errorf("record delivery %d as sent: %w", deliveryID, err)
	}
	g.mu.Lock()
	delete(g.sentNotRecorded, deliveryID)
	g.mu.Unlock()
	return nil
}

// sentBefore is the platform message id of a delivery sent by this run
// whose record as sent failed; ok is false for any other.
func (g *Gateway) sentBefore(deliveryID int64) (platformMsgID string, ok bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	platformMsgID, ok = g.sentNotRecorded[deliveryID]
	return platformMsgID, ok
}

// sendOne sends one delivery under the Send policy, by the class of each
// failure: a wait the service asked for is kept, a permanent or
// unsupported failure ends the series. Each failure is recorded.
func (g *Gateway) sendOne(ctx context.Context, a platform.Adapter, addr platform.Address, d store.Delivery) (string, error) {
	if ed, ok := a.(platform.Editor); ok && d.PlatformMsgID != "" {
		// Streamed already: the message becomes the final text in place.
		err := ed.Edit(ctx, addr, d.PlatformMsgID, d.Text)
		if err == nil {
			return d.PlatformMsgID, nil
		}
		g.log.Debug("final edit of a streamed reply failed; posting it", "to", addr.Key(), "err", err)
	}
	// Every try of a delivery carries its key, so a service that can tell
	// a repeat (the web page) shows it once.
	ctx = platform.WithDeliveryKey(ctx, d.Key)
	id, err := retry.Value(ctx, g.cfg.Send, func(ctx context.Context) (string, error) {
		id, err := sendDelivery(ctx, a, addr, d)
		if err == nil {
			return id, nil
		}
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), storeTimeout)
		if rerr := g.st.RecordDeliveryFailure(rctx, d.ID, err.Error()); rerr != nil {
			g.log.Warn("record delivery failure", "id", d.ID, "err", rerr)
		}
		cancel()
		switch cl, _ := platform.Classify(err); cl {
		case platform.ClassPermanent, platform.ClassUnsupported, platform.ClassRefused:
			return "", retry.Stop(platform.Permanent(err))
		case platform.ClassAway:
			return "", retry.Stop(err)
		}
		return "", retryable(err)
	}, func(err error, wait time.Duration) {
		g.log.Warn("send failed; retrying", "to", addr.Key(), "in", wait.Round(time.Millisecond), "err", err)
	})
	if err != nil {
		return "", fmt.Errorf("send to %s: %w", addr.Key(), err)
	}
	return id, nil
}

// sendDelivery sends d in one try: with its kind to an adapter that tells
// kinds apart (platform.MessageSender), else its text.
func sendDelivery(ctx context.Context, a platform.Adapter, addr platform.Address, d store.Delivery) (string, error) {
	ms, ok := a.(platform.MessageSender)
	if !ok {
		return a.Send(ctx, addr, d.Text)
	}
	return ms.SendMessage(ctx, addr, platform.Message{
		Text: d.Text, Kind: messageKind(d.Kind), Place: d.Data.Place,
		Approval: platform.Approval{Tool: d.Data.Tool, Subject: d.Data.Subject, Choices: d.Data.Choices, Expires: d.Data.Expires},
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

// resend sends what waits for addr in the background, with the Resend
// policy's capped backoff, until all of it is sent or the gateway stops;
// it needs no new message to start. One runs per address at a time.
func (g *Gateway) resend(addr platform.Address) {
	key := addr.Key()
	g.mu.Lock()
	if g.resending[key] {
		g.mu.Unlock()
		return
	}
	g.resending[key] = true
	g.mu.Unlock()
	started := g.goBackground(func() {
		defer func() {
			g.mu.Lock()
			delete(g.resending, key)
			g.mu.Unlock()
		}()
		err := retry.Do(g.work(), g.cfg.Resend, func(ctx context.Context) error {
			if !g.isLive(addr.Platform) {
				return errors.New(g.display(addr.Platform) + " is not live")
			}
			err := g.flushOnce(ctx, addr)
			if errors.Is(err, platform.ErrPermanent) {
				return nil // abandoned; a later flush sends the rest
			}
			return err
		}, func(err error, wait time.Duration) {
			g.log.Info("replies wait to be sent", "to", key, "next_try", wait.Round(time.Second), "err", err)
		})
		if err != nil && g.work().Err() == nil {
			g.log.Warn("resend stopped", "to", key, "err", err)
		}
	})
	if !started {
		g.mu.Lock()
		delete(g.resending, key)
		g.mu.Unlock()
	}
}

// redeliver sends what waits for at now, in the background: a place its
// adapter says is reachable again (a web page opened) need not wait for
// the next background resend. An address with only Platform set stands
// for every place of that platform with something waiting.
func (g *Gateway) redeliver(at platform.Address) {
	if g.work() == nil || g.work().Err() != nil {
		return
	}
	if at.Chat != "" {
		g.redeliverTo(at)
		return
	}
	waiting, err := g.st.WaitingDeliveries(g.work())
	if err != nil {
		g.log.Error("load pending deliveries", "err", err)
		return
	}
	for key := range waiting {
		if addr, err := platform.ParseKey(key); err == nil && addr.Platform == at.Platform {
			g.redeliverTo(addr)
		}
	}
}

// redeliverTo flushes addr in the background. One runs per address; a
// request meanwhile makes it flush once more when done, so nothing that
// arrived during its pass is left to wait.
func (g *Gateway) redeliverTo(addr platform.Address) {
	key := addr.Key()
	g.mu.Lock()
	if _, running := g.redelivering[key]; running {
		g.redelivering[key] = true
		g.mu.Unlock()
		return
	}
	g.redelivering[key] = false
	g.mu.Unlock()
	started := g.goBackground(func() {
		for {
			if err := g.flush(g.work(), addr); err != nil {
				g.log.Debug("redeliver", "to", key, "err", err)
			}
			g.mu.Lock()
			again := g.redelivering[key] && g.work().Err() == nil
			if !again {
				delete(g.redelivering, key)
				g.mu.Unlock()
				return
			}
			g.redelivering[key] = false
			g.mu.Unlock()
		}
	})
	if !started {
		g.mu.Lock()
		delete(g.redelivering, key)
		g.mu.Unlock()
	}
}

// waiting counts the replies stored and not yet sent, per platform.
func (g *Gateway) waiting(ctx context.Context) (map[string]int, error) {
	byAddress, err := g.st.WaitingDeliveries(ctx)
	if err != nil {
		return nil, fmt.Errorf("count waiting replies: %w", err)
	}
	out := map[string]int{}
	for key, n := range byAddress {
		p, _, _ := strings.Cut(key, ":")
		out[p] += n
	}
	return out, nil
}

// sendNow sends a notice that is not part of any conversation (a stranger
// told they are not the owner): not stored, tried once. While the gateway
// runs it is sent apart from the caller: a notice mostly answers a message
// its adapter is still handing over, and a service whose sends wait for
// its own reader (the web page acknowledges what it shows) would wait on
// itself.
func (g *Gateway) sendNow(ctx context.Context, addr platform.Address, text string) {
	a, ok := g.adapters[addr.Platform]
	if !ok {
		return
	}
	send := func(ctx context.Context) {
		if _, err := a.Send(ctx, addr, text); err != nil {
			g.log.Debug("send notice", "to", addr.Key(), "err", err)
		}
	}
	if g.work() == nil || g.work().Err() != nil {
		send(ctx)
		return
	}
	if !g.goBackground(func() {
		ctx, cancel := context.WithTimeout(g.work(), noticeTimeout)
		defer cancel()
		send(ctx)
	}) {
		send(ctx)
	}
}

// noticeTimeout bounds the sending of one notice.
const noticeTimeout = time.Minute
