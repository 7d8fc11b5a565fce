package gateway

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/baton-agent/baton/internal/agent"
	"github.com/baton-agent/baton/internal/command"
	"github.com/baton-agent/baton/internal/mcp"
	"github.com/baton-agent/baton/internal/note"
	"github.com/baton-agent/baton/internal/platform"
	"github.com/baton-agent/baton/internal/store"

	"github.com/baton-agent/baton/internal/plural"
)

// chatCommands is the command menu for platforms that show one.
func (r *router) chatCommands() []platform.Command {
	var out []platform.Command
	for _, c := range r.cmds.In(command.Chat) {
		out = append(out, platform.Command{Name: c.Name, Description: c.Description})
	}
	return out
}

// command runs a slash command typed in a chat and returns the answer.
func (r *router) command(ctx context.Context, addr platform.Address, line string) string {
	inv, err := r.cmds.Parse(line, command.Chat)
	if err != nil {
		return err.Error()
	}
	if !inv.Command.On(addr.Platform) {
		// Left out of this platform's help too (command.Command.NotOn).
		return fmt.Sprintf("/%s does not work in %s.", inv.Command.Name, r.places.placeName(addr.Platform))
	}
	args := inv.Args
	if inv.Command.Category == command.CategoryTurn && inv.Command.Name != "approve" && inv.Command.Name != "always" && inv.Command.Name != "deny" {
		// Only the holder changes the conversation.
		if sess, err := r.boundSession(ctx, addr); err == nil {
			if line, _, ok := r.notHereLine(ctx, sess, addr); ok {
				return line
			}
		}
	}
	switch inv.Command.Name {
	case "start":
		return "Hello! I am your baton agent. Talk to me here, or type /help."
	case "help":
		if args != "" {
			h, err := r.cmds.HelpFor(args, command.Chat)
			if err != nil {
				return err.Error()
			}
			return h
		}
		return "You can type:\n\n" + r.cmds.HelpOn(addr.Platform)
	case "sethome":
		if err := r.st.SetHomeChannel(ctx, addr.Platform, addr.Home().Key()); err != nil {
			return "Could not set the home channel: " + err.Error()
		}
		return fmt.Sprintf("Handoffs to %s (/handoff %s) now land in this chat.", r.places.placeName(addr.Platform), addr.Platform)
	case "handoff":
		return r.chatHandoff(ctx, addr, args)
	case "continue":
		return r.continueHere(ctx, addr)
	case "where":
		return r.where(ctx, addr)
	case "whoami":
		return r.whoami(ctx)
	case "new":
		s, err := r.newSession(ctx, addr)
		if err != nil {
			return "Could not start a new session: " + err.Error()
		}
		return fmt.Sprintf("New session %s started here.", shortID(s.ID))
	case "sessions":
		return r.listSessions(ctx)
	case "resume":
		return r.resume(ctx, addr, args)
	case "title":
		return r.title(ctx, addr, args)
	case "undo":
		sess, err := r.boundSession(ctx, addr)
		if err != nil {
			return err.Error()
		}
		removed, err := r.ag.Undo(ctx, sess.ID)
		if errors.Is(err, agent.ErrNothingToUndo) {
			return "Nothing to undo."
		} else if err != nil {
			return "Could not undo: " + err.Error()
		}
		return fmt.Sprintf("Took back your last message and %s after it.", plural.Count(len(removed)-1, "message", "messages"))
	case "retry":
		sess, err := r.boundSession(ctx, addr)
		if err != nil {
			return err.Error()
		}
		r.hearLast(ctx, addr, sess.ID)
		res, err := r.retry(ctx, addr, sess.ID)
		if err != nil {
			return "⚠️ " + turnError(err)
		}
		return res
	case "approve", "always", "deny":
		// A question is asked where the session is held: say where.
		if sess, err := r.boundSession(ctx, addr); err == nil && sess.HeldElsewhere(addr.Key()) {
			return "Nothing is waiting for approval here. " + r.whereLine(sess)
		}
		return "Nothing is waiting for approval."
	case "search":
		return r.search(ctx, args)
	case "pairing":
		return r.pairingCommand(ctx, args)
	case "compress":
		sess, err := r.boundSession(ctx, addr)
		if err != nil {
			return err.Error()
		}
		before, after, err := r.ag.Compress(ctx, sess.ID)
		if errors.Is(err, agent.ErrNothingToCompress) {
			return "Nothing to compress yet."
		} else if err != nil {
			return "Could not compress: " + err.Error()
		}
		return fmt.Sprintf("Compressed the earlier conversation: about %d → %d tokens. The full history stays stored.", before, after)
	case "model":
		return r.model(ctx, addr, args)
	case "tools":
		return mcp.Report(ctx, r.ag.Tools)
	case "voice":
		return r.voice(ctx, addr, args)
	case "save":
		return r.save(ctx, addr)
	}
	return fmt.Sprintf("/%s does not work in a chat yet.", inv.Command.Name)
}

