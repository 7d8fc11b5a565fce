// Package daemon assembles `baton gateway` from configuration: the store,
// the model, the enabled platforms and the gateway itself. It knows the
// platforms only through their specs (internal/platform/all).
package daemon

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/baton-agent/baton/internal/app"
	"github.com/baton-agent/baton/internal/gateway"
	"github.com/baton-agent/baton/internal/gateway/control"
	"github.com/baton-agent/baton/internal/platform"
	"github.com/baton-agent/baton/internal/platform/all"
	"github.com/baton-agent/baton/internal/plural"
	"github.com/baton-agent/baton/internal/store/postgres"
)

// LogFile is where a gateway started in the background writes its log.
const LogFile = "gateway.log"

// Options tune Run.
type Options struct {
	Out io.Writer // where the start-up summary goes
	Log io.Writer // where logs go (text); nil: Out
	Env func(string) string
}

// Run runs the gateway configured in home until ctx ends.
func Run(ctx context.Context, home string, o Options) error {
	if o.Out == nil {
		o.Out = os.Stdout
	}
	if o.Log == nil {
		o.Log = o.Out
	}
	if o.Env == nil {
		o.Env = os.Getenv
	}
	log := slog.New(slog.NewTextHandler(o.Log, &slog.HandlerOptions{Level: slog.LevelInfo}))
	// Before binding any port: a second gateway should hear that one runs,
	// not that its web port is taken.
	if s, err := control.NewClient(control.SocketPath(home)).Status(ctx); err == nil {
		return fmt.Errorf("%w (pid %d); `baton gateway status` shows it", gateway.ErrAlreadyRunning, s.PID)
	}
	a, err := app.Open(ctx, home)
	if err != nil {
		return err
	}
	defer a.Close()
	a.SetLogger(log)
	ag, err := a.NewAgent(nil)
	if err != nil {
		return err
	}
	gcfg := a.Config.Gateway.WithDefaults()
	as, err := assemble(ctx, all.Specs(), a.Config, environment{
		env:         o.Env,
		home:        home,
		storeFile:   a.StoreFile,
		log:         log,
		transcripts: gateway.Transcripts{Store: a.Store, OwnerID: a.Owner.ID, Display: displayNames(all.Specs())},
		memory: func(name string) platform.Memory {
			return gateway.PlatformMemory{Store: a.Store, Platform: name}
		},
	})
	if err != nil {
		return err
	}
	adapters := as.adapters
	// A platform that serves a page people open (the web chat) says where.
	var pageURL string
	for _, ad := range adapters {
		if p, ok := ad.(interface{ URL() string }); ok && pageURL == "" {
			pageURL = p.URL()
		}
	}

	var hears gateway.Transcriber
	if t, err := a.Transcriber(); err != nil {
		return err
	} else if t != nil { // a nil *voice.Transcriber would be a non-nil interface
		hears = t
	}
	var speaks gateway.Speaker
	if sp, err := a.Speaker(); err != nil {
		return err
	} else if sp != nil {
		speaks = sp
	}
	// A store on a Postgres server may be shared by several gateways.
	_, onServer := a.Store.(*postgres.Store)
	gw, err := gateway.New(gateway.Config{
		Store:             a.Store,
		Agent:             ag,
		Adapters:          adapters,
		OwnerID:           a.Owner.ID,
		Owners:            gcfg.Owners,
		TrustedPlatforms:  as.trusted,
		Shared:            onServer,
		SharedPlatforms:   as.shared,
		PersonalPlatforms: as.personal,
		Homes:             as.homes,
		Display:           as.display,
		Places:            all.Names(),
		Socket:            control.SocketPath(home),
		Lease:             gcfg.HandoffLease,
		PollEvery:         gcfg.PollEvery,
		ShutdownGrace:     gcfg.ShutdownGrace,
		OfferWithin:       gcfg.ContinueOffer,
		Rate:              gateway.Rate{Burst: gcfg.Rate.Burst, Every: gcfg.Rate.Every},
		MaxSessionFiles:   a.Config.Files.MaxSessionBytes,
		Transcriber:       hears,
		Speaker:           speaks,
		Spoken:            a.Config.Voice.Spoken,
		Log:               log,
		WebURL:            pageURL,
	})
	if err != nil {
		return err
	}
	var names []string
	for _, a := range adapters {
		names = append(names, a.Name())
	}
	fmt.Fprintf(o.Out, "baton gateway — model: %s — platforms: %s\n", a.ModelLabel(), strings.Join(names, ", "))
	if pageURL != "" {
		fmt.Fprintf(o.Out, "Web chat: %s\n", pageURL)
	}
	if len(names) > 0 {
		fmt.Fprintf(o.Out, "In the terminal, /handoff %s moves a chat here. Stop with Ctrl-C.\n", names[0])
	} else {
		fmt.Fprintln(o.Out, "No platform is enabled (see README.md, Configuration). Stop with Ctrl-C.")
	}
	return gw.Run(ctx)
}

