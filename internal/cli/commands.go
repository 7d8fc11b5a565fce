package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/baton-agent/baton/internal/agent"
	"github.com/baton-agent/baton/internal/command"
	"github.com/baton-agent/baton/internal/mcp"
	"github.com/baton-agent/baton/internal/store"

	"github.com/baton-agent/baton/internal/plural"
)

// listLimit is how many sessions /sessions shows.
const listLimit = 20

// command runs a slash command. quit asks the REPL to leave (ending the
// session); detach asks it to exit leaving the session as it is.
func (r *REPL) command(ctx context.Context, line string, interrupts <-chan os.Signal) (quit, detach bool) {
	inv, err := r.reg.Parse(line, command.Terminal)
	if err != nil {
		r.out.Printf("%v\n", err)
		return false, false
	}
	if changesSession(inv.Command) {
		// Only one terminal at a time changes a conversation.
		if err := r.hold(); err != nil {
			r.out.Printf("%s\n", openElsewhereLine(err))
			return false, false
		}
	}
	if inv.Command.Category == command.CategoryTurn {
		// Only the holder changes the conversation.
		if r.refresh(ctx); r.notHere(ctx) {
			r.out.Printf("%s\n", r.elsewhereLine(ctx))
			r.told(ctx)
			return false, false
		}
	}
	switch inv.Command.Name {
	case "help":
		r.help(inv.Args)
	case "quit":
		return true, false
	case "new":
		r.newSession(ctx)
	case "sessions":
		r.listSessions(ctx)
	case "resume":
		r.resume(ctx, inv.Args)
	case "title":
		r.title(ctx, inv.Args)
	case "search":
		r.search(ctx, inv.Args)
	case "model":
		r.model(ctx, inv.Args)
	case "tools":
		r.out.Printf("%s\n", mcp.Report(ctx, r.agent.Tools))
	case "attach":
		r.attach(ctx, splitPaths(inv.Args))
	case "compress":
		r.compress(ctx, interrupts)
	case "save":
		r.save(ctx, interrupts)
	case "retry":
		r.retry(ctx, interrupts)
	case "undo":
		r.undo(ctx)
	case "handoff":
		return false, r.handoff(ctx, inv.Args, interrupts)
	case "continue":
		r.takeHere(ctx)
	case "where":
		r.where(ctx)
	case "whoami":
		if err := WhoAmI(ctx, r.app, r.cfg.Out); err != nil {
			r.out.Printf("error: %v\n", err)
		}
	default:
		// Registered for the terminal but not wired here: say so rather
		// than pretend it worked.
		r.out.Printf("/%s is not available in this terminal yet\n", inv.Command.Name)
	}
	return false, false
}

func (r *REPL) help(arg string) {
	if arg != "" {
		s, err := r.reg.HelpFor(arg, command.Terminal)
		if err != nil {
			r.out.Printf("%v\n", err)
			return
		}
		r.out.Printf("%s", wrapColumns(s, r.out.width()))
		return
	}
	help := fmt.Sprintf("%s\nAnything else you type goes to baton. Enter sends; %s starts a new line (a pasted block stays one message).\nTab lists commands, and the platforms and sessions /handoff and /resume take. Ctrl-C stops a running answer; Ctrl-D leaves.\n", r.reg.Help(command.Terminal), NewlineKeys)
	r.out.Printf("%s", wrapColumns(help, r.out.width()))
}

// changesSession reports whether c changes the current conversation or
// where it is, which only the terminal that has it open may do.
func changesSession(c command.Command) bool {
	switch c.Name {
	case "handoff", "continue", "save":
		return true
	}
	return c.Category == command.CategoryTurn
}

func (r *REPL) newSession(ctx context.Context) {
	if r.session.ID != "" && !r.mayEnd(ctx) {
		r.out.Printf("New session. The previous one, %s, stays where it is.\n", describe(r.session))
	} else if r.session.ID != "" {
		if err := r.app.Store.EndSession(ctx, r.session.ID, "new"); err != nil {
			r.out.Printf("error: %v\n", err)
			return
		}
		r.agent.ForgetApprovals(r.session.ID)
		r.out.Printf("New session. The previous one is %s: /resume %s\n", describe(r.session), short(r.session.ID))
	} else {
		r.out.Printf("New session.\n")
	}
	r.releaseLock()
	r.session = store.Session{}
}

