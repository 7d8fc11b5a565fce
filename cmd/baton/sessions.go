package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/baton-agent/baton/internal/app"
	"github.com/baton-agent/baton/internal/cli"
	"github.com/baton-agent/baton/internal/config"
)

func newSessions() *cobra.Command {
	cmd := &cobra.Command{
		Use:     "sessions",
		Aliases: []string{"session"},
		Short:   "List, show, search, export, delete and rename sessions",
		Args:    cobra.NoArgs,
	}
	var limit int
	list := &cobra.Command{
		Use:   "list",
		Short: "List sessions, most recently active first",
		Args:  cobra.NoArgs,
		RunE: withApp(func(ctx context.Context, app *app.App, cmd *cobra.Command, _ []string) error {
			return cli.ListSessions(ctx, app, cmd.OutOrStdout(), limit)
		}),
	}
	list.Flags().IntVarP(&limit, "limit", "n", 50, "how many sessions")
	cmd.AddCommand(list,
		&cobra.Command{
			Use:   "show <id or title>",
			Short: "Print a session's transcript",
			Args:  cobra.ExactArgs(1),
			RunE: withApp(func(ctx context.Context, app *app.App, cmd *cobra.Command, args []string) error {
				return cli.ShowSession(ctx, app, cmd.OutOrStdout(), args[0])
			}),
		},
		&cobra.Command{
			Use:   "search <words>",
			Short: "Search every session's messages",
			Args:  cobra.MinimumNArgs(1),
			RunE: withApp(func(ctx context.Context, app *app.App, cmd *cobra.Command, args []string) error {
				return cli.SearchSessions(ctx, app, cmd.OutOrStdout(), joinArgs(args))
			}),
		},
		&cobra.Command{
			Use:   "export <id or title>",
			Short: "Write a session, its whole history, bindings and attached files as JSON",
			Args:  cobra.ExactArgs(1),
			RunE: withApp(func(ctx context.Context, app *app.App, cmd *cobra.Command, args []string) error {
				return cli.ExportSession(ctx, app, cmd.OutOrStdout(), args[0])
			}),
		},
		&cobra.Command{
			Use:   "delete <id or title>",
			Short: "Delete a session and everything stored about it",
			Args:  cobra.ExactArgs(1),
			RunE: withApp(func(ctx context.Context, app *app.App, cmd *cobra.Command, args []string) error {
				return cli.DeleteSession(ctx, app, cmd.OutOrStdout(), args[0])
			}),
		},
		&cobra.Command{
			Use:   "rename <id or title> <new title>",
			Short: "Set a session's title",
			Args:  cobra.MinimumNArgs(2),
			RunE: withApp(func(ctx context.Context, app *app.App, cmd *cobra.Command, args []string) error {
				return cli.RenameSession(ctx, app, cmd.OutOrStdout(), args[0], joinArgs(args[1:]))
			}),
		},
	)
	return cmd
}

// withApp opens the app around a subcommand, with Ctrl-C cancelling it.
func withApp(fn func(ctx context.Context, app *app.App, cmd *cobra.Command, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		ctx, cancel := interruptible(cmd.Context())
		defer cancel()
		home, err := config.Home()
		if err != nil {
			return err
		}
		a, err := app.Open(ctx, home)
		if err != nil {
			return err
		}
		defer a.Close()
		return fn(ctx, a, cmd, args)
	}
}

func joinArgs(args []string) string {
	s := ""
	for i, a := range args {
		if i > 0 {
			s += " "
		}
		s += a
	}
	return s
}
