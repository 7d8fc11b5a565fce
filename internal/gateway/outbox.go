package gateway

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/baton-agent/baton/internal/platform"
	"github.com/baton-agent/baton/internal/retry"
	"github.com/baton-agent/baton/internal/store"
	"github.com/baton-agent/baton/internal/transcript"
)

// ErrNoAdapter is returned when a message is for a platform this gateway
// does not run.
var ErrNoAdapter = errors.New("platform not running in this gateway")

// outbox is the room that sends: every reply is stored first, then sent
// to its place in the order stored, tried again in the background until it
// is sent, marked sent, and never posted twice. It owns the send locks
// (one per address), the sent marks (their own lock) and, under its own
// lock, the background resends running.
type outbox struct {
	st       store.Store
	log      *slog.Logger
	places   *platforms
	life     *lifecycle
	streamed *streamedReplies
	mirror   *mirror // nil when alone
	policy   sendPolicies
	send     keyedLocks // per address key

	sent *sentMarks // what this process sent; own lock

	mu           sync.Mutex
	resending    map[string]bool // address keys with a background resend running
	redelivering map[string]bool // address keys being redelivered → asked again meanwhile
}

// sendPolicies are the outbox's retry series: Config.Send, Resend and
// Rerecord.
type sendPolicies struct{ send, resend, rerecord retry.Policy }

func newOutbox(st store.Store, log *slog.Logger, places *platforms, life *lifecycle, streamed *streamedReplies, policy sendPolicies) *outbox {
	return &outbox{
		st: st, log: log, places: places, life: life, streamed: streamed, policy: policy,
		sent:         newSentMarks(maxSentMarks),
		resending:    map[string]bool{},
		redelivering: map[string]bool{},
	}
}

// deliver splits text to the platform's limit, stores the parts in the
// outbox under key (so a retry of the same key never posts twice), and
// sends everything pending for addr, in order. When the sends fail for a
// whole retry series, what is left is sent in the background later.
func (o *outbox) deliver(ctx context.Context, addr platform.Address, key, text string) error {
	return o.deliverAll(ctx, addr, nil, outgoing{key: key, text: text})
}

// outgoing is a message to deliver and its outbox key; kind and data say
// what it is beyond its text (store.Delivery).
type outgoing struct {
	key, text string
	kind      store.DeliveryKind
	data      store.DeliveryData
	// files, put in the store already, go as one message with text as
	// their caption (never split).
	files []store.Attachment
}

