package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/baton-agent/baton/internal/app"
	"github.com/baton-agent/baton/internal/gateway/control"
	"github.com/baton-agent/baton/internal/place"
	"github.com/baton-agent/baton/internal/platform/all"
	"github.com/baton-agent/baton/internal/store"
)

// TerminalPlatform is the destination name of handoffs back to the terminal.
const TerminalPlatform = Platform

// Handoffs is the terminal's side of handoffs: asking the running gateway
// to move a session elsewhere, and picking up sessions handed back here.
type Handoffs struct {
	App *app.App
	// StartGateway starts a gateway in the background; nil means the
	// terminal only says how to start one.
	StartGateway func(ctx context.Context) error
	// GatewayLog is the file a gateway started by StartGateway logs to,
	// named when it starts; "" names none.
	GatewayLog string
	// LostWait is how long to keep watching the store when the gateway
	// goes away mid-handoff (its lease may run out and a restarted gateway
	// retry it); 0: two minutes.
	LostWait time.Duration
	// Poll is how often the store is read meanwhile; 0: 500ms, or with
	// a store that signals (see moveThroughStore) the configured
	// gateway.poll_every, else 2s.
	Poll time.Duration
	// PickupWait is how long a handoff waits in a shared store for a
	// gateway before the terminal says what to check; 0: 10s.
	PickupWait time.Duration
}

// Sentinel errors of a handoff.
var (
	// ErrUnknownPlace is a handoff to a name that is no place baton knows.
	ErrUnknownPlace = place.ErrUnknown
	// ErrHandoffFailed is a handoff the gateway tried and gave up.
	ErrHandoffFailed = errors.New("the handoff failed")
)

// Ask puts a question to the person and returns their answer.
type Ask func(prompt string) (string, error)

func (h *Handoffs) client() *control.Client {
	return control.NewClient(control.SocketPath(h.App.Home))
}

// Handoff moves the session to platform through the gateway, writing
// progress to out. detach is true only once the gateway has confirmed the
// session is live at its destination; on every other outcome the person
// stays in the session here, told plainly what is known.
func (h *Handoffs) Handoff(ctx context.Context, sessionID, platform string, out io.Writer, ask Ask) (detach bool, err error) {
	platform = strings.ToLower(strings.TrimSpace(platform))
	switch platform {
	case "":
		return false, errors.New("usage: /handoff <platform>, e.g. /handoff web or /handoff telegram")
	case TerminalPlatform, "terminal":
		return false, errors.New("this conversation is already in the terminal")
	}
	final, err := h.Move(ctx, control.HandoffRequest{SessionID: sessionID, From: TerminalPlatform, To: platform}, out, ask)
	if errors.Is(err, ErrHandoffFailed) {
		return false, fmt.Errorf("%w — you are still here, in the same session", err)
	}
	if err != nil {
		return false, err
	}
	fmt.Fprintf(out, "This conversation now continues in %s.\n", placeOf(final.Destination))
	if final.Link != "" {
		fmt.Fprintf(out, "Open it: %s\n", hyperlink(out, final.Link))
	}
	fmt.Fprintf(out, "To come back: type /continue or /handoff cli there, or run `baton -c` here. This terminal is detaching; the session goes on.\n")
	return true, nil
}