func (r *router) search(ctx context.Context, q string) string {
	hits, err := r.st.Search(ctx, store.SearchQuery{Text: q, Limit: 5})
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

func (r *router) model(ctx context.Context, addr platform.Address, name string) string {
	sess, err := r.boundSession(ctx, addr)
	if err != nil {
		return err.Error()
	}
	if name == "" {
		m := sess.Model
		if m == "" {
			m = r.ag.Model
		}
		return "Model: " + m
	}
	if err := r.st.SetModel(ctx, sess.ID, name); err != nil {
		return "Could not set the model: " + err.Error()
	}
	return "This session now uses " + name + "."
}

// voice is /voice [on|off]: whether the session's answers are also
// spoken.
func (r *router) voice(ctx context.Context, addr platform.Address, arg string) string {
	sess, err := r.boundSession(ctx, addr)
	if err != nil {
		return err.Error()
	}
	var on bool
	switch strings.ToLower(strings.TrimSpace(arg)) {
	case "":
		if sess.Voice {
			return "Answers are spoken too (/voice off for text only)."
		}
		return "Answers are in text only (/voice on to hear them too)."
	case "on":
		on = true
	case "off":
	default:
		return "/voice takes on or off."
	}
	if on && r.cfg.speaker == nil {
		return "I cannot speak yet: set voice: in config.yaml (base_url and api_key of an OpenAI-compatible speech service), or use an OpenAI model."
	}
	if err := r.st.SetVoice(ctx, sess.ID, on); err != nil {
		return "Could not change it: " + err.Error()
	}
	if on {
		return "Answers come as a voice note too now, the text beside it. /voice off for text only."
	}
	return "Answers are in text only now."
}

func (r *router) retry(ctx context.Context, addr platform.Address, sessionID string) (string, error) {
	done, err := r.turns.working(ctx, addr, sessionID)
	if err != nil {
		return "", err
	}
	defer done()
	res, err := r.ag.Retry(ctx, sessionID, nil)
	return res.Text, err
}

// chatHandoff is /handoff typed in a chat: to the terminal it leaves the
// handoff waiting for `baton`; elsewhere the worker carries it out.
func (r *router) chatHandoff(ctx context.Context, addr platform.Address, args string) string {
	to := strings.ToLower(strings.TrimSpace(args))
	if to == "" {
		return "Usage: /handoff <platform> — e.g. /handoff cli to continue in the terminal."
	}
	if to == "terminal" {
		to = TerminalPlatform
	}
	sess, err := r.boundSession(ctx, addr)
	if err != nil {
		return err.Error()
	}
	if to == addr.Platform {
		return fmt.Sprintf("This conversation is already on %s.", r.places.placeName(to))
	}
	if sess.HeldElsewhere(addr.Key()) {
		// Only the holder sends it on; here it would move it from afar.
		return r.whereLine(sess)
	}
	if to != TerminalPlatform {
		// Told here by tellOutcome; noted before the worker can finish it.
		r.worker.noteOutcomeTo(sess.ID, addr.Key())
	}
	h, err := r.worker.request(ctx, sess.ID, addr.Platform, to, false)
	if errors.Is(err, store.ErrHandoffInFlight) && r.worker.withdrawTerminal(ctx, sess.ID, "replaced by a handoff to "+to) {
		h, err = r.worker.request(ctx, sess.ID, addr.Platform, to, false)
	}
	if err != nil {
		r.worker.forgetOutcome(sess.ID)
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
	r.worker.tellOutcome(addr, h, true)
	return fmt.Sprintf("Handing off to %s…", r.places.placeName(to))
}

func (r *router) listSessions(ctx context.Context) string {
	ss, err := r.st.ListSessions(ctx, store.SessionFilter{OwnerID: r.cfg.ownerID, Limit: 10})
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
		fmt.Fprintf(&b, "- %s %s — %s, %s%s\n", shortID(s.ID), title, plural.Count(s.MessageCount, "message", "messages"), s.UpdatedAt.Format("Jan 2 15:04"), r.heldAt(s))
	}
	return b.String()
}

func (r *router) resume(ctx context.Context, addr platform.Address, ref string) string {
	if ref == "" {
		return "Usage: /resume <id or title> — /sessions lists them."
	}
	s, err := r.st.ResolveSession(ctx, r.cfg.ownerID, ref)
	if err != nil {
		return fmt.Sprintf("No single session matches %q: %v", ref, err)
	}
	if !s.Open() {
		if err := r.st.ReopenSession(ctx, s.ID); err != nil {
			return "Could not reopen it: " + err.Error()
		}
	}
	if _, err := r.st.Bind(ctx, addr.Key(), s.ID); err != nil {
		return "Could not switch: " + err.Error()
	}
	return fmt.Sprintf("This chat now continues %s.", describe(s))
}

func (r *router) title(ctx context.Context, addr platform.Address, title string) string {
	sess, err := r.boundSession(ctx, addr)
	if err != nil {
		return err.Error()
	}
	if title == "" {
		return "Usage: /title <title>"
	}
	s, err := r.st.SetTitle(ctx, sess.ID, title)
	if err != nil {
		return "Could not set the title: " + err.Error()
	}
	return fmt.Sprintf("Titled %q.", s.Title)
}

// save is /save in a chat: a note of the session here, stored without
// moving it, and shown.
func (r *router) save(ctx context.Context, addr platform.Address) string {
	sess, err := r.boundSession(ctx, addr)
	if err != nil {
		return err.Error()
	}
	n, err := r.notes.Save(ctx, sess.ID)
	if errors.Is(err, note.ErrEmpty) {
		return "Nothing to save yet: say something first."
	} else if err != nil {
		return "Could not save a note: " + err.Error()
	}
	return n.Markdown()
}