// deliverAll is deliver for several messages, stored in one write. With
// in, the write also marks that inbound event done (its answer is in the
// outbox from then on) and in.DoneAt is set.
func (o *outbox) deliverAll(ctx context.Context, addr platform.Address, in *store.Inbound, msgs ...outgoing) error {
	a, ok := o.places.adapter(addr.Platform)
	if !ok {
		return fmt.Errorf("deliver to %s: %w", addr.Key(), ErrNoAdapter)
	}
	var ds []store.Delivery
	// Claimed for this replica when it can send them; else left for the
	// replica leading the platform.
	by, until := o.places.rep.claim()
	if !o.places.rep.runsHere(addr.Platform) {
		by, until = "", time.Time{}
	}
	streamed := map[string]int{} // outbox key → messages streamed for it
	for _, m := range msgs {
		if len(m.files) > 0 {
			ds = append(ds, store.Delivery{Key: m.key, AddressKey: addr.Key(), Text: m.text, Kind: m.kind, Data: m.data, Attachments: m.files,
				ClaimedBy: by, ClaimedUntil: until})
			continue
		}
		parts := []string{m.text}
		if l, ok := a.(platform.Limiter); ok {
			parts = platform.Split(m.text, l.MaxMessageLen(), l.MessageLen)
		}
		// Streamed parts are stored with the message each edits, so the
		// edit survives a restart before it is sent.
		ids := o.streamed.of(m.key)
		if len(ids) > 0 {
			streamed[m.key] = len(ids)
		}
		for i, p := range parts {
			d := store.Delivery{Key: partKey(m.key, i), AddressKey: addr.Key(), Text: p, ClaimedBy: by, ClaimedUntil: until}
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
		if _, err := o.st.EnqueueDeliveries(wctx, ds...); err != nil {
			return notRecorded("store reply for "+addr.Key(), err)
		}
		o.streamedStored(ctx, addr, streamed)
		return o.flush(ctx, addr)
	}
	ans, err := o.st.AnswerInbound(wctx, in.ID, ds...)
	if err != nil {
		return notRecorded("store reply for "+addr.Key(), err)
	}
	o.streamedStored(ctx, addr, streamed)
	in.DoneAt = time.Now()
	if ans.Behind {
		return o.flush(ctx, addr) // after what waits before it
	}
	return o.flush(ctx, addr, ans.Deliveries...)
}

// streamedStored forgets the streamed messages the outbox holds now
// (streamed: outbox key → how many), here and in the store. Until then
// they are kept: an answer the store refused is delivered again later.
func (o *outbox) streamedStored(ctx context.Context, addr platform.Address, streamed map[string]int) {
	for key, n := range streamed {
		o.streamed.drop(key)
		o.streamed.forget(ctx, addr, key, n)
	}
}

// flush sends every stored, unsent delivery for addr, oldest first. It
// stops at the first one that cannot be sent, so order is kept, and leaves
// what is left to a background resend; or, when nobody is there to
// receive it (platform.ErrAway), to the adapter's Redeliver.
//
// known, when given, are deliveries just stored for addr with nothing
// unsent before them: unless this process has sent any of them meanwhile,
// they are what is pending, and the outbox need not be read.
func (o *outbox) flush(ctx context.Context, addr platform.Address, known ...store.Delivery) error {
	err := o.flushOnce(ctx, addr, known...)
	if err != nil && !errors.Is(err, platform.ErrPermanent) && o.life.working() {
		o.resend(addr)
	}
	return err
}

// flushOnce is one pass of flush, each part tried for one retry series.
func (o *outbox) flushOnce(ctx context.Context, addr platform.Address, known ...store.Delivery) error {
	a, ok := o.places.adapter(addr.Platform)
	if !ok {
		return fmt.Errorf("deliver to %s: %w", addr.Key(), ErrNoAdapter)
	}
	if !o.places.rep.runsHere(addr.Platform) {
		return nil // the replica leading the platform sends it (Gateway.beat)
	}
	unlock, err := o.send.lock(ctx, addr.Key())
	if err != nil {
		return fmt.Errorf("deliver to %s: %w", addr.Key(), err)
	}
	defer unlock()
	// Whoever stores a delivery flushes after, so what is stored while
	// this pass sends is sent by that flush, which waits for the lock: a
	// pass reads again only when it got a full page.
	for {
		pending := known
		if known == nil || !o.sent.unsent(addr.Key(), known) {
			var err error
			if pending, err = o.st.PendingDeliveries(ctx, addr.Key(), store.DefaultQueueLimit); err != nil {
				return fmt.Errorf("load pending replies for %s: %w", addr.Key(), err)
			}
		}
		known = nil
		for _, d := range pending {
			if id, ok := o.sent.before(d.ID); ok {
				// The service has it; only the record is missing.
				o.sent.note(addr.Key(), d.ID)
				if err := o.markSent(ctx, d.ID, id); err != nil {
					return err
				}
				continue
			}
			if err := o.places.rep.claimDelivery(ctx, d); errors.Is(err, store.ErrClaimed) {
				// Another replica sends it, and what follows it, in order.
				return nil
			} else if err != nil {
				return fmt.Errorf("claim delivery %d: %w", d.ID, err)
			}
			id, err := o.sendOne(ctx, a, addr, d)
			if errors.Is(err, platform.ErrAway) {
				// Kept, in order, for when someone is there: the adapter
				// asks for it then (Redeliverer). Another replica's
				// adapter may have them there.
				o.log.Debug("reply waits for someone to receive it", "to", addr.Key(), "err", err)
				o.places.rep.releaseDelivery(context.WithoutCancel(ctx), d.ID)
				return nil
			}
			if errors.Is(err, platform.ErrPermanent) {
				// It can never arrive; holding it would block every later
				// message to this place. It stays in the store, abandoned.
				o.log.Error("giving up on a message that cannot be delivered", "to", addr.Key(), "err", err)
				o.sent.note(addr.Key(), d.ID)
				wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), storeTimeout)
				aerr := o.st.AbandonDelivery(wctx, d.ID, err.Error())
				cancel()
				if aerr != nil {
					return fmt.Errorf("abandon delivery %d: %w", d.ID, aerr)
				}
				return err
			}
			if err != nil {
				return err
			}
			o.sent.note(addr.Key(), d.ID)
			if err := o.markSent(ctx, d.ID, id); err != nil {
				return err
			}
			o.mirror.sent(ctx, addr, d)
		}
		if len(pending) < store.DefaultQueueLimit {
			return nil
		}
	}
}