// Move hands req's session, now in req.From (a platform name), over to
// req.To through the running gateway, offering to start one through ask
// (nil: only say how). It writes progress to out and returns the
// handoff's end once the gateway confirms it completed; every other
// outcome is an error saying what is known (a failed handoff wraps
// ErrHandoffFailed), and the session stays where it was.
func (h *Handoffs) Move(ctx context.Context, req control.HandoffRequest, out io.Writer, ask Ask) (control.Progress, error) {
	sessionID, platform := req.SessionID, req.To
	if !slices.Contains(all.Names(), platform) {
		return control.Progress{}, place.Unknown(platform, TerminalPlatform, all.Names())
	}
	c := h.client()
	status, err := c.Status(ctx)
	if errors.Is(err, control.ErrNoGateway) {
		if sig, ok := control.SignalsOf(h.App.Store); ok {
			// The desk and the server: no gateway here, a store shared
			// with the machine that runs one.
			return h.moveThroughStore(ctx, sig, req, out)
		}
		if status, err = h.offerGateway(ctx, out, ask); err != nil {
			return control.Progress{}, err
		}
	} else if err != nil {
		return control.Progress{}, err
	}
	p, ok := status.Platform(platform)
	switch {
	case !ok:
		var names []string
		for _, p := range status.Platforms {
			names = append(names, p.Name)
		}
		return control.Progress{}, errors.New(place.NotSetUp(placeOf(platform), names))
	case !p.Live && p.Error == "":
		return control.Progress{}, fmt.Errorf("%s is still starting in the gateway; try again in a moment (`baton gateway status` shows when it is live)", platform)
	case !p.Live:
		return control.Progress{}, fmt.Errorf("%s is enabled but not running in the gateway: %s (see `baton gateway status`)", platform, p.Error)
	case p.Home == "":
		return control.Progress{}, fmt.Errorf("%s has no home channel: type /sethome in the %s chat where handoffs should land, or set gateway.homes.%s in config.yaml", platform, platform, platform)
	}
	hf, err := c.RequestHandoff(ctx, req)
	lost := false
	if errors.Is(err, control.ErrLostGateway) && ctx.Err() == nil {
		// It went away while asked: whether it recorded the handoff first
		// is in the store. A recorded one will be carried out by the next
		// gateway, so the terminal follows it there rather than say it
		// failed and stay — the session would then live in two places.
		if hf, lost = h.recorded(ctx, sessionID); !lost {
			return control.Progress{}, fmt.Errorf("the gateway stopped before taking the handoff (%w); nothing was recorded, and the session stays where it was. Start it again with `baton gateway`, then hand off again", err)
		}
		err = nil
	}
	if err != nil {
		return control.Progress{}, err
	}
	var final control.Progress
	var werr error
	if lost {
		fmt.Fprintf(out, "Lost contact with the gateway while asking for the handoff, after it was recorded. Waiting to see whether it is carried out or fails (Ctrl-C stops waiting)…\n")
		final, werr = h.waitInStore(ctx, hf.ID)
	} else {
		fmt.Fprintf(out, "Handing off to %s…\n", platform)
		final, werr = c.Watch(ctx, hf.ID, func(p control.Progress) {
			if !p.Terminal() && p.Step != "current state" && p.Step != "requested" {
				fmt.Fprintf(out, "  %s\n", p.Step)
			}
		})
	}
	if werr != nil && ctx.Err() == nil && !lost {
		fmt.Fprintf(out, "Lost contact with the gateway mid-handoff. Waiting to see whether it is retried or fails (Ctrl-C stops waiting)…\n")
		final, werr = h.waitInStore(ctx, hf.ID)
	}
	if werr != nil {
		// Stopped waiting: settle it in the store, so what is said is
		// what happened.
		if final, werr = h.settle(context.WithoutCancel(ctx), hf.ID); werr != nil {
			return control.Progress{}, werr
		}
	}
	if final.State == string(store.HandoffFailed) {
		return control.Progress{}, fmt.Errorf("%w: %s", ErrHandoffFailed, final.Error)
	}
	return final, nil
}

// errNobodyTook is a handoff no gateway took while the terminal waited.
var errNobodyTook = errors.New("no gateway took the handoff")

