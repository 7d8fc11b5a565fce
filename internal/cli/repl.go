package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/baton-agent/baton/internal/agent"
	"github.com/baton-agent/baton/internal/app"
	"github.com/baton-agent/baton/internal/command"
	"github.com/baton-agent/baton/internal/config"
	"github.com/baton-agent/baton/internal/llm/offline"
	"github.com/baton-agent/baton/internal/place"
	"github.com/baton-agent/baton/internal/store"
)

// HandoffFunc hands the session over to another platform (e.g. "telegram")
// on behalf of the terminal's /handoff command. It writes progress for the
// person to out. detach=true means the session now lives elsewhere: the
// REPL exits at once, without ending the session. A non-nil error is shown
// as one line and the REPL carries on in the same session.
//
// The gateway engineer provides this; when Config.Handoff is nil, /handoff
// prints that the gateway is needed.
type HandoffFunc func(ctx context.Context, sessionID, platform string, out io.Writer, ask Ask) (detach bool, err error)

// StartupFunc runs once after the banner and before the first prompt, with
// the session the REPL starts in ("" for a new session not yet created).
// It is the place to tell the person about handoffs waiting to come back to
// the terminal (e.g. "2 sessions handed to cli: /resume <id>"). An error is
// shown as a warning; the REPL starts anyway.
//
// ask puts a question to the person (e.g. "continue it? [Enter]"); a
// non-empty switchTo makes the REPL continue that session instead.
type StartupFunc func(ctx context.Context, out io.Writer, sessionID string, ask Ask) (switchTo string, err error)

// Config sets up a REPL.
type Config struct {
	App *app.App
	// Reader reads the person's lines; nil means readline on the terminal
	// with history in $BATON_HOME/history.
	Reader LineReader
	Out    io.Writer  // nil: os.Stdout
	TTY    bool       // Out is a terminal: render markdown, draw a spinner
	Width  func() int // terminal columns; nil: 80
	// SessionID continues that session; "" starts a new one, created when
	// first needed (so quitting at once leaves no empty session behind).
	SessionID string
	Handoff   HandoffFunc // nil: /handoff says the gateway is needed
	// HandoffTargets lists the platforms Tab offers after /handoff.
	HandoffTargets func(ctx context.Context) []string
	Startup        StartupFunc // nil: nothing
	// Interrupts cancel the running turn; nil means SIGINT (Ctrl-C while a
	// turn runs, when the terminal is not in raw mode).
	Interrupts <-chan os.Signal
	// WatchEvery is how often the terminal, idle at its prompt, reads
	// where its session is, to say at once when it moved (watch.go);
	// 0: DefaultWatchEvery.
	WatchEvery time.Duration
}

// REPL is the interactive terminal chat.
type REPL struct {
	cfg   Config
	app   *app.App
	agent *agent.Agent
	reg   *command.Registry
	out   *renderer
	in    LineReader

	session store.Session // ID "" until the first message or command needs one
	lock    *sessionLock  // this terminal's hold on session against other terminals (lock.go)

	// attached are the files /attach kept for the next message.
	attached []store.Attachment

	mu         sync.Mutex
	cancelTurn context.CancelFunc // cancels the running turn; nil between turns
	known      whereabouts        // where the person last knew the session to be (watch.go)
	atPrompt   bool               // the REPL waits for a line: the watcher may speak
	toldNext   string             // a session waiting here, heard while busy: said at the next prompt
}

// New builds a REPL; the REPL is the agent's approver.
func New(cfg Config) (*REPL, error) {
	if cfg.App == nil {
		return nil, errors.New("new REPL: no app")
	}
	if cfg.Out == nil {
		cfg.Out = os.Stdout
	}
	r := &REPL{cfg: cfg, app: cfg.App, reg: command.Default()}
	r.out = newRenderer(cfg.Out, cfg.TTY, cfg.Width)
	r.out.keptAt = func(a store.Attachment) string {
		return store.SessionFileOf(context.Background(), cfg.App.Store, r.session.ID, a)
	}
	r.in = cfg.Reader
	if r.in == nil {
		r.in = NewTerminalReader(r.complete, historyPath(cfg.App.Home))
	}
	a, err := cfg.App.NewAgent(r)
	if err != nil {
		return nil, err
	}
	r.agent = a
	return r, nil
}

