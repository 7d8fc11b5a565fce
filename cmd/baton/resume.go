package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/baton-agent/baton/internal/app"
	"github.com/baton-agent/baton/internal/cli"
	"github.com/baton-agent/baton/internal/config"
)

func newResume() *cobra.Command {
	return &cobra.Command{
		Use:   "resume",
		Short: "Continue a session handed off to the terminal (/handoff cli in a chat)",
		Long: `baton resume lists the sessions that were handed off to the terminal with
/handoff cli in a chat, and continues one of them here on one keypress.
With none waiting it says so; baton -c continues the conversation you
last chatted in.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			home, err := config.Home()
			if err != nil {
				return err
			}
			a, err := app.Open(cmd.Context(), home)
			if err != nil {
				return err
			}
			waiting, err := (&cli.Handoffs{App: a}).Waiting(cmd.Context())
			a.Close()
			if err != nil {
				return err
			}
			if len(waiting) == 0 {
				fmt.Fprintln(cmd.OutOrStdout(), "Nothing is waiting for the terminal. `baton -c` continues the conversation you last chatted in; `baton sessions list` shows them all.")
				return nil
			}
			return runChat(cmd.Context(), chatOptions{}, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
}
