package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/baton-agent/baton/internal/app"
	"github.com/baton-agent/baton/internal/cli"
)

func newWhoAmI() *cobra.Command {
	return &cobra.Command{
		Use:   "whoami",
		Short: "List your accounts: the places baton knows you by",
		Args:  cobra.NoArgs,
		RunE: withApp(func(ctx context.Context, a *app.App, cmd *cobra.Command, _ []string) error {
			return cli.WhoAmI(ctx, a, cmd.OutOrStdout())
		}),
	}
}

func newLink() *cobra.Command {
	return &cobra.Command{
		Use:   "link <platform> <account id>",
		Short: "Make an account on a chat service one of yours",
		Long: "baton link telegram 123456789 makes that Telegram account one of yours: what it\n" +
			"writes to baton is you (as if it were in gateway.owners), and it can /continue\n" +
			"your sessions. `baton whoami` lists your accounts; a pairing code approved with\n" +
			"`baton pairing approve` links an account too.",
		Args: cobra.ExactArgs(2),
		RunE: withApp(func(ctx context.Context, a *app.App, cmd *cobra.Command, args []string) error {
			return cli.Link(ctx, a, cmd.OutOrStdout(), args[0], args[1])
		}),
	}
}