// SessionID is the current session ("" if none was created yet).
func (r *REPL) SessionID() string { return r.session.ID }

// prompt is shown before each line the person types.
const prompt = "› "

// Run reads and answers lines until /quit, Ctrl-D, a detaching handoff or
// the end of ctx.
func (r *REPL) Run(ctx context.Context) error {
	defer r.out.Close()
	defer r.releaseLock()
	interrupts := r.cfg.Interrupts
	if interrupts == nil {
		ch := make(chan os.Signal, 1)
		signal.Notify(ch, os.Interrupt)
		defer signal.Stop(ch)
		interrupts = ch
	}
	if err := r.start(ctx); err != nil {
		return err
	}
	wctx, stopWatch := context.WithCancel(ctx)
	// Listening before the first prompt: a move signalled once it shows
	// is heard.
	signals := r.listen(wctx)
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		r.watch(wctx, signals)
	}()
	defer func() { stopWatch(); <-watched }()
	for ctx.Err() == nil {
		r.refresh(ctx)
		r.idle(ctx)
		line, err := r.in.Prompt(prompt)
		r.busy()
		switch {
		case errors.Is(err, ErrInterrupt):
			r.out.Printf("(Ctrl-D or /quit to leave)\n")
			continue
		case errors.Is(err, io.EOF):
			r.out.Printf("\n")
			return r.leave(ctx)
		case err != nil:
			return fmt.Errorf("read input: %w", err)
		}
		line = strings.TrimSpace(line)
		if line == "" && len(r.attached) == 0 {
			continue
		}
		drain(interrupts) // a Ctrl-C pressed between turns must not cancel the next one
		if path, ok := droppedFile(line); ok && r.offerAttach(ctx, path) {
			continue
		}
		if command.IsCommand(line) {
			done, detach := r.command(ctx, line, interrupts)
			if detach {
				return nil
			}
			if done {
				return r.leave(ctx)
			}
			continue
		}
		r.say(ctx, line, interrupts)
	}
	return r.leave(context.WithoutCancel(ctx))
}

func (r *REPL) start(ctx context.Context) error {
	var resumed store.Session
	if r.cfg.SessionID != "" {
		s, err := r.app.Store.GetSession(ctx, r.cfg.SessionID)
		if err != nil {
			return fmt.Errorf("open session: %w", err)
		}
		resumed = s
	}
	r.out.Printf("baton · %s · /help for commands, Ctrl-D to leave\n", r.modelLabel(resumed))
	if r.app.Offline() {
		r.out.Printf("\n%s\n\n", offline.SetupFor(filepath.Join(r.app.Home, config.FileName)))
	}
	if resumed.ID != "" {
		if err := r.enter(ctx, resumed); err != nil {
			return err
		}
	}
	if r.cfg.Startup != nil {
		switchTo, err := r.cfg.Startup(ctx, r.cfg.Out, r.session.ID, r.in.Ask)
		if err != nil {
			r.out.Printf("warning: %v\n", err)
		}
		if switchTo != "" && switchTo != r.session.ID {
			s, err := r.app.Store.GetSession(ctx, switchTo)
			if err != nil {
				return fmt.Errorf("open session: %w", err)
			}
			if err := r.enter(ctx, s); err != nil {
				return err
			}
			r.showNote(ctx) // the note of the handoff that brought it here
		}
	}
	return nil
}

// modelLabel is "provider · model" for s: its own model when /model set
// one, the configured one otherwise.
func (r *REPL) modelLabel(s store.Session) string {
	if r.app.Offline() || s.Model == "" {
		return r.app.ModelLabel()
	}
	return r.app.Model.Provider + " · " + s.Model
}