// markSent records a delivery the service took as sent. Until the store
// takes the record it is remembered here, so that no flush sends it
// again, and the record alone is tried again under the Rerecord policy.
func (o *outbox) markSent(ctx context.Context, deliveryID int64, platformMsgID string) error {
	o.sent.notRecorded(deliveryID, platformMsgID)
	err := retry.Do(ctx, o.policy.rerecord, func(ctx context.Context) error {
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), storeTimeout)
		defer cancel()
		err := o.st.MarkDelivered(wctx, deliveryID, platformMsgID)
		if err != nil && !store.Transient(err) {
			return retry.Stop(err)
		}
		return err
	}, func(err error, wait time.Duration) {
		o.log.Warn("a sent reply could not be recorded as sent; recording it again, not sending it", "id", deliveryID, "in", wait.Round(time.Millisecond), "err", err)
	})
	if err != nil {
		return fmt.Errorf("record delivery %d as sent: %w", deliveryID, err)
	}
	o.sent.recorded(deliveryID)
	return nil
}

// sendOne sends one delivery under the Send policy, by the class of each
// failure: a wait the service asked for is kept, a permanent or
// unsupported failure ends the series. Each failure is recorded.
func (o *outbox) sendOne(ctx context.Context, a platform.Adapter, addr platform.Address, d store.Delivery) (string, error) {
	if ed, ok := a.(platform.Editor); ok && d.PlatformMsgID != "" {
		// Streamed already: the message becomes the final text in place.
		err := ed.Edit(ctx, addr, d.PlatformMsgID, d.Text)
		if err == nil {
			return d.PlatformMsgID, nil
		}
		o.log.Debug("final edit of a streamed reply failed; posting it", "to", addr.Key(), "err", err)
	}
	// Every try of a delivery carries its key, so a service that can tell
	// a repeat (the web page) shows it once.
	ctx = platform.WithDeliveryKey(ctx, d.Key)
	id, err := retry.Value(ctx, o.policy.send, func(ctx context.Context) (string, error) {
		id, err := o.sendDelivery(ctx, a, addr, d)
		if err == nil {
			return id, nil
		}
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), storeTimeout)
		if rerr := o.st.RecordDeliveryFailure(rctx, d.ID, err.Error()); rerr != nil {
			o.log.Warn("record delivery failure", "id", d.ID, "err", rerr)
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
		o.log.Warn("send failed; retrying", "to", addr.Key(), "in", wait.Round(time.Millisecond), "err", err)
	})
	if err != nil {
		return "", fmt.Errorf("send to %s: %w", addr.Key(), err)
	}
	return id, nil
}

// sendDelivery sends d in one try: its file to an adapter that sends
// files (platform.FileSender), else a line naming it; with its kind to an
// adapter that tells kinds apart (platform.MessageSender), else its text.
func (o *outbox) sendDelivery(ctx context.Context, a platform.Adapter, addr platform.Address, d store.Delivery) (string, error) {
	if len(d.Attachments) > 0 {
		return o.sendFile(ctx, a, addr, d)
	}
	ms, ok := a.(platform.MessageSender)
	if !ok {
		return a.Send(ctx, addr, d.Text)
	}
	return ms.SendMessage(ctx, addr, platform.Message{
		Text: d.Text, Kind: messageKind(d.Kind), Place: d.Data.Place,
		Approval: platform.Approval{Tool: d.Data.Tool, Subject: d.Data.Subject, Choices: d.Data.Choices, Expires: d.Data.Expires},
	})
}

// resend sends what waits for addr in the background, with the Resend
// policy's capped backoff, until all of it is sent or the gateway stops;
// it needs no new message to start. One runs per address at a time.
func (o *outbox) resend(addr platform.Address) {
	key := addr.Key()
	o.mu.Lock()
	if o.resending[key] {
		o.mu.Unlock()
		return
	}
	o.resending[key] = true
	o.mu.Unlock()
	started := o.life.goBackground(func() {
		defer func() {
			o.mu.Lock()
			delete(o.resending, key)
			o.mu.Unlock()
		}()
		err := retry.Do(o.life.work(), o.policy.resend, func(ctx context.Context) error {
			if !o.places.isLive(addr.Platform) {
				return errors.New(o.places.displayName(addr.Platform) + " is not live")
			}
			err := o.flushOnce(ctx, addr)
			if errors.Is(err, platform.ErrPermanent) {
				return nil // abandoned; a later flush sends the rest
			}
			return err
		}, func(err error, wait time.Duration) {
			o.log.Info("replies wait to be sent", "to", key, "next_try", wait.Round(time.Second), "err", err)
		})
		if err != nil && o.life.work().Err() == nil {
			o.log.Warn("resend stopped", "to", key, "err", err)
		}
	})
	if !started {
		o.mu.Lock()
		delete(o.resending, key)
		o.mu.Unlock()
	}
}

