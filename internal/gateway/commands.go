package gateway

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/baton-agent/baton/internal/agent"
	"github.com/baton-agent/baton/internal/command"
	"github.com/baton-agent/baton/internal/gateway/control"
	"github.com/baton-agent/baton/internal/platform"
	"github.com/baton-agent/baton/internal/store"

	"github.com/baton-agent/baton/internal/plural"
)

// chatCommands is the command menu for platforms that show one.
func (g *Gateway) chatCommands() []platform.Command {
	var out []platform.Command
	for _, c := range g.cmds.In(command.Chat) {
		out = append(out, platform.Command{Name: c.Name, Description: c.Description})
	}
	return out
}

// command runs a slash command typed in a chat and returns the answer.
func (g *Gateway) command(ctx context.Context, addr platform.Address, line string) string {
	inv, err := g.cmds.Parse(line, command.Chat)
	if err != nil {
		return err.Error()
	}
	args := inv.Args
	if inv.Command.Category == command.CategoryTurn && inv.Command.Name != "approve" && inv.Command.Name != "always" && inv.Command.Name != "deny" {
		// Only the holder changes the conversation.
		if sess, err := g.boundSession(ctx, addr); err == nil {
			if line, _, ok := g.notHereLine(ctx, sess, addr); ok {
				return line
			}
		}
	}
	switch inv.Command.Name {
	case "start":
		return "Hello! I am your baton agent. Talk to me here, or type /help."
	case "help":
		if args != "" {
			h, err := g.cmds.HelpFor(args, command.Chat)
			if err != nil {
				return err.Error()
			}
			return h
		}
		return "You can type:\n\n" + g.cmds.HelpOn(addr.Platform)
	case "sethome":
		if err := g.st.SetHomeChannel(ctx, addr.Platform, addr.Home().Key()); err != nil {
			return "Could not set the home channel: " + err.Error()
		}
		return fmt.Sprintf("Handoffs to %s (/handoff %s) now land in this chat.", g.placeName(addr.Platform), addr.Platform)
	case "handoff":
		return g.chatHandoff(ctx, addr, args)
	case "continue":
		return g.continueHere(ctx, addr)
	case "where":
		return g.where(ctx, addr)
	case "whoami":
		return g.whoami(ctx)
	case "new":
		s, err := g.newSession(ctx, addr)
		if err != nil {
			return "Could not start a new session: " + err.Error()
		}
		return fmt.Sprintf("New session %s started here.", shortID(s.ID))
	case "sessions":
		return g.listSessions(ctx)
	case "resume":
		return g.resume(ctx, addr, args)
	case "title":
		return g.title(ctx, addr, args)
	case "undo":
		sess, err := g.boundSession(ctx, addr)
		if err != nil {
			return err.Error()
		}
		removed, err := g.ag.Undo(ctx, sess.ID)
		if errors.Is(err, agent.ErrNothingToUndo) {
			return "Nothing to undo."
		} else if err != nil {
			return "Could not undo: " + err.Error()
		}
		return fmt.Sprintf("Took back your last message and %s after it.", plural.Count(len(removed)-1, "message", "messages"))
	case "retry":
		sess, err := g.boundSession(ctx, addr)
		if err != nil {
			return err.Error()
		}
		res, err := g.retry(ctx, addr, sess.ID)
		if err != nil {
			return "⚠️ " + turnError(err)
		}
		return res
	case "approve", "always", "deny":
		// A question is asked where the session is held: say where.
		if sess, err := g.boundSession(ctx, addr); err == nil && sess.HeldElsewhere(addr.Key()) {
			return "Nothing is waiting for approval here. " + g.whereLine(sess)
		}
		return "Nothing is waiting for approval."
	case "search":
		return g.search(ctx, args)
	case "pairing":
		return g.pairingCommand(ctx, args)
	case "compress":
		sess, err := g.boundSession(ctx, addr)
		if err != nil {
			return err.Error()
		}
		before, after, err := g.ag.Compress(ctx, sess.ID)
		if errors.Is(err, agent.ErrNothingToCompress) {
			return "Nothing to compress yet."
		} else if err != nil {
			return "Could not compress: " + err.Error()
		}
		return fmt.Sprintf("Compressed the earlier conversation: about %d → %d tokens. The full history stays stored.", before, after)
	case "model":
		return g.model(ctx, addr, args)
	case "save":
		return g.save(ctx, addr)
	}
	return fmt.Sprintf("/%s does not work in a chat yet.", inv.Command.Name)
}

