package main

import (
	"github.com/spf13/cobra"

	"github.com/baton-agent/baton/internal/config"
	"github.com/baton-agent/baton/internal/gateway/daemon"
)

func newGateway() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "gateway",
		Short: "Run the gateway: the web chat, your chat apps, and handoffs between them and the terminal",
		Long: `baton gateway runs in the foreground until Ctrl-C or SIGTERM: it serves the
built-in web chat (on 127.0.0.1:7878 by default, behind a token it prints),
connects the chat platforms configured in $BATON_HOME/config.yaml, and
carries out handoffs asked for with /handoff in the terminal or a chat.
On stop it lets running answers finish (gateway.shutdown_grace, 10s).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			home, err := config.Home()
			if err != nil {
				return err
			}
			ctx, cancel := interruptible(cmd.Context())
			defer cancel()
			return daemon.Run(ctx, home, daemon.Options{Out: cmd.OutOrStdout(), Log: cmd.ErrOrStderr()})
		},
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "status",
		Short: "Say whether a gateway runs, which platforms are live and their home channels",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			home, err := config.Home()
			if err != nil {
				return err
			}
			return daemon.PrintStatus(cmd.Context(), home, cmd.OutOrStdout())
		},
	})
	return cmd
}