// PrintStatus writes what the running gateway reports, or how to start one.
func PrintStatus(ctx context.Context, home string, out io.Writer) error {
	s, err := control.NewClient(control.SocketPath(home)).Status(ctx)
	if errors.Is(err, control.ErrNoGateway) {
		fmt.Fprintln(out, "No gateway is running. Start one with: baton gateway")
		return err
	}
	if err != nil {
		return err
	}
	writeStatus(out, s, time.Now())
	return nil
}

// writeStatus words a running gateway's status for people.
func writeStatus(out io.Writer, s control.Status, now time.Time) {
	fmt.Fprintf(out, "Gateway running (pid %d, since %s)\n", s.PID, s.Started.Format(time.DateTime))
	sort.Slice(s.Platforms, func(i, j int) bool { return s.Platforms[i].Name < s.Platforms[j].Name })
	for _, p := range s.Platforms {
		home := homeAsWritten(all.Specs(), p.Home)
		if home == "" {
			home = "no home channel (type /sethome there)"
		}
		fmt.Fprintf(out, "  %-10s %s\n", p.Name, platformState(p, now))
		fmt.Fprintf(out, "  %-10s home: %s\n", "", home)
		if p.Waiting > 0 {
			fmt.Fprintf(out, "  %-10s %s to be sent\n", "", plural.Count(p.Waiting, "reply waits", "replies wait"))
		}
	}
	if s.WebURL != "" {
		fmt.Fprintf(out, "Web chat: %s\n", s.WebURL)
	}
	if len(s.Replicas) > 0 {
		fmt.Fprintf(out, "Replicas sharing the store: %d\n", len(s.Replicas))
	}
	for _, r := range s.Replicas {
		leads := "leads nothing"
		if len(r.Leads) > 0 {
			leads = "leads " + strings.Join(r.Leads, ", ")
		}
		self := ""
		if r.Self {
			self = " (this one)"
		}
		if r.Gone {
			leads = "gone (stopped, or cut off from the store)"
		}
		fmt.Fprintf(out, "  %s%s on %s, pid %d, since %s, seen %s ago; %s\n", r.ID, self, r.Host, r.PID,
			r.Started.Format(time.DateTime), now.Sub(r.Seen).Round(time.Second), leads)
	}
}

// StartBackground starts `baton gateway` as a detached process logging to
// $home/gateway.log, and waits until it answers on its socket.
func StartBackground(ctx context.Context, home string) error {
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find the baton binary: %w", err)
	}
	logf, err := os.OpenFile(filepath.Join(home, LogFile), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("open gateway log: %w", err)
	}
	defer logf.Close()
	cmd := exec.Command(exe, "gateway")
	cmd.Env = append(os.Environ(), "BATON_HOME="+home)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true} // outlives the terminal
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start gateway: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	c := control.NewClient(control.SocketPath(home))
	deadline := time.After(15 * time.Second)
	for {
		if _, err := c.Status(ctx); err == nil {
			return nil
		}
		select {
		case err := <-exited:
			return fmt.Errorf("the gateway exited at start (%v); see %s", err, filepath.Join(home, LogFile))
		case <-deadline:
			return fmt.Errorf("the gateway did not answer within 15s; see %s", filepath.Join(home, LogFile))
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// platformState is one platform's state for people: "live", "down since
// 14:02, next try in 30s: reason", "refused: reason".
func platformState(p control.Platform, now time.Time) string {
	if p.LedBy != "" {
		return "read by replica " + p.LedBy
	}
	state := p.State
	if state == "" { // a gateway from before states were reported
		state = "down"
		if p.Live {
			state = "live"
		}
	}
	out := state
	if !p.Since.IsZero() && state != "live" {
		out += " since " + p.Since.Local().Format(time.TimeOnly)
	}
	if state == "down" && !p.NextTry.IsZero() {
		out += fmt.Sprintf(", next try in %s", max(p.NextTry.Sub(now), 0).Round(time.Second))
	}
	if p.Error != "" {
		out += ": " + p.Error
	}
	return out
}

// displayNames maps each platform to the name people know it by.
func displayNames(specs []platform.Spec) map[string]string {
	out := map[string]string{}
	for _, s := range specs {
		if s.Display != "" {
			out[s.Name] = s.Display
		}
	}
	return out
}