// enter makes s the current session, reopening it if it was ended, and
// shows its transcript, ruled off from what comes next.
func (r *REPL) enter(ctx context.Context, s store.Session) error {
	if !s.Open() {
		if err := r.app.Store.ReopenSession(ctx, s.ID); err != nil {
			return fmt.Errorf("reopen session: %w", err)
		}
	}
	r.session = s
	msgs, err := r.app.Store.Transcript(ctx, s.ID)
	if err != nil {
		return fmt.Errorf("load transcript: %w", err)
	}
	r.out.Printf("Continuing %s\n", describe(s))
	if len(msgs) > 0 {
		printTranscript(r.out, msgs, replayLimit)
		r.out.Printf("%s\n", rule(replayedRule, r.out.width()))
	}
	if err := r.hold(); err != nil {
		r.out.Printf("%s\n", openElsewhereLine(err))
		r.told(ctx)
		return nil
	}
	r.offerToTake(ctx)
	r.told(ctx)
	return nil
}

// replayedRule labels the line between a replayed transcript and what is
// said from now on.
const replayedRule = "earlier messages above · new ones below"

// rule is a horizontal line with label in it, at most width columns.
func rule(label string, width int) string {
	head := "── " + label + " "
	n := min(width, 72) - utf8.RuneCountInString(head)
	return head + strings.Repeat("─", max(n, 3))
}

// replayLimit is how many messages of a resumed session are shown.
const replayLimit = 40

// leave ends the current session: the terminal is done with it. It stays
// in the store and can be resumed.
func (r *REPL) leave(ctx context.Context) error {
	if r.session.ID == "" {
		return nil
	}
	if err := r.hold(); err != nil {
		r.out.Printf("It stays open in the other terminal.\n")
		if r.keptCount(ctx) > 0 {
			r.out.Printf("What you typed here is kept: the terminal that has it answers it before its next message.\n")
		}
		return nil
	}
	if r.refresh(ctx); r.session.HeldElsewhere(r.app.TerminalKey()) {
		// Not this terminal's to end: it goes on where it is held.
		r.out.Printf("It stays in %s (`baton -c` brings it here).\n", placeOf(r.session.Holder))
		if r.keptCount(ctx) > 0 {
			r.out.Printf("What you typed here is kept: /continue in the terminal answers it.\n")
		}
		return nil
	}
	if err := r.app.Store.EndSession(ctx, r.session.ID, "quit"); err != nil {
		return fmt.Errorf("end session: %w", err)
	}
	r.out.Printf("Session %s saved — continue it with `baton -c` or `baton -r %s`.\n", short(r.session.ID), short(r.session.ID))
	return nil
}

// ensureSession creates the session on first need.
func (r *REPL) ensureSession(ctx context.Context) error {
	if r.session.ID != "" {
		return nil
	}
	s, err := r.app.NewSession(ctx)
	if err != nil {
		return err
	}
	r.session = s
	err = r.hold()
	r.told(ctx)
	return err
}

// say runs one turn with what the person typed.
func (r *REPL) say(ctx context.Context, text string, interrupts <-chan os.Signal) {
	if err := r.ensureSession(ctx); err != nil {
		r.out.Printf("error: %v\n", err)
		return
	}
	if err := r.hold(); err != nil {
		// Another terminal is typing into it: kept for when it is free.
		r.out.Printf("%s\n", openElsewhereLine(err))
		r.keep(ctx, text, "before the next message in the terminal that has it")
		return
	}
	if r.refresh(ctx); r.notHere(ctx) {
		r.out.Printf("%s\n", r.elsewhereLine(ctx))
		r.told(ctx)
		r.keep(ctx, text, "once /continue brings the conversation here")
		return
	}
	if r.carryKept(ctx, interrupts) {
		r.keep(ctx, text, "once /continue brings the conversation here")
		return
	}
	r.runTurn(ctx, text, interrupts)
}

// runTurn runs one turn in the current session, which this terminal
// holds; moved says a move of the session stopped it.
func (r *REPL) runTurn(ctx context.Context, text string, interrupts <-chan os.Signal) (moved bool) {
	in := store.Message{Role: store.RoleUser, Content: text, Platform: Platform, Attachments: r.attached}
	r.attached = nil
	err := r.turn(ctx, interrupts, func(ctx context.Context, emit func(agent.Event)) (agent.Result, error) {
		return r.agent.Run(ctx, r.session.ID, in, emit)
	})
	return errors.Is(err, agent.ErrMoved)
}

