package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/baton-agent/baton/internal/app"
	"github.com/baton-agent/baton/internal/owner"
)

// WhoAmI writes the owner's accounts (`baton whoami`, /whoami).
func WhoAmI(ctx context.Context, a *app.App, w io.Writer) error {
	accts, err := owner.Accounts(ctx, a.Store, a.Owner.ID, a.Config.Gateway.Owners)
	if err != nil {
		return err
	}
	fmt.Fprintln(w, owner.Describe(a.Owner.Name, accts))
	return nil
}

// Link makes an account on a platform one of the owner's (`baton link`).
func Link(ctx context.Context, a *app.App, w io.Writer, platform, id string) error {
	if err := owner.Link(ctx, a.Store, a.Owner.ID, platform, id); err != nil {
		return err
	}
	fmt.Fprintf(w, "%s %s is now one of your accounts: what it writes to baton is you, and it can /continue your sessions.\n", platform, id)
	return nil
}
