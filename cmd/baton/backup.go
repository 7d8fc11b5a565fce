package main

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/baton-agent/baton/internal/app"
	"github.com/baton-agent/baton/internal/config"
	"github.com/baton-agent/baton/internal/store/sqlite"
)

// backuper is a store that can copy itself consistently while in use.
type backuper interface {
	Backup(ctx context.Context, dest string) (sqlite.Record, error)
}

func newBackup() *cobra.Command {
	return &cobra.Command{
		Use:   "backup FILE",
		Short: "Copy the store to FILE, consistently, even while the gateway runs",
		Long: `baton backup writes a copy of the whole store (every session, message and
setting) to FILE, a new file, as it was at one moment. It may run while the
gateway or a terminal uses the store; they go on meanwhile. Copying state.db
with cp is not a backup while baton runs: its latest writes are in
state.db-wal beside it.

To restore, stop every baton process, move the store and the files beginning
with its name away (state.db, state.db-wal, state.db-shm, state.db.record),
and copy FILE to state.db.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, cancel := interruptible(cmd.Context())
			defer cancel()
			home, err := config.Home()
			if err != nil {
				return err
			}
			cfg, err := config.Load(home)
			if err != nil {
				return err
			}
			st, err := app.OpenStore(ctx, home, app.StoreURL(cfg, os.Getenv))
			if err != nil {
				return err
			}
			b, ok := st.(backuper)
			if !ok {
				why := errors.New("this store cannot be backed up by baton")
				if app.IsPostgres(app.StoreURL(cfg, os.Getenv)) {
					why = errors.New("a store on a Postgres server is backed up with the server's own tools (pg_dump, or its base backups)")
				}
				return errors.Join(why, st.Close())
			}
			held, err := b.Backup(ctx, args[0])
			if cerr := st.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
			fi, err := os.Stat(args[0])
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Backed up %s to %s (%.1f MB).\n", held.Holding(), args[0], float64(fi.Size())/1e6)
			return nil
		},
	}
}