// turn runs fn (a turn of the agent) with Ctrl-C cancelling it and its
// events rendered, and returns its error. A turn that a move of the
// session stopped (a chat or the page took it) says so at once.
func (r *REPL) turn(ctx context.Context, interrupts <-chan os.Signal, fn func(context.Context, func(agent.Event)) (agent.Result, error)) error {
	tctx, cancel := context.WithCancel(ctx)
	defer cancel()
	r.mu.Lock()
	r.cancelTurn = cancel
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		r.cancelTurn = nil
		r.mu.Unlock()
	}()
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-interrupts:
			cancel()
		case <-done:
		}
	}()

	r.out.Status("thinking…")
	res, err := fn(tctx, r.event)
	r.out.EndAnswer()
	if res.Notice != "" {
		r.out.Printf("%s\n", res.Notice)
	}
	var moved *agent.MovedError
	switch {
	case err == nil:
	case errors.As(err, &moved):
		r.out.Printf("%s\n", place.Stopped(placeOf(moved.To)))
	case tctx.Err() != nil && ctx.Err() == nil:
		r.out.Printf("⏹ interrupted — everything said so far is kept\n")
	default:
		r.out.Printf("error: %s\n", explain(err, "/retry"))
	}
	return err
}

// event renders one agent event; it runs on the turn's goroutine.
func (r *REPL) event(e agent.Event) {
	switch e.Kind {
	case agent.EventTextDelta:
		r.out.Delta(e.Text)
	case agent.EventToolStarted:
		r.out.EndAnswer()
		r.out.Status(fmt.Sprintf("running %s", callLabel(e.Call.Name, subjectOf(r.agent, e.Call.Name, e.Call.Arguments))))
	case agent.EventToolFinished:
		r.out.ClearStatus()
		r.out.Printf("%s\n", toolLine(e))
		r.out.Status("thinking…")
	case agent.EventCompressed:
		r.out.Printf("(context compressed: ~%d → ~%d tokens)\n", e.Before, e.After)
	case agent.EventFiles:
		// The terminal is where the person is: a file sent here is the
		// path it is kept at.
		r.out.ClearStatus()
		for _, f := range e.Files {
			if f.Caption != "" {
				r.out.Printf("%s\n", f.Caption)
			}
			r.out.Printf("%s\n", fileLine(r.out, f.Attachment, r.out.keptAt(f.Attachment)))
		}
		r.out.Status("thinking…")
	}
}

// Approve asks the person whether a tool call may run. It is called on the
// turn's goroutine while no other output is being written.
func (r *REPL) Approve(ctx context.Context, req agent.ApprovalRequest) (agent.Decision, error) {
	r.out.EndAnswer()
	what := req.Subject
	if what == "" {
		what = clipRunes(string(req.Arguments), 200)
	}
	r.out.Printf("baton wants to run %s: %s\n", req.Tool, what)
	for {
		if err := ctx.Err(); err != nil {
			return agent.Deny, err
		}
		ans, err := r.in.Ask("allow? [o]nce, [a]lways (exactly this, this session), [d]eny › ")
		switch {
		case errors.Is(err, ErrInterrupt):
			// Ctrl-C at the question cancels the turn, as it would anywhere else.
			r.mu.Lock()
			if r.cancelTurn != nil {
				r.cancelTurn()
			}
			r.mu.Unlock()
			return agent.Deny, context.Canceled
		case errors.Is(err, io.EOF):
			return agent.Deny, nil
		case err != nil:
			return agent.Deny, err
		}
		if d, ok := parseDecision(ans); ok {
			if d == agent.Deny {
				r.out.Printf("denied\n")
			}
			r.out.Status("…")
			return d, nil
		}
		r.out.Printf("answer o (once), a (always: this exact call, for this session) or d (deny)\n")
	}
}

// parseDecision reads an answer to the approval question.
func parseDecision(s string) (agent.Decision, bool) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "o", "once", "y", "yes":
		return agent.Once, true
	case "a", "always":
		return agent.AlwaysForSession, true
	case "d", "deny", "n", "no":
		return agent.Deny, true
	}
	return agent.Deny, false
}

func drain(ch <-chan os.Signal) {
	for {
		select {
		case <-ch:
		default:
			return
		}
	}
}

func historyPath(home string) string {
	if home == "" {
		return ""
	}
	return filepath.Join(home, HistoryFile)
}