func (g *Gateway) search(ctx context.Context, q string) string {
	hits, err := g.st.Search(ctx, store.SearchQuery{Text: q, Limit: 5})
	if err != nil {
		return "Search failed: " + err.Error()
	}
	if len(hits) == 0 {
		return fmt.Sprintf("Nothing found for %q.", q)
	}
	var b strings.Builder
	for _, h := range hits {
		title := h.Title
		if title == "" {
			title = shortID(h.Message.SessionID)
		}
		fmt.Fprintf(&b, "- %s (%s): %s\n", title, h.Message.Role, h.Snippet)
	}
	return b.String()
}

func (g *Gateway) model(ctx context.Context, addr platform.Address, name string) string {
	sess, err := g.boundSession(ctx, addr)
	if err != nil {
		return err.Error()
	}
	if name == "" {
		m := sess.Model
		if m == "" {
			m = g.ag.Model
		}
		return "Model: " + m
	}
	if err := g.st.SetModel(ctx, sess.ID, name); err != nil {
		return "Could not set the model: " + err.Error()
	}
	return "This session now uses " + name + "."
}

func (g *Gateway) retry(ctx context.Context, addr platform.Address, sessionID string) (string, error) {
	done, err := g.working(ctx, addr, sessionID)
	if err != nil {
		return "", err
	}
	defer done()
	res, err := g.ag.Retry(ctx, sessionID, nil)
	return res.Text, err
}

// chatHandoff is /handoff typed in a chat: to the terminal it leaves the
// handoff waiting for `baton`; elsewhere the worker carries it out.
func (g *Gateway) chatHandoff(ctx context.Context, addr platform.Address, args string) string {
	to := strings.ToLower(strings.TrimSpace(args))
	if to == "" {
		return "Usage: /handoff <platform> — e.g. /handoff cli to continue in the terminal."
	}
	if to == "terminal" {
		to = TerminalPlatform
	}
	sess, err := g.boundSession(ctx, addr)
	if err != nil {
		return err.Error()
	}
	if to == addr.Platform {
		return fmt.Sprintf("This conversation is already on %s.", g.placeName(to))
	}
	if sess.HeldElsewhere(addr.Key()) {
		// Only the holder sends it on; here it would move it from afar.
		return g.whereLine(sess)
	}
	if to != TerminalPlatform {
		// Told here by tellOutcome; noted before the worker can finish it.
		g.mu.Lock()
		g.outcomeTo[sess.ID] = addr.Key()
		g.mu.Unlock()
	}
	h, err := g.RequestHandoff(ctx, sess.ID, addr.Platform, to)
	if errors.Is(err, store.ErrHandoffInFlight) && g.withdrawTerminalHandoff(ctx, sess.ID, "replaced by a handoff to "+to) {
		h, err = g.RequestHandoff(ctx, sess.ID, addr.Platform, to)
	}
	if err != nil {
		g.forgetOutcome(sess.ID)
	}
	switch {
	case errors.Is(err, store.ErrHandoffInFlight):
		return "A handoff of this session is already under way."
	case err != nil:
		return "Cannot hand off: " + err.Error()
	}
	if to == TerminalPlatform {
		return fmt.Sprintf("Handing off to the terminal. Run `baton` (or `baton resume`) on your computer and press Enter to continue %s there.", describe(sess))
	}
	g.tellOutcome(addr, h, true)
	return fmt.Sprintf("Handing off to %s…", g.placeName(to))
}

// forgetOutcome ends what chatHandoff noted for tellOutcome.
func (g *Gateway) forgetOutcome(sessionID string) {
	g.mu.Lock()
	delete(g.outcomeTo, sessionID)
	g.mu.Unlock()
}

// tellFailure tells the chat only if the handoff it asked for failed (a
// /continue whose success shows as the conversation arriving here).
func (g *Gateway) tellFailure(from platform.Address, h store.Handoff) { g.tellOutcome(from, h, false) }

