package gateway

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/baton-agent/baton/internal/platform"
	"github.com/baton-agent/baton/internal/store"
)

// Delivery retry policy for errors a platform did not resolve itself.
const (
	sendAttempts  = 5
	sendFirstWait = 500 * time.Millisecond
)

// ErrNoAdapter is returned when a message is for a platform this gateway
// does not run.
var ErrNoAdapter = errors.New("platform not running in this gateway")

// deliver splits text to the platform's limit, stores the parts in the
// outbox under key (so a retry of the same key never posts twice), and
// sends everything pending for addr, in order.
func (g *Gateway) deliver(ctx context.Context, addr platform.Address, key, text string) error {
	a, ok := g.adapters[addr.Platform]
	if !ok {
		return fmt.Errorf("deliver to %s: %w", addr.Key(), ErrNoAdapter)
	}
	parts := []string{text}
	if l, ok := a.(platform.Limiter); ok {
		parts = platform.Split(text, l.MaxMessageLen(), l.MessageLen)
	}
	ds := make([]store.Delivery, len(parts))
	for i, p := range parts {
		ds[i] = store.Delivery{Key: key + ":part:" + strconv.Itoa(i), AddressKey: addr.Key(), Text: p}
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if _, err := g.st.EnqueueDeliveries(wctx, ds...); err != nil {
		return fmt.Errorf("store reply for %s: %w", addr.Key(), err)
	}
	return g.flush(ctx, addr)
}

// flush sends every stored, unsent delivery for addr, oldest first. It
// stops at the first one that cannot be sent, so order is kept; what is
// left is sent by the next flush or at the next start.
func (g *Gateway) flush(ctx context.Context, addr platform.Address) error {
	a, ok := g.adapters[addr.Platform]
	if !ok {
		return fmt.Errorf("deliver to %s: %w", addr.Key(), ErrNoAdapter)
	}
	unlock, err := g.send.lock(ctx, addr.Key())
	if err != nil {
		return fmt.Errorf("deliver to %s: %w", addr.Key(), err)
	}
	defer unlock()
	for {
		pending, err := g.st.PendingDeliveries(ctx, addr.Key(), 0)
		if err != nil {
			return fmt.Errorf("load pending replies for %s: %w", addr.Key(), err)
		}
		if len(pending) == 0 {
			return nil
		}
		for _, d := range pending {
			id, err := g.sendOne(ctx, a, addr, d)
			if errors.Is(err, platform.ErrPermanent) {
				// It can never arrive; holding it would block every later
				// message to this place. It stays in the store, abandoned.
				g.log.Error("giving up on a message that cannot be delivered", "to", addr.Key(), "err", err)
				wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
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
			wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			err = g.st.MarkDelivered(wctx, d.ID, id)
			cancel()
			if err != nil {
				return fmt.Errorf("record delivery %d: %w", d.ID, err)
			}
		}
	}
}

// sendOne sends one delivery, retrying with backoff what the adapter did
// not resolve itself; a permanent failure is recorded and returned.
func (g *Gateway) sendOne(ctx context.Context, a platform.Adapter, addr platform.Address, d store.Delivery) (string, error) {
	wait := sendFirstWait
	var err error
	for attempt := 1; attempt <= sendAttempts; attempt++ {
		var id string
		id, err = a.Send(ctx, addr, d.Text)
		if err == nil {
			return id, nil
		}
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		if rerr := g.st.RecordDeliveryFailure(rctx, d.ID, err.Error()); rerr != nil {
			g.log.Warn("record delivery failure", "id", d.ID, "err", rerr)
		}
		cancel()
		if errors.Is(err, platform.ErrPermanent) || ctx.Err() != nil {
			break
		}
		g.log.Warn("send failed; retrying", "to", addr.Key(), "attempt", attempt, "err", err)
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("send to %s: %w", addr.Key(), ctx.Err())
		case <-time.After(wait):
		}
		wait *= 2
	}
	return "", fmt.Errorf("send to %s: %w", addr.Key(), err)
}

// sendNow sends a notice that is not part of any conversation (a stranger
// told they are not the owner): not stored, not retried.
func (g *Gateway) sendNow(ctx context.Context, addr platform.Address, text string) {
	a, ok := g.adapters[addr.Platform]
	if !ok {
		return
	}
	if _, err := a.Send(ctx, addr, text); err != nil {
		g.log.Debug("send notice", "to", addr.Key(), "err", err)
	}
}
