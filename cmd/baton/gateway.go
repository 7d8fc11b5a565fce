package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/baton-agent/baton/internal/config"
	"github.com/baton-agent/baton/internal/gateway/control"
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
			err = daemon.PrintStatus(cmd.Context(), home, cmd.OutOrStdout())
			if errors.Is(err, control.ErrNoGateway) {
				return shown{err} // PrintStatus said so in a sentence
			}
			return err
		},
	})
	cmd.AddCommand(&cobra.Command{
		Use:   "stop",
		Short: "Stop the running gateway; it lets running answers finish first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			home, err := config.Home()
			if err != nil {
				return err
			}
			ctx, cancel := interruptible(cmd.Context())
			defer cancel()
			return stopGateway(ctx, home, cmd.OutOrStdout())
		},
	})
	return cmd
}

// stopPoll is how often `baton gateway stop` asks whether the gateway is gone.
const stopPoll = 100 * time.Millisecond

// stopGateway sends SIGTERM to the gateway answering on home's socket and
// waits until it stops answering: its shutdown grace plus a margin.
func stopGateway(ctx context.Context, home string, out io.Writer) error {
	c := control.NewClient(control.SocketPath(home))
	status, err := c.Status(ctx)
	if errors.Is(err, control.ErrNoGateway) {
		fmt.Fprintln(out, "No gateway is running.")
		return nil
	}
	if err != nil {
		return err
	}
	p, err := os.FindProcess(status.PID)
	if err == nil {
		err = p.Signal(syscall.SIGTERM)
	}
	if err != nil {
		return fmt.Errorf("stop the gateway (pid %d): %w", status.PID, err)
	}
	fmt.Fprintf(out, "Stopping the gateway (pid %d); running answers may finish first…\n", status.PID)
	grace := config.GatewayConfig{}.WithDefaults().ShutdownGrace
	if cfg, err := config.Load(home); err == nil {
		grace = cfg.Gateway.WithDefaults().ShutdownGrace
	}
	wait, cancel := context.WithTimeout(ctx, grace+10*time.Second)
	defer cancel()
	tick := time.NewTicker(stopPoll)
	defer tick.Stop()
	for {
		if _, err := c.Status(wait); errors.Is(err, control.ErrNoGateway) {
			fmt.Fprintln(out, "Gateway stopped.")
			return nil
		}
		select {
		case <-wait.Done():
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("the gateway (pid %d) is still stopping; `baton gateway status` tells when it is gone", status.PID)
		case <-tick.C:
		}
	}
}
