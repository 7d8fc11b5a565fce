package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/baton-agent/baton/internal/app"
	"github.com/baton-agent/baton/internal/cli"
	"github.com/baton-agent/baton/internal/config"
	"github.com/baton-agent/baton/internal/gateway/control"
	"github.com/baton-agent/baton/internal/gateway/daemon"
	"github.com/baton-agent/baton/internal/platform/all"
	"github.com/baton-agent/baton/internal/platform/web"
	"github.com/baton-agent/baton/internal/store"
)

type chatOptions struct {
	continueLatest bool
	version        bool
	resume         string
	print          string
	files          []string
}

// maxStdin bounds a prompt piped on stdin.
const maxStdin = 8 << 20

func runChat(ctx context.Context, o chatOptions, stdout, stderr io.Writer) error {
	home, err := config.Home()
	if err != nil {
		return err
	}
	oneShot := o.print != "" || len(o.files) > 0 || !cli.IsTerminal(os.Stdin)
	if oneShot {
		var cancel context.CancelFunc
		ctx, cancel = interruptible(ctx)
		defer cancel()
	}
	a, err := app.Open(ctx, home)
	if err != nil {
		return err
	}
	defer a.Close()

	sessionID, err := pickSession(ctx, a, o, stderr)
	if err != nil {
		return err
	}
	if oneShot {
		text := o.print
		if !cli.IsTerminal(os.Stdin) {
			piped, err := io.ReadAll(io.LimitReader(os.Stdin, maxStdin))
			if err != nil {
				return fmt.Errorf("read stdin: %w", err)
			}
			if s := strings.TrimSpace(string(piped)); s != "" {
				text = strings.TrimSpace(text + "\n\n" + s)
			}
		}
		return cli.Once(ctx, a, sessionID, text, o.files, stdout, stderr)
	}

	handoff, startup := terminalHooks(a)
	repl, err := cli.New(cli.Config{
		App:       a,
		Out:       stdout,
		TTY:       cli.IsTerminal(os.Stdout),
		Width:     cli.WidthOf(os.Stdout),
		SessionID: sessionID,
		Handoff:   handoff,
		Startup:   startup,
		HandoffTargets: func(ctx context.Context) []string {
			return handoffTargets(ctx, a)
		},
	})
	if err != nil {
		return err
	}
	finished := make(chan struct{})
	defer close(finished)
	go exitWhenStopped(ctx, finished, cli.SaveTerminal(os.Stdin))
	return repl.Run(ctx)
}

// stopGrace is how long a SIGTERM'd chat gets to finish by itself: a
// running turn stores what it has and the REPL returns.
const stopGrace = 2 * time.Second

// exitWhenStopped ends the process after SIGTERM/SIGHUP if the REPL does
// not return by itself: a read waiting for a key cannot be interrupted, so
// at an idle prompt the signal would otherwise go unheeded. The terminal's
// modes are restored first, since the line editor may have it in raw mode.
func exitWhenStopped(ctx context.Context, finished <-chan struct{}, restore func()) {
	select {
	case <-finished:
		return
	case <-ctx.Done():
	}
	t := time.NewTimer(stopGrace)
	defer t.Stop()
	select {
	case <-finished:
	case <-t.C:
		restore()
		fmt.Fprintln(os.Stderr, "\nbaton: stopped")
		os.Exit(143)
	}
}

// pickSession is the session -c or -r names, "" for a new one.
func pickSession(ctx context.Context, app *app.App, o chatOptions, stderr io.Writer) (string, error) {
	switch {
	case o.resume != "":
		s, err := app.Resolve(ctx, o.resume)
		if err != nil {
			return "", err
		}
		return s.ID, nil
	case o.continueLatest:
		s, err := cli.LastChatted(ctx, app)
		if errors.Is(err, store.ErrNotFound) {
			fmt.Fprintln(stderr, "baton: no earlier session, starting a new one")
			return "", nil
		}
		if err != nil {
			return "", err
		}
		return s.ID, nil
	}
	return "", nil
}

// terminalHooks connects the REPL to the gateway: /handoff asks the
// running gateway (offering to start one), and at start the sessions
// handed back to the terminal are offered.
func terminalHooks(app *app.App) (cli.HandoffFunc, cli.StartupFunc) {
	h := &cli.Handoffs{App: app, GatewayLog: filepath.Join(app.Home, daemon.LogFile), StartGateway: func(ctx context.Context) error {
		return daemon.StartBackground(ctx, app.Home)
	}}
	return h.Handoff, h.Startup
}

// handoffTargets are the platforms /handoff can name: those of the running
// gateway, or with none answering those a gateway started now would have.
func handoffTargets(ctx context.Context, a *app.App) []string {
	status, err := control.NewClient(control.SocketPath(a.Home)).Status(ctx)
	if err != nil || len(status.Platforms) == 0 {
		homes, _ := a.Store.HomeChannels(ctx)
		return setUpPlatforms(a.Home, homes)
	}
	names := make([]string, 0, len(status.Platforms))
	for _, p := range status.Platforms {
		names = append(names, p.Name)
	}
	return names
}

// setUpPlatforms are the platforms set up for a gateway, in its order:
// the web chat unless switched off (it needs no setup), and every other
// platform with a section in config.yaml that does not say enabled:
// false, or with a home channel (in config.yaml, or set by /sethome and
// kept in the store: stored). One set up only in the environment and never given a home is
// not known without opening it, which would connect or listen; /handoff
// still takes its name.
func setUpPlatforms(home string, stored map[string]string) []string {
	cfg, err := config.Load(home)
	if err != nil {
		return nil
	}
	var out []string
	for _, name := range all.Names() {
		n, present := cfg.Platforms[name]
		switch {
		case present && switchedOff(n):
		case present, name == web.Name, cfg.Gateway.Homes[name] != "", stored[name] != "":
			out = append(out, name)
		}
	}
	return out
}

// switchedOff reports whether a platform's section says enabled: false.
func switchedOff(section yaml.Node) bool {
	var s struct {
		Enabled *bool `yaml:"enabled"`
	}
	return section.Decode(&s) == nil && s.Enabled != nil && !*s.Enabled
}
