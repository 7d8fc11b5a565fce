package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/baton-agent/baton/internal/app"
	"github.com/baton-agent/baton/internal/cli"
	"github.com/baton-agent/baton/internal/config"
	"github.com/baton-agent/baton/internal/gateway/control"
	"github.com/baton-agent/baton/internal/gateway/daemon"
	"github.com/baton-agent/baton/internal/platform/all"
	"github.com/baton-agent/baton/internal/store"
)

func newHandoff() *cobra.Command {
	var inHome, inThread bool
	cmd := &cobra.Command{
		Use:   "handoff SESSION PLACE",
		Short: "Move a session to a chat (web, telegram, …) from a script or another program",
		Long: `baton handoff moves a session to another place, as /handoff does in the
terminal: through the running gateway, which opens a new thread at the
place's home (--thread, the default; the home chat itself where the place
has no threads) or uses the home chat itself (--home), writes the handoff
note, greets you there and confirms. SESSION is an id prefix or a title (as with -r);
PLACE is one of ` + strings.Join(all.Names(), ", ") + `.

Progress goes to stderr; once the gateway confirms, one line on stdout
says where the session continues (with a link where the place has one).
The exit status is 0 only then. On anything else — an unknown place, one
not set up or not live, no home channel, a failed handoff — it says why
on stderr, exits 1, and the session stays where it was. Ctrl-C stops
waiting: a handoff no gateway has taken yet is withdrawn.

With no gateway running, baton asks whether to start one in the
background when stdin is a terminal; otherwise it says so and exits 1
(start one with ` + "`baton gateway`" + ` first). With the store on a Postgres
server and no gateway on this machine, the handoff waits in the store
for a gateway on another machine to take it (docs/DEPLOY.md).

To continue a session in the terminal, run baton -r SESSION instead.`,
		Example: `  baton handoff "trip plans" telegram
  baton handoff 3f2a web && echo moved`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			home, err := config.Home()
			if err != nil {
				return err
			}
			ctx, cancel := interruptible(cmd.Context())
			defer cancel()
			a, err := app.Open(ctx, home)
			if err != nil {
				return err
			}
			defer a.Close()
			var ask cli.Ask
			if cli.IsTerminal(os.Stdin) {
				ask = askLine(os.Stdin, cmd.ErrOrStderr())
			}
			return handoffSession(ctx, a, args[0], args[1], inHome, ask, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	cmd.Flags().BoolVar(&inHome, "home", false, "land in the place's home chat itself, not in a new thread there")
	cmd.Flags().BoolVar(&inThread, "thread", false, "land in a new thread at the place's home (the default; where the place has no threads, in the home chat)")
	cmd.MarkFlagsMutuallyExclusive("home", "thread")
	return cmd
}

// handoffSession is `baton handoff`: ref's session moved to place through
// the gateway, progress on errOut and the outcome on out.
func handoffSession(ctx context.Context, a *app.App, ref, place string, inHome bool, ask cli.Ask, out, errOut io.Writer) error {
	place = strings.ToLower(strings.TrimSpace(place))
	s, err := a.Resolve(ctx, ref)
	if err != nil {
		return err
	}
	if place == cli.TerminalPlatform || place == "terminal" {
		return fmt.Errorf("baton handoff moves a session to a chat; to continue it in the terminal, run `baton -r %s`", shortID(s.ID))
	}
	h := &cli.Handoffs{App: a, GatewayLog: filepath.Join(a.Home, daemon.LogFile), StartGateway: func(ctx context.Context) error {
		return daemon.StartBackground(ctx, a.Home)
	}}
	final, err := h.Move(ctx, control.HandoffRequest{SessionID: s.ID, From: fromPlatform(s), To: place, Home: inHome}, errOut, ask)
	if errors.Is(err, cli.ErrHandoffFailed) {
		if now, gerr := a.Store.GetSession(context.WithoutCancel(ctx), s.ID); gerr == nil && now.Holder != "" {
			return fmt.Errorf("%w; the session stays in %s", err, cli.PlaceOf(now.Holder))
		}
	}
	if err != nil {
		return err
	}
	// One line a script can read: the link last and alone at its end.
	if final.Link != "" {
		fmt.Fprintf(out, "Session %s continues in %s: %s\n", shortID(s.ID), cli.PlaceOf(final.Destination), final.Link)
	} else {
		fmt.Fprintf(out, "Session %s continues in %s.\n", shortID(s.ID), cli.PlaceOf(final.Destination))
	}
	return nil
}

// fromPlatform is the platform the session is in now: the one holding it,
// else the one it started on.
func fromPlatform(s store.Session) string {
	key := s.Holder
	if key == "" {
		key = s.Platform
	}
	p, _, _ := strings.Cut(key, ":")
	if p == "" {
		return cli.TerminalPlatform
	}
	return p
}

func shortID(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}

// askLine asks on w and reads the answer, one line, from r.
func askLine(r io.Reader, w io.Writer) cli.Ask {
	in := bufio.NewReader(r)
	return func(prompt string) (string, error) {
		fmt.Fprint(w, prompt)
		line, err := in.ReadString('\n')
		if err != nil && (line == "" || !errors.Is(err, io.EOF)) {
			return "", err
		}
		return strings.TrimSpace(line), nil
	}
}
