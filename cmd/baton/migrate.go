package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/baton-agent/baton/internal/app"
	"github.com/baton-agent/baton/internal/config"
	"github.com/baton-agent/baton/internal/gateway/control"
	"github.com/baton-agent/baton/internal/plural"
	"github.com/baton-agent/baton/internal/store"
	"github.com/baton-agent/baton/internal/store/migrate"
	"github.com/baton-agent/baton/internal/store/postgres"
)

func newMigrate() *cobra.Command {
	var to string
	var stop bool
	cmd := &cobra.Command{
		Use:   "migrate --to postgres://user:password@host:5432/database",
		Short: "Copy this home's SQLite store into an empty Postgres database",
		Long: `baton migrate copies everything the store of this home (BATON_HOME) holds
into an empty database on a Postgres server: users and their identities,
sessions with their whole transcripts (superseded rows and attachments
too), bindings, handoffs, notes, pairings, home channels, platforms'
state, the gateway's inbox and outbox with parked messages, and the bytes
of every file. Ids, sequence numbers and times are kept, so everything
naming a session names it still.

The copy is one transaction: all of it or, if anything fails or you press
Ctrl-C, none. baton then counts what each side holds and prints a
checksum of every session's transcript as each side reads it back; they
must be the same. The SQLite store is left as it was.

Before you start:
  - create the database: createdb -h HOST -U USER baton
  - stop the gateway (baton gateway stop, or pass --stop-gateway) and
    close every terminal chat of this home: what they write during the
    copy would be left behind. baton refuses while a gateway answers.

Afterwards, set store: to the URL in config.yaml (or BATON_STORE) and
start the gateway again. The password may also come from ~/.pgpass or
PGPASSWORD instead of the URL; baton never prints it.`,
		Example: `  baton migrate --to postgres://baton:secret@db.home.arpa:5432/baton
  baton migrate --stop-gateway --to postgres://baton@127.0.0.1/baton`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, cancel := interruptible(cmd.Context())
			defer cancel()
			return runMigrate(ctx, to, stop, cmd.OutOrStdout())
		},
	}
	cmd.Flags().StringVar(&to, "to", "", "the empty Postgres database to copy into (postgres://user:password@host:port/database)")
	cmd.Flags().BoolVar(&stop, "stop-gateway", false, "stop this home's running gateway first, as baton gateway stop does")
	return cmd
}

func runMigrate(ctx context.Context, to string, stopGW bool, out io.Writer) error {
	to = strings.TrimSpace(to)
	if to == "" {
		return errors.New("say where to copy the store: baton migrate --to postgres://user:password@host:5432/database")
	}
	if !app.IsPostgres(to) {
		return fmt.Errorf("--to %s: baton migrate copies into a Postgres database; give its URL, postgres://user:password@host:5432/database",
			postgres.Redact(to))
	}
	home, err := config.Home()
	if err != nil {
		return err
	}
	cfg, err := config.Load(home)
	if err != nil {
		return err
	}
	from := app.StoreURL(cfg, os.Getenv)
	if app.IsPostgres(from) {
		return fmt.Errorf("this home's store is already on a Postgres server (%s): baton migrate copies a SQLite store; "+
			"to copy one database into another, use pg_dump and pg_restore", postgres.Redact(from))
	}
	path, err := app.StorePath(home, from)
	if err != nil {
		return err
	}
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("there is no store at %s to copy (BATON_HOME is %s): nothing to migrate", path, home)
	}
	if err := gatewayStopped(ctx, home, stopGW, out); err != nil {
		return err
	}

	src, err := app.OpenStore(ctx, home, from)
	if err != nil {
		return err
	}
	defer src.Close()
	source, ok := src.(migrate.Source)
	if !ok {
		return fmt.Errorf("the store at %s cannot be read out for a copy", path)
	}
	dst, err := postgres.Open(ctx, to)
	if err != nil {
		return err
	}
	defer dst.Close()

	fmt.Fprintf(out, "Copying %s into %s…\n", path, postgres.Redact(to))
	r, err := migrate.Run(ctx, source, dst)
	if err != nil && ctx.Err() != nil {
		if !r.Copied {
			return errors.New("stopped: nothing was copied, the Postgres database is as it was")
		}
		return errors.New("stopped after the copy, before its counts and checksums were compared: " +
			"to check it, make the database anew and run baton migrate again")
	}
	if errors.Is(err, store.ErrNotEmpty) {
		return fmt.Errorf("%w.\nbaton migrate copies into an empty database only, and leaves this one as it is. "+
			"To start over, make the database anew (dropdb then createdb, as its owner: every row in it is lost) "+
			"or name another one in --to", err)
	}
	if r.From != nil {
		fmt.Fprintln(out)
		if werr := r.Write(out, "sqlite", "postgres"); werr != nil && err == nil {
			err = werr
		}
		fmt.Fprintln(out)
	}
	if err != nil {
		if errors.Is(err, migrate.ErrDiffers) {
			return fmt.Errorf("%w. The Postgres database holds the copy as it came out: do not use it; make it anew and run baton migrate again, "+
				"and if it differs again, report it with the lines above", err)
		}
		return err
	}
	fmt.Fprintf(out, "Copied %s (%s) in %s; every count and checksum is the same on both sides.\n",
		plural.Count(len(r.Sessions), "session", "sessions"), plural.Count(int(r.Messages), "message", "messages"),
		r.Copy.Round(time.Millisecond))
	fmt.Fprintf(out, `
To use the copy, set the store in %s
(or BATON_STORE) to the URL you gave --to:

  store: %s

then start the gateway again. The SQLite store is left as it was, at
  %s
keep it as a backup until you are happy with the copy.
`, filepath.Join(home, "config.yaml"), withoutPassword(to), path)
	return nil
}

// withoutPassword is u with its password, if it has one, shown as
// <password>: fit to print as the line to put in config.yaml.
func withoutPassword(u string) string {
	p, err := url.Parse(u)
	if err != nil || p.User == nil {
		return postgres.Redact(u)
	}
	if _, ok := p.User.Password(); !ok {
		return postgres.Redact(u)
	}
	name := p.User.Username()
	p.User = nil
	scheme, rest, _ := strings.Cut(postgres.Redact(p.String()), "://")
	return scheme + "://" + url.User(name).String() + ":<password>@" + rest
}

// gatewayStopped refuses while a gateway answers on home's control
// socket, or with stop stops it, as baton gateway stop does.
func gatewayStopped(ctx context.Context, home string, stop bool, out io.Writer) error {
	status, err := control.NewClient(control.SocketPath(home)).Status(ctx)
	if errors.Is(err, control.ErrNoGateway) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("cannot tell whether a gateway runs on this home (%v): stop it (baton gateway stop) and try again", err)
	}
	if !stop {
		return fmt.Errorf("a gateway is running on this home (pid %d) and would go on writing to the SQLite store during the copy: "+
			"stop it first (baton gateway stop, or baton migrate --stop-gateway), then run baton migrate again", status.PID)
	}
	return stopGateway(ctx, home, out)
}