func (r *REPL) listSessions(ctx context.Context) {
	ss, err := r.app.Store.ListSessions(ctx, store.SessionFilter{OwnerID: r.app.Owner.ID, Limit: listLimit})
	if err != nil {
		r.out.Printf("error: %v\n", err)
		return
	}
	if len(ss) == 0 {
		r.out.Printf("No sessions yet.\n")
		return
	}
	var b strings.Builder
	writeSessionTable(&b, ss, r.session.ID, time.Now())
	switch {
	case r.session.ID == "":
		b.WriteString("This conversation is not stored yet: it starts with your first message.\n")
	case slices.ContainsFunc(ss, func(s store.Session) bool { return s.ID == r.session.ID }):
		b.WriteString("* is this session.\n")
	default:
		fmt.Fprintf(&b, "This session, %s, is older than these.\n", describe(r.session))
	}
	r.out.Printf("%s/resume <id or title> switches to one.\n", b.String())
}

func (r *REPL) resume(ctx context.Context, ref string) {
	s, err := r.app.Resolve(ctx, ref)
	if err != nil {
		r.out.Printf("%s\n", resolveHint(ref, err))
		return
	}
	if s.ID == r.session.ID {
		r.out.Printf("Already in %s.\n", describe(s))
		return
	}
	if r.session.ID != "" && r.mayEnd(ctx) {
		if err := r.app.Store.EndSession(ctx, r.session.ID, "switched"); err != nil {
			r.out.Printf("error: %v\n", err)
			return
		}
	}
	if err := r.enter(ctx, s); err != nil {
		r.out.Printf("error: %v\n", err)
	}
}

// resolveHint explains a failed session lookup in one line.
func resolveHint(ref string, err error) string {
	switch {
	case errors.Is(err, store.ErrNotFound):
		return fmt.Sprintf("no session matches %q — /sessions lists them", ref)
	case errors.Is(err, store.ErrAmbiguous):
		return fmt.Sprintf("%q matches several sessions — type more of the id", ref)
	}
	return "error: " + firstLine(err.Error())
}

func (r *REPL) title(ctx context.Context, title string) {
	if title == "" {
		if r.session.Title == "" {
			r.out.Printf("This session has no title yet: /title <title> sets one.\n")
		} else {
			r.out.Printf("Title: %s\n", r.session.Title)
		}
		return
	}
	if err := r.ensureSession(ctx); err != nil {
		r.out.Printf("error: %v\n", err)
		return
	}
	s, err := r.app.Store.SetTitle(ctx, r.session.ID, title)
	switch {
	case errors.Is(err, store.ErrTitleTaken):
		r.out.Printf("another session is already called %q — pick another title\n", title)
		return
	case errors.Is(err, store.ErrInvalid):
		r.out.Printf("that title cannot be used: %s\n", firstLine(err.Error()))
		return
	case err != nil:
		r.out.Printf("error: %v\n", err)
		return
	}
	r.session = s
	r.out.Printf("Title set: %s\n", s.Title)
}

func (r *REPL) search(ctx context.Context, q string) {
	hits, err := r.app.Store.Search(ctx, store.SearchQuery{Text: q, Limit: 20})
	if errors.Is(err, store.ErrInvalid) {
		r.out.Printf("cannot search for that: %s\n", firstLine(err.Error()))
		return
	}
	if err != nil {
		r.out.Printf("error: %v\n", err)
		return
	}
	var b strings.Builder
	writeHits(&b, hits)
	r.out.Printf("%s", b.String())
}

