package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/baton-agent/baton/internal/agent"
	"github.com/baton-agent/baton/internal/app"
	"github.com/baton-agent/baton/internal/config"
	"github.com/baton-agent/baton/internal/store"
	"github.com/baton-agent/baton/internal/transcript"
)

// ErrNoModel is Once's answer when no model is configured.
var ErrNoModel = errors.New("no model is configured")

// OneShotMsgID marks the prompt of a one-shot (`baton -p`) in the
// transcript: it has no platform message id of its own, and `baton -c`
// must tell a script's prompts from a conversation (see LastChatted).
const OneShotMsgID = "oneshot"

// Once answers one prompt without a conversation on screen, for scripts
// (`baton -p`): the answer streams to out as plain text, tool activity and
// errors go to errOut. sessionID continues that session; "" makes a new
// one. Nobody is there to approve commands or writes, so only what
// tools.allow permits runs; the rest is denied and the model is told so.
// files are paths of files the prompt carries (--file).
func Once(ctx context.Context, a *app.App, sessionID, text string, files []string, out, errOut io.Writer) error {
	if strings.TrimSpace(text) == "" && len(files) == 0 {
		return fmt.Errorf("nothing to answer: give a prompt with -p or on stdin")
	}
	if a.Offline() {
		// The offline responder's text on stdout would read as an answer.
		return fmt.Errorf("%w, so there is no answer: set OPENAI_API_KEY, ANTHROPIC_API_KEY or OPENROUTER_API_KEY, run Ollama on 127.0.0.1:11434, or name a model in %s (see README.md, Configuration)",
			ErrNoModel, filepath.Join(a.Home, config.FileName))
	}
	denied := func(_ context.Context, req agent.ApprovalRequest) (agent.Decision, error) {
		fmt.Fprintf(errOut, "baton: denied %s (no terminal to ask; allow it with tools.allow in config.yaml)\n", callLabel(req.Tool, req.Subject))
		return agent.Deny, nil
	}
	ag, err := a.NewAgent(agent.ApproverFunc(denied))
	if err != nil {
		return err
	}
	if sessionID == "" {
		s, err := a.NewSession(ctx)
		if err != nil {
			return err
		}
		sessionID = s.ID
	} else if s, err := a.Store.GetSession(ctx, sessionID); err != nil {
		return fmt.Errorf("open session: %w", err)
	} else if s.HeldElsewhere(a.TerminalKey()) {
		return fmt.Errorf("%w: it is in %s now; continue it there, or `baton -c` in a terminal moves it here", ErrHeldElsewhere, placeOf(s.Holder))
	} else if !s.Open() {
		if err := a.Store.ReopenSession(ctx, sessionID); err != nil {
			return fmt.Errorf("reopen session: %w", err)
		}
	}
	if a.Home != "" {
		// Not while a terminal is typing into the same session.
		l, err := lockSession(a.Home, sessionID)
		if err != nil {
			return fmt.Errorf("session %s: %w", short(sessionID), err)
		}
		defer l.release()
	}
	lastNL := true
	emit := func(e agent.Event) {
		switch e.Kind {
		case agent.EventTextDelta:
			_, _ = io.WriteString(out, e.Text)
			lastNL = strings.HasSuffix(e.Text, "\n")
		case agent.EventToolFinished:
			fmt.Fprintln(errOut, firstLine(toolLine(e)))
		case agent.EventFiles:
			for _, f := range e.Files {
				fmt.Fprintln(errOut, transcript.FileLine(f.Attachment, store.SessionFileOf(ctx, a.Store, sessionID, f.Attachment)))
			}
		}
	}
	in := store.Message{Role: store.RoleUser, Content: text, Platform: Platform, PlatformMsgID: OneShotMsgID}
	for _, f := range files {
		att, err := attachFile(ctx, a.Store, f)
		if err != nil {
			return err
		}
		in.Attachments = append(in.Attachments, att)
	}
	res, runErr := ag.Run(ctx, sessionID, in, emit)
	if res.Notice != "" {
		fmt.Fprintln(errOut, res.Notice)
	}
	if !lastNL {
		_, _ = io.WriteString(out, "\n")
	}
	// The script is done with the session; `baton -c` picks it up again.
	endErr := a.Store.EndSession(context.WithoutCancel(ctx), sessionID, "print")
	if runErr != nil {
		return fmt.Errorf("%s", explain(runErr, ""))
	}
	return endErr
}
