package main

import (
	"log/slog"

	"github.com/spf13/cobra"

	"github.com/baton-agent/baton/internal/config"
	"github.com/baton-agent/baton/internal/platform/whatsapp"
)

func newWhatsApp() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "whatsapp",
		Short: "Link baton to your WhatsApp account",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "link",
		Short: "Pair baton as a linked device of your phone's WhatsApp (shows a QR code)",
		Long: `baton whatsapp link pairs baton as a linked device of your own WhatsApp
account, as WhatsApp Web does. It shows a QR code here; on your phone open
WhatsApp › Settings › Linked devices › Link a device and scan it (a new code
follows every 20 seconds or so until one is scanned).

The device is kept in $BATON_HOME/whatsapp.db (private to you). Afterwards
set "whatsapp: enabled: true" in config.yaml, with your own JID as the
owner and home (the command prints the lines), and restart the gateway.
You then talk to baton in your chat with yourself; nothing else on your
account reaches it. Run it again if the phone logs the device out.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, cancel := interruptible(cmd.Context())
			defer cancel()
			home, err := config.Home()
			if err != nil {
				return err
			}
			log := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: slog.LevelWarn}))
			return whatsapp.LinkInTerminal(ctx, home, cmd.OutOrStdout(), log)
		},
	})
	return cmd
}