// redeliver sends what waits for at now, in the background: a place its
// adapter says is reachable again (a web page opened) need not wait for
// the next background resend. An address with only Platform set stands
// for every place of that platform with something waiting.
func (o *outbox) redeliver(at platform.Address) {
	if !o.life.working() {
		return
	}
	if at.Chat != "" {
		o.redeliverTo(at)
		return
	}
	waiting, err := o.st.WaitingDeliveries(o.life.work())
	if err != nil {
		o.log.Error("load pending deliveries", "err", err)
		return
	}
	for key := range waiting {
		if addr, err := platform.ParseKey(key); err == nil && addr.Platform == at.Platform {
			o.redeliverTo(addr)
		}
	}
}

// redeliverTo flushes addr in the background. One runs per address; a
// request meanwhile makes it flush once more when done, so nothing that
// arrived during its pass is left to wait.
func (o *outbox) redeliverTo(addr platform.Address) {
	key := addr.Key()
	o.mu.Lock()
	if _, running := o.redelivering[key]; running {
		o.redelivering[key] = true
		o.mu.Unlock()
		return
	}
	o.redelivering[key] = false
	o.mu.Unlock()
	started := o.life.goBackground(func() {
		for {
			if err := o.flush(o.life.work(), addr); err != nil {
				o.log.Debug("redeliver", "to", key, "err", err)
			}
			o.mu.Lock()
			again := o.redelivering[key] && o.life.work().Err() == nil
			if !again {
				delete(o.redelivering, key)
				o.mu.Unlock()
				return
			}
			o.redelivering[key] = false
			o.mu.Unlock()
		}
	})
	if !started {
		o.mu.Lock()
		delete(o.redelivering, key)
		o.mu.Unlock()
	}
}

// waiting counts the replies stored and not yet sent, per platform.
func (o *outbox) waiting(ctx context.Context) (map[string]int, error) {
	byAddress, err := o.st.WaitingDeliveries(ctx)
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
func (o *outbox) sendNow(ctx context.Context, addr platform.Address, text string) {
	a, ok := o.places.adapter(addr.Platform)
	if !ok {
		return
	}
	send := func(ctx context.Context) {
		if _, err := a.Send(ctx, addr, text); err != nil {
			o.log.Debug("send notice", "to", addr.Key(), "err", err)
		}
	}
	if !o.life.working() {
		send(ctx)
		return
	}
	if !o.life.goBackground(func() {
		ctx, cancel := context.WithTimeout(o.life.work(), noticeTimeout)
		defer cancel()
		send(ctx)
	}) {
		send(ctx)
	}
}

// noticeTimeout bounds the sending of one notice.
const noticeTimeout = time.Minute

// takeOverStreamed has the answer about to be delivered under key at
// addr edit the messages an earlier run streamed for it and left
// half-written: that run stored the answer in the transcript and stopped
// before the outbox had it.
func (o *outbox) takeOverStreamed(ctx context.Context, addr platform.Address, key string) {
	if a, _ := o.places.adapter(addr.Platform); a != nil {
		if _, ok := a.(platform.Editor); ok {
			o.streamed.note(key, o.streamed.before(ctx, addr, key))
		}
	}
}

// sendFile sends a delivery's file (one per delivery: deliverAll) with
// its text as the caption, read from the store on each try. A place that
// cannot take files is told of it in a line, with where it is kept.
func (o *outbox) sendFile(ctx context.Context, a platform.Adapter, addr platform.Address, d store.Delivery) (string, error) {
	att := d.Attachments[0]
	fs, ok := a.(platform.FileSender)
	if !ok {
		line := transcript.FileLine(att, store.FilePathOf(o.st, att.SHA256))
		if strings.TrimSpace(d.Text) != "" {
			line = d.Text + "\n\n" + line
		}
		return a.Send(ctx, addr, line)
	}
	return fs.SendFile(ctx, addr, platform.File{
		Name: att.Name, MediaType: att.MediaType, Size: att.Size, Caption: d.Text, Voice: att.Voice,
		Open: func(ctx context.Context) (io.ReadCloser, error) { return o.st.OpenFile(ctx, att.SHA256) },
	})
}
