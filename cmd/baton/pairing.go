package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/baton-agent/baton/internal/app"
	"github.com/baton-agent/baton/internal/cli"
)

func newPairing() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "pairing",
		Short: "Let people who wrote to baton's chats in, or not",
		Long: "Someone baton does not know who writes to it in a direct chat gets a pairing code.\n" +
			"They tell you the code; you approve it here (or with /pairing in one of your chats).",
		Args: cobra.NoArgs,
	}
	cmd.AddCommand(
		&cobra.Command{
			Use:   "list",
			Short: "List pairing requests waiting, and people locked out",
			Args:  cobra.NoArgs,
			RunE: withApp(func(ctx context.Context, a *app.App, cmd *cobra.Command, _ []string) error {
				return cli.ListPairings(ctx, a, cmd.OutOrStdout())
			}),
		},
		&cobra.Command{
			Use:   "approve <code>",
			Short: "Let the person who got this code talk to baton as you",
			Args:  cobra.ExactArgs(1),
			RunE: withApp(func(ctx context.Context, a *app.App, cmd *cobra.Command, args []string) error {
				return cli.ApprovePairing(ctx, a, cmd.OutOrStdout(), args[0])
			}),
		},
		&cobra.Command{
			Use:   "deny <code>",
			Short: "Refuse the request; the person is ignored for a day",
			Args:  cobra.ExactArgs(1),
			RunE: withApp(func(ctx context.Context, a *app.App, cmd *cobra.Command, args []string) error {
				return cli.DenyPairing(ctx, a, cmd.OutOrStdout(), args[0])
			}),
		},
	)
	return cmd
}