func (r *REPL) model(ctx context.Context, name string) {
	if name == "" {
		cur := r.session.Model
		if cur == "" {
			cur = r.app.Model.Name
		}
		if r.app.Offline() {
			r.out.Printf("No model is configured (offline responder). See README, Configuration.\n")
			return
		}
		r.out.Printf("Model: %s (provider %s). /model <name> changes it for this session.\n", cur, r.app.Model.Provider)
		return
	}
	if err := r.ensureSession(ctx); err != nil {
		r.out.Printf("error: %v\n", err)
		return
	}
	if err := r.app.Store.SetModel(ctx, r.session.ID, name); err != nil {
		r.out.Printf("error: %v\n", err)
		return
	}
	r.session.Model = name
	r.out.Printf("Model for this session: %s (provider %s)\n", name, r.app.Model.Provider)
}

func (r *REPL) compress(ctx context.Context, interrupts <-chan os.Signal) {
	if r.session.ID == "" {
		r.out.Printf("nothing to compress yet\n")
		return
	}
	var before, after int
	var err error
	r.withInterrupt(ctx, interrupts, func(ctx context.Context) {
		r.out.Status("compressing…")
		before, after, err = r.agent.Compress(ctx, r.session.ID)
		r.out.ClearStatus()
	})
	switch {
	case errors.Is(err, agent.ErrNothingToCompress):
		r.out.Printf("nothing to compress yet: the conversation is only the last few turns\n")
	case err != nil:
		r.out.Printf("error: %s\n", explain(err, "/compress"))
	default:
		r.out.Printf("Compressed: ~%d → ~%d tokens. The full history stays in the store.\n", before, after)
	}
}

func (r *REPL) retry(ctx context.Context, interrupts <-chan os.Signal) {
	if r.session.ID == "" {
		r.out.Printf("nothing to retry yet\n")
		return
	}
	r.turn(ctx, interrupts, func(ctx context.Context, emit func(agent.Event)) (agent.Result, error) {
		res, err := r.agent.Retry(ctx, r.session.ID, emit)
		if errors.Is(err, agent.ErrNothingToUndo) {
			return res, errors.New("nothing to retry yet")
		}
		return res, err
	})
}

func (r *REPL) undo(ctx context.Context) {
	if r.session.ID == "" {
		r.out.Printf("nothing to undo\n")
		return
	}
	removed, err := r.agent.Undo(ctx, r.session.ID)
	switch {
	case errors.Is(err, agent.ErrNothingToUndo):
		r.out.Printf("nothing to undo\n")
	case err != nil:
		r.out.Printf("error: %v\n", err)
	default:
		r.out.Printf("Undone: %q and %s after it. History keeps them.\n", clipHead(removed[0].Content, 60), plural.Count(len(removed)-1, "message", "messages"))
	}
}

// handoff runs the Handoff hook; true means the REPL should detach.
// Ctrl-C stops waiting for the gateway; the session stays here.
func (r *REPL) handoff(ctx context.Context, platform string, interrupts <-chan os.Signal) bool {
	if r.cfg.Handoff == nil {
		r.out.Printf("handoff needs the gateway: run `baton gateway`\n")
		return false
	}
	if err := r.ensureSession(ctx); err != nil {
		r.out.Printf("error: %v\n", err)
		return false
	}
	r.out.ClearStatus()
	var detach bool
	var err error
	r.withInterrupt(ctx, interrupts, func(ctx context.Context) {
		detach, err = r.cfg.Handoff(ctx, r.session.ID, strings.ToLower(platform), r.cfg.Out, r.in.Ask)
	})
	switch {
	case errors.Is(err, ErrHandoffFailed):
		r.out.Printf("%s\n", firstLine(err.Error())) // it says so itself
		return false
	case err != nil:
		r.out.Printf("%s", wrapColumns("handoff failed: "+firstLine(err.Error())+"\n", r.out.width()))
		return false
	}
	return detach
}

// withInterrupt runs fn with a context that Ctrl-C cancels.
func (r *REPL) withInterrupt(ctx context.Context, interrupts <-chan os.Signal, fn func(context.Context)) {
	ictx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-interrupts:
			cancel()
		case <-done:
		}
	}()
	fn(ictx)
}