// moveThroughStore hands req's session over with no gateway on this
// machine, through a store other machines share (store.Signals): the
// handoff is recorded there and every gateway signalled; one running
// req.To takes it, and its progress comes back as signals. The store is
// read every poll interval as the fallback. While nothing takes it the
// terminal says what to check; after LostWait it withdraws it.
func (h *Handoffs) moveThroughStore(ctx context.Context, sig store.Signals, req control.HandoffRequest, out io.Writer) (control.Progress, error) {
	// Listening before the request: no step can fall between the two.
	lctx, stopListening := context.WithCancel(ctx)
	defer stopListening()
	progress, err := sig.Listen(lctx, control.TopicProgress)
	if err != nil {
		return control.Progress{}, fmt.Errorf("no gateway runs on this machine, and the store cannot carry the handoff to one elsewhere: %w", err)
	}
	dest := ""
	if req.Home {
		if dest = h.homeOf(ctx, req.To); dest == "" {
			return control.Progress{}, fmt.Errorf("%s has no home channel in the store: type /sethome in the %s chat where handoffs should land", req.To, req.To)
		}
	}
	hf, err := h.App.Store.RequestHandoffTo(ctx, req.SessionID, req.From, req.To, dest)
	if errors.Is(err, store.ErrHandoffInFlight) {
		return control.Progress{}, errors.New("a handoff of this session is already under way")
	} else if err != nil {
		return control.Progress{}, fmt.Errorf("record the handoff: %w", err)
	}
	fmt.Fprintf(out, "Handing off to %s: no gateway runs on this machine, so the handoff waits in the store for a gateway elsewhere to take it…\n", placeOf(req.To+":"))
	if err := sig.Notify(ctx, control.TopicHandoffs, control.HandoffPayload(hf.ID)); err != nil {
		fmt.Fprintf(out, "  (no gateway could be signalled: %v; one finds the handoff in the store within its poll interval)\n", err)
	}
	final, err := h.follow(ctx, hf.ID, req.To, progress, out)
	if errors.Is(err, errNobodyTook) {
		fmt.Fprintf(out, "No gateway took it within %s.\n", h.lostWait())
	}
	if err != nil {
		// Stopped waiting: settle it in the store (one nobody took is
		// withdrawn), so what is said is what happened.
		if final, err = h.settle(context.WithoutCancel(ctx), hf.ID); err != nil {
			return control.Progress{}, err
		}
	}
	if final.State == string(store.HandoffFailed) {
		return control.Progress{}, fmt.Errorf("%w: %s", ErrHandoffFailed, final.Error)
	}
	return final, nil
}

// follow follows handoff id, asked for through the store, until it ends:
// its steps as the gateway signals them, the store read on each
// connection lost and every poll interval. It returns errNobodyTook when
// no gateway took it within LostWait, ctx's error when ctx ended.
func (h *Handoffs) follow(ctx context.Context, id int64, to string, progress <-chan store.Signal, out io.Writer) (control.Progress, error) {
	tick := time.NewTicker(h.storePoll())
	defer tick.Stop()
	pickupWait := h.PickupWait
	if pickupWait <= 0 {
		pickupWait = 10 * time.Second
	}
	unclaimed := time.NewTimer(pickupWait)
	defer unclaimed.Stop()
	giveUp := time.NewTimer(h.lostWait())
	defer giveUp.Stop()
	taken, told := false, false
	// read reads the handoff from the store: done once it ended.
	read := func() (control.Progress, bool) {
		hf, err := h.App.Store.GetHandoff(ctx, id)
		if err != nil {
			return control.Progress{}, false
		}
		if hf.State != store.HandoffPending || hf.Attempts > 0 {
			taken = true
		}
		if !hf.State.Terminal() {
			return control.Progress{}, false
		}
		return control.Progress{HandoffID: id, State: string(hf.State), Destination: hf.Destination, Error: hf.Error}, true
	}
	for {
		select {
		case <-ctx.Done():
			return control.Progress{}, ctx.Err()
		case s, ok := <-progress:
			if !ok {
				progress = nil // ctx ends: said next
				continue
			}
			if s.Missed {
				if p, done := read(); done {
					return p, nil
				}
				continue
			}
			p, err := control.ParseProgress(s.Payload)
			if err != nil || p.HandoffID != id {
				continue
			}
			taken = true
			if p.Terminal() {
				return p, nil
			}
			if p.Step != "" && p.Step != "requested" && p.Step != "current state" {
				fmt.Fprintf(out, "  %s\n", p.Step)
			}
		case <-tick.C:
			if p, done := read(); done {
				return p, nil
			}
		case <-unclaimed.C:
			if _, done := read(); !taken && !done {
				fmt.Fprint(out, nobodyYet(to, pickupWait))
				told = true
			}
		case <-giveUp.C:
			if p, done := read(); done {
				return p, nil
			}
			if !taken {
				if !told {
					fmt.Fprint(out, nobodyYet(to, h.lostWait()))
				}
				return control.Progress{}, errNobodyTook
			}
			// Taken: the gateway finishes or fails it, or its lease ends
			// and another retries it; keep following.
		}
	}
}

