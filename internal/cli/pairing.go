package cli

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/baton-agent/baton/internal/app"
	"github.com/baton-agent/baton/internal/gateway"
	"github.com/baton-agent/baton/internal/gateway/control"
)

// ListPairings prints who asked to talk to baton and who is locked out.
func ListPairings(ctx context.Context, a *app.App, out io.Writer) error {
	now := time.Now()
	ps, err := a.Store.PendingPairings(ctx, now)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(out, gateway.FormatPairings(ps, now))
	return err
}

// ApprovePairing links the person who was given code to the owner.
func ApprovePairing(ctx context.Context, a *app.App, out io.Writer, code string) error {
	p, err := a.Store.ApprovePairing(ctx, code, a.Owner.ID, time.Now())
	if err != nil {
		return err
	}
	told := "they are told so"
	if _, err := a.Store.EnqueueDeliveries(ctx, gateway.PairingWelcomeDelivery(p)); err != nil {
		told = "tell them yourself: baton could not store its message to them (" + err.Error() + ")"
	} else if err := control.Kick(ctx, a.Home, a.Store, control.TopicPairings, p.Platform); err != nil {
		told = "they are told so when the gateway runs"
	}
	_, err = fmt.Fprintf(out, "Approved %s on %s: they can talk to baton now; %s.\n", gateway.PairingWho(p), p.Platform, told)
	return err
}

// DenyPairing refuses the request; the person is ignored for a while.
func DenyPairing(ctx context.Context, a *app.App, out io.Writer, code string) error {
	p, err := a.Store.DenyPairing(ctx, code, time.Now().Add(gateway.PairingLock))
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(out, "Denied %s on %s; their messages are ignored for %s.\n", gateway.PairingWho(p), p.Platform, gateway.PairingLock)
	return err
}