// tellOutcome tells the chat a handoff was asked from how it ended: moved
// (and where), or failed (and why, and that the conversation stays here).
func (g *Gateway) tellOutcome(from platform.Address, h store.Handoff, success bool) {
	ch, stop := g.progress.subscribe(h.ID)
	g.claims.Add(1)
	go func() {
		defer g.claims.Done()
		defer stop()
		if success {
			defer g.forgetOutcome(h.SessionID)
		}
		ctx := g.work()
		var final control.Progress
		// The store first: it may have ended before the subscription.
		if cur, err := g.st.GetHandoff(ctx, h.ID); err == nil && cur.State.Terminal() {
			final = control.Progress{State: string(cur.State), Destination: cur.Destination, Error: cur.Error}
		}
		// Progress is published by this gateway's worker; a handoff ended
		// elsewhere (the reaper, another gateway) is seen in the store.
		tick := time.NewTicker(g.cfg.PollEvery)
		defer tick.Stop()
		for final.State == "" {
			select {
			case p := <-ch:
				if p.Terminal() {
					final = p
				}
			case <-tick.C:
				if cur, err := g.st.GetHandoff(ctx, h.ID); err == nil && cur.State.Terminal() {
					final = control.Progress{State: string(cur.State), Destination: cur.Destination, Error: cur.Error}
				}
			case <-g.quit:
				return // stopping: the chat will not hear; the store has the outcome
			}
		}
		text := fmt.Sprintf("This conversation now continues in %s. /continue to bring it back here.", g.placeName(h.Platform))
		if final.State != string(store.HandoffFailed) && !success {
			return
		}
		if final.State == string(store.HandoffFailed) {
			text = fmt.Sprintf("The handoff to %s failed: %s\nThe conversation stays here.", g.placeName(h.Platform), final.Error)
		}
		if err := g.deliver(ctx, from, fmt.Sprintf("handoff:%d:outcome", h.ID), text); err != nil {
			g.log.Warn("tell a handoff's outcome", "id", h.ID, "err", err)
		}
	}()
}

// withdrawTerminalHandoff fails a handoff of the session that is still
// waiting for the terminal, because the person has since asked for
// another; it reports whether there was one.
func (g *Gateway) withdrawTerminalHandoff(ctx context.Context, sessionID, reason string) bool {
	h, err := g.st.HandoffState(ctx, sessionID)
	if err != nil || h.State != store.HandoffPending || h.Platform != TerminalPlatform {
		return false
	}
	if _, ok, err := g.st.ClaimHandoff(ctx, h.ID, g.cfg.Claimer, g.cfg.Lease); err != nil || !ok {
		return false // the terminal took it meanwhile
	}
	ok, err := g.st.FailHandoff(ctx, h.ID, g.cfg.Claimer, reason)
	return err == nil && ok
}

// boundSession is the session this chat is on; an error a person can read
// when there is none.
func (g *Gateway) boundSession(ctx context.Context, addr platform.Address) (store.Session, error) {
	s, err := g.st.BoundSession(ctx, addr.Key())
	if errors.Is(err, store.ErrNotFound) {
		return store.Session{}, errors.New("This chat has no session yet: say something first.")
	}
	return s, err
}

func (g *Gateway) listSessions(ctx context.Context) string {
	ss, err := g.st.ListSessions(ctx, store.SessionFilter{OwnerID: g.cfg.OwnerID, Limit: 10})
	if err != nil {
		return "Could not list sessions: " + err.Error()
	}
	if len(ss) == 0 {
		return "No sessions yet."
	}
	var b strings.Builder
	b.WriteString("Recent sessions (/resume <id> to continue one here):\n")
	for _, s := range ss {
		title := s.Title
		if title == "" {
			title = "(untitled)"
		}
		fmt.Fprintf(&b, "- %s %s — %s, %s%s\n", shortID(s.ID), title, plural.Count(s.MessageCount, "message", "messages"), s.UpdatedAt.Format("Jan 2 15:04"), g.heldAt(s))
	}
	return b.String()
}

func (g *Gateway) resume(ctx context.Context, addr platform.Address, ref string) string {
	if ref == "" {
		return "Usage: /resume <id or title> — /sessions lists them."
	}
	s, err := g.st.ResolveSession(ctx, g.cfg.OwnerID, ref)
	if err != nil {
		return fmt.Sprintf("No single session matches %q: %v", ref, err)
	}
	if !s.Open() {
		if err := g.st.ReopenSession(ctx, s.ID); err != nil {
			return "Could not reopen it: " + err.Error()
		}
	}
	if _, err := g.st.Bind(ctx, addr.Key(), s.ID); err != nil {
		return "Could not switch: " + err.Error()
	}
	return fmt.Sprintf("This chat now continues %s.", describe(s))
}

func (g *Gateway) title(ctx context.Context, addr platform.Address, title string) string {
	sess, err := g.boundSession(ctx, addr)
	if err != nil {
		return err.Error()
	}
	if title == "" {
		return "Usage: /title <title>"
	}
	s, err := g.st.SetTitle(ctx, sess.ID, title)
	if err != nil {
		return "Could not set the title: " + err.Error()
	}
	return fmt.Sprintf("Titled %q.", s.Title)
}