// nobodyYet is what the terminal says when no gateway has taken a
// handoff waiting in the store for wait: what to check, where.
func nobodyYet(to string, wait time.Duration) string {
	return fmt.Sprintf("No gateway has taken it after %s. On the machine that runs `baton gateway`, check that:\n"+
		"  - the gateway runs there (`baton gateway status`), with this same store (store: in its config.yaml, or BATON_STORE);\n"+
		"  - %s is enabled and live in it, with a home channel (/sethome in the chat where handoffs should land, or gateway.homes.%s).\n"+
		"Still waiting (Ctrl-C stops; a handoff no gateway took is withdrawn)…\n", wait, to, to)
}

// homeOf is the platform's home channel: set by /sethome (in the store),
// else named in this machine's config.yaml.
func (h *Handoffs) homeOf(ctx context.Context, platform string) string {
	if homes, err := h.App.Store.HomeChannels(ctx); err == nil && homes[platform] != "" {
		return homes[platform]
	}
	return h.App.Config.Gateway.Homes[platform]
}

// storePoll is how often a terminal following a handoff through the
// store reads it, signals being what wakes it first.
func (h *Handoffs) storePoll() time.Duration {
	switch {
	case h.Poll > 0:
		return h.Poll
	case h.App.Config.Gateway.PollEvery > 0:
		return h.App.Config.Gateway.PollEvery
	}
	return 2 * time.Second
}

// lostWait is how long to wait for a gateway that may yet act.
func (h *Handoffs) lostWait() time.Duration {
	if h.LostWait > 0 {
		return h.LostWait
	}
	return 2 * time.Minute
}

