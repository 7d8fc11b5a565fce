package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/spf13/cobra"

	"github.com/baton-agent/baton/internal/app"
	"github.com/baton-agent/baton/internal/config"
	"github.com/baton-agent/baton/internal/platform"
	"github.com/baton-agent/baton/internal/platform/all"
)

// newPlatformCommands makes `baton <platform> <subcommand>` of every
// platform that offers setup commands of its own (`baton whatsapp link`).
func newPlatformCommands() []*cobra.Command {
	var cmds []*cobra.Command
	for _, spec := range all.Specs() {
		if len(spec.Subcommands) == 0 {
			continue
		}
		display := spec.Display
		if display == "" {
			display = spec.Name
		}
		parent := &cobra.Command{
			Use:   spec.Name,
			Short: "Set up " + display,
			Args:  cobra.NoArgs,
		}
		for _, sub := range spec.Subcommands {
			parent.AddCommand(&cobra.Command{
				Use:   sub.Name,
				Short: sub.Short,
				Long:  sub.Long,
				Args:  cobra.NoArgs,
				RunE: func(cmd *cobra.Command, _ []string) error {
					ctx, cancel := interruptible(cmd.Context())
					defer cancel()
					return runSubcommand(ctx, cmd, sub)
				},
			})
		}
		cmds = append(cmds, parent)
	}
	return cmds
}

// runSubcommand opens (and migrates) baton's store first, so that the
// command finds the database it may keep tables in.
func runSubcommand(ctx context.Context, cmd *cobra.Command, sub platform.Subcommand) error {
	home, err := config.Home()
	if err != nil {
		return err
	}
	cfg, err := config.Load(home)
	if err != nil {
		return err
	}
	url := app.StoreURL(cfg, nil)
	file, err := app.StorePath(home, url)
	if errors.Is(err, app.ErrNotAFile) {
		file = "" // a store on a Postgres server: there is no file to give
	} else if err != nil {
		return err
	}
	st, err := app.OpenStore(ctx, home, url)
	if err != nil {
		return err
	}
	if err := st.Close(); err != nil {
		return fmt.Errorf("close store: %w", err)
	}
	log := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: slog.LevelWarn}))
	return sub.Run(ctx, platform.SubcommandEnv{Home: home, StoreFile: file, Out: cmd.OutOrStdout(), Log: log})
}