// offerGateway is what happens when no gateway runs: offer to start one.
func (h *Handoffs) offerGateway(ctx context.Context, out io.Writer, ask Ask) (control.Status, error) {
	how := errors.New("no gateway is running: start one with `baton gateway` (in another terminal, or in the background), then /handoff again")
	if h.StartGateway == nil || ask == nil {
		return control.Status{}, how
	}
	answer, err := ask("No gateway is running. Start one in the background now? [y/N] ")
	if err != nil || !strings.HasPrefix(strings.ToLower(strings.TrimSpace(answer)), "y") {
		return control.Status{}, how
	}
	if h.GatewayLog != "" {
		fmt.Fprintf(out, "Starting the gateway (its log: %s)…\n", h.GatewayLog)
	} else {
		fmt.Fprintln(out, "Starting the gateway…")
	}
	if err := h.StartGateway(ctx); err != nil {
		return control.Status{}, err
	}
	// It answers before its platforms are up; give them a moment.
	deadline := time.Now().Add(15 * time.Second)
	for {
		s, err := h.client().Status(ctx)
		if err != nil || allLive(s) || time.Now().After(deadline) {
			return s, err
		}
		select {
		case <-ctx.Done():
			return s, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func allLive(s control.Status) bool {
	for _, p := range s.Platforms {
		if !p.Live {
			return false
		}
	}
	return true
}

// waitInStore follows a handoff in the store after the gateway went away.
func (h *Handoffs) waitInStore(ctx context.Context, id int64) (control.Progress, error) {
	wait, poll := h.lostWait(), h.Poll
	if poll <= 0 {
		poll = 500 * time.Millisecond
	}
	deadline := time.Now().Add(wait)
	for {
		hf, err := h.App.Store.GetHandoff(ctx, id)
		if err == nil && hf.State.Terminal() {
			return control.Progress{HandoffID: id, State: string(hf.State), Destination: hf.Destination, Error: hf.Error}, nil
		}
		if ctx.Err() != nil || time.Now().After(deadline) {
			return control.Progress{}, errors.New("stopped waiting")
		}
		select {
		case <-ctx.Done():
		case <-time.After(poll):
		}
	}
}

// recorded finds the handoff of sessionID in flight, if a gateway recorded
// one before it went away.
func (h *Handoffs) recorded(ctx context.Context, sessionID string) (control.Handoff, bool) {
	hf, err := h.App.Store.HandoffState(ctx, sessionID)
	if err != nil || (hf.State != store.HandoffPending && hf.State != store.HandoffRunning) {
		return control.Handoff{}, false
	}
	return control.Handoff{ID: hf.ID}, true
}

// settle decides a handoff the terminal stopped waiting for: one that
// finished meanwhile is reported as it ended; one no gateway has taken yet
// is withdrawn (failed), so it can no longer move the session behind the
// person's back; one a gateway is carrying out is reported as such.
func (h *Handoffs) settle(ctx context.Context, id int64) (control.Progress, error) {
	hf, err := h.App.Store.GetHandoff(ctx, id)
	if err != nil {
		return control.Progress{}, fmt.Errorf("handoff %d: %w", id, err)
	}
	// Only one that never reached a destination is withdrawn: a retried
	// one may already be bound and greeted there, and is finished by its
	// next claim.
	if hf.State == store.HandoffPending && hf.Destination == "" && hf.Attempts == 0 {
		claimer := fmt.Sprintf("cli:%d", os.Getpid())
		if _, ok, err := h.App.Store.ClaimHandoff(ctx, id, claimer, time.Minute); err == nil && ok {
			if ok, err := h.App.Store.FailHandoff(ctx, id, claimer, "withdrawn in the terminal"); err == nil && ok {
				return control.Progress{}, fmt.Errorf("handoff %d withdrawn before any gateway took it: you are still here, in the same session", id)
			}
		}
		if hf, err = h.App.Store.GetHandoff(ctx, id); err != nil {
			return control.Progress{}, fmt.Errorf("handoff %d: %w", id, err)
		}
	}
	if hf.State.Terminal() {
		return control.Progress{HandoffID: id, State: string(hf.State), Destination: hf.Destination, Error: hf.Error}, nil
	}
	return control.Progress{}, fmt.Errorf("handoff %d is not confirmed: a gateway is carrying it out and will finish it or fail it (after at most %d attempts). You are still here for now; `baton gateway status` shows the gateway, `baton sessions show` the session", id, store.MaxHandoffAttempts)
}

// Waiting lists the owner's sessions handed off to the terminal, oldest first.
func (h *Handoffs) Waiting(ctx context.Context) ([]store.Handoff, error) {
	pending, err := h.App.Store.PendingHandoffs(ctx, TerminalPlatform)
	if err != nil {
		return nil, fmt.Errorf("list handoffs to the terminal: %w", err)
	}
	var out []store.Handoff
	for _, p := range pending {
		if s, err := h.App.Store.GetSession(ctx, p.SessionID); err == nil && s.OwnerID == h.App.Owner.ID {
			out = append(out, p)
		}
	}
	return out, nil
}

// stopWait bounds how long a pick-up waits for the turn it stopped to end.
const stopWait = 30 * time.Second

// PickUp takes a handoff to the terminal: claimed, its note written, and
// completed here, so it is no longer waiting; the place that held the
// session is told it left. It returns the session.
func (h *Handoffs) PickUp(ctx context.Context, hf store.Handoff) (store.Session, error) {
	claimer := fmt.Sprintf("cli:%d", os.Getpid())
	var before string // the holder the session leaves
	if s, err := h.App.Store.GetSession(ctx, hf.SessionID); err == nil {
		before = s.Holder
	}
	_, ok, err := h.App.Store.ClaimHandoff(ctx, hf.ID, claimer, time.Minute)
	if err != nil {
		return store.Session{}, fmt.Errorf("pick up handoff %d: %w", hf.ID, err)
	}
	if !ok {
		return store.Session{}, fmt.Errorf("handoff %d was picked up elsewhere", hf.ID)
	}
	// A turn still running where the session is (the gateway answering
	// in a chat or the page) stops first: its answer so far is stored
	// once, marked, before the note, and it can no longer answer into a
	// session the terminal holds. Claimed first, so that place runs no
	// new turn meanwhile. One that does not stop within stopWait (waiting
	// for an approval there) is left to end on its own.
	if g := h.App.TurnGuard(); g != nil {
		_, _ = g.Stop(ctx, hf.SessionID, h.App.TerminalKey(), stopWait)
	}
	// The note is stored before the handoff completes, as the gateway's
	// worker does; the REPL shows it once the session is entered.
	if _, err := notes(h.App, nil).ForHandoff(ctx, hf); err != nil {
		return store.Session{}, fmt.Errorf("pick up handoff %d: %w", hf.ID, err)
	}
	ok, err = h.App.Store.SetHandoffDestination(ctx, hf.ID, claimer, h.App.TerminalKey())
	if err == nil && ok {
		ok, err = h.App.Store.CompleteHandoff(ctx, hf.ID, claimer)
	}
	if err != nil {
		return store.Session{}, fmt.Errorf("pick up handoff %d: %w", hf.ID, err)
	}
	if !ok {
		return store.Session{}, fmt.Errorf("handoff %d was taken over elsewhere while being picked up", hf.ID)
	}
	if sig, ok := control.SignalsOf(h.App.Store); ok {
		// Whoever follows the session on other machines (a terminal open
		// on it) hears it moved now, not at its next read.
		_ = sig.Notify(ctx, control.TopicProgress, control.ProgressPayload(control.Progress{
			HandoffID: hf.ID, State: string(store.HandoffCompleted), Step: "completed", Destination: h.App.TerminalKey()}))
	}
	tellLeft(ctx, h.App, hf.ID, before)
	return h.App.Store.GetSession(ctx, hf.SessionID)
}

// Describe is one line about a waiting handoff, for the start-up list.
func (h *Handoffs) Describe(ctx context.Context, hf store.Handoff) string {
	s, err := h.App.Store.GetSession(ctx, hf.SessionID)
	title := hf.SessionID
	if err == nil && s.Title != "" {
		title = fmt.Sprintf("%q", s.Title)
	} else if len(title) > 8 {
		title = "session " + title[:8]
	}
	from := "a chat"
	if hf.FromPlatform != "" {
		from = placeOf(hf.FromPlatform + ":")
	}
	return fmt.Sprintf("%s, handed off from %s %s ago", title, from, time.Since(hf.RequestedAt).Round(time.Second))
}

// Startup is the REPL's StartupFunc: it lists sessions handed off to the
// terminal and, on one keypress, continues the first (or the one whose
// number is typed) here.
func (h *Handoffs) Startup(ctx context.Context, out io.Writer, current string, ask Ask) (string, error) {
	waiting, err := h.Waiting(ctx)
	if err != nil || len(waiting) == 0 {
		return "", err
	}
	fmt.Fprintf(out, "\nWaiting for you here (handed off to the terminal):\n")
	for i, hf := range waiting {
		fmt.Fprintf(out, "  %d. %s\n", i+1, h.Describe(ctx, hf))
	}
	if ask == nil {
		return "", nil
	}
	prompt := "Press Enter to continue it here, or n to stay › "
	if len(waiting) > 1 {
		prompt = fmt.Sprintf("Press Enter to continue 1, a number (1–%d) for another, or n to stay › ", len(waiting))
	}
	answer, err := ask(prompt)
	if err != nil {
		return "", nil // Ctrl-C / Ctrl-D at the question: stay where we are
	}
	pick, ok := choose(strings.TrimSpace(answer), len(waiting))
	if !ok {
		fmt.Fprintln(out, "Staying here; the handoffs keep waiting (`baton resume` lists them).")
		return "", nil
	}
	s, err := h.PickUp(ctx, waiting[pick])
	if err != nil {
		return "", err
	}
	if s.ID == current {
		return "", nil
	}
	return s.ID, nil
}

// choose maps an answer to an index: "" or "y" is the first, a number its
// entry, anything else none.
func choose(answer string, n int) (int, bool) {
	switch strings.ToLower(answer) {
	case "", "y", "yes":
		return 0, true
	}
	var i int
	if _, err := fmt.Sscanf(answer, "%d", &i); err == nil && i >= 1 && i <= n {
		return i - 1, true
	}
	return 0, false
}

// PlaceOf names the place an address key is, for people ("Telegram",
// "the web chat", "the terminal").
func PlaceOf(key string) string { return placeOf(key) }
