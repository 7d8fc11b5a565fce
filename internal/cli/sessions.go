package cli

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/baton-agent/baton/internal/app"
	"github.com/baton-agent/baton/internal/place"
	"github.com/baton-agent/baton/internal/store"

	"github.com/baton-agent/baton/internal/plural"
)

// lastChattedScan bounds how many sessions LastChatted looks through,
// newest first, for one whose person's message is newer.
const lastChattedScan = 200

// LastChatted is the session `baton -c` continues: the conversation the
// person last chatted in, by the time of their latest message in it,
// wherever they wrote it (terminal or a chat app). Renaming a session,
// ending it, or a one-shot prompt (`baton -p`) in it does not count. With
// no chat at all it is the most recently active session; store.ErrNotFound
// when there is none.
func LastChatted(ctx context.Context, a *app.App) (store.Session, error) {
	const page = 50
	var best, newest store.Session
	var bestAt time.Time
	for offset := 0; offset < lastChattedScan; offset += page {
		ss, err := a.Store.ListSessions(ctx, store.SessionFilter{OwnerID: a.Owner.ID, Limit: page, Offset: offset})
		if err != nil {
			return store.Session{}, fmt.Errorf("find the last conversation: %w", err)
		}
		for _, s := range ss {
			if newest.ID == "" {
				newest = s
			}
			// Sessions come by last activity, which is never before their
			// last message: none further on can have a newer one.
			if best.ID != "" && s.UpdatedAt.Before(bestAt) {
				return best, nil
			}
			at, err := lastSaid(ctx, a.Store, s.ID)
			if err != nil {
				return store.Session{}, fmt.Errorf("find the last conversation: %w", err)
			}
			if at.After(bestAt) {
				best, bestAt = s, at
			}
		}
		if len(ss) < page {
			break
		}
	}
	switch {
	case best.ID != "":
		return best, nil
	case newest.ID != "":
		return newest, nil
	}
	return store.Session{}, fmt.Errorf("no session to continue yet: %w", store.ErrNotFound)
}

// lastSaid is when the person last wrote in the session (zero if never):
// their own messages, not baton's notes nor one-shot prompts.
func lastSaid(ctx context.Context, st store.Store, sessionID string) (time.Time, error) {
	msgs, err := st.Transcript(ctx, sessionID)
	if err != nil {
		return time.Time{}, err
	}
	for i := len(msgs) - 1; i >= 0; i-- {
		m := msgs[i]
		if m.Role == store.RoleUser && m.Kind == "" && m.PlatformMsgID != OneShotMsgID {
			return m.CreatedAt, nil
		}
	}
	return time.Time{}, nil
}

// writeSessionTable lists sessions, marking current.
func writeSessionTable(w io.Writer, ss []store.Session, current string, now time.Time) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  ID\tTITLE\tMESSAGES\tWHERE\tACTIVE")
	for _, s := range ss {
		mark := " "
		if s.ID == current {
			mark = "*"
		}
		title := s.Title
		if title == "" {
			title = "-"
		}
		fmt.Fprintf(tw, "%s %s\t%s\t%d\t%s\t%s\n", mark, short(s.ID), clipHead(title, 40), s.MessageCount, heldWhere(s, now), ago(s.UpdatedAt, now))
	}
	tw.Flush()
}

// heldWhere is the place holding s and since when ("Telegram since 14:02").
func heldWhere(s store.Session, now time.Time) string {
	if s.Holder == "" {
		return placeOf(s.Platform + ":")
	}
	return placeOf(s.Holder) + " since " + place.Moment(s.HeldSince, now)
}

// writeHits lists search results.
func writeHits(w io.Writer, hits []store.SearchHit) {
	if len(hits) == 0 {
		fmt.Fprintln(w, "No matches.")
		return
	}
	for _, h := range hits {
		title := h.Title
		if title == "" {
			title = "untitled"
		}
		snippet := strings.Join(strings.Fields(h.Snippet), " ")
		fmt.Fprintf(w, "%s %s · %s: %s\n", short(h.Message.SessionID), clipHead(title, 30), h.Message.Role, clipHead(snippet, 120))
	}
}

// ListSessions writes the owner's sessions, newest first.
func ListSessions(ctx context.Context, a *app.App, w io.Writer, limit int) error {
	if limit <= 0 {
		limit = 50
	}
	ss, err := a.Store.ListSessions(ctx, store.SessionFilter{OwnerID: a.Owner.ID, Limit: limit})
	if err != nil {
		return fmt.Errorf("list sessions: %w", err)
	}
	if len(ss) == 0 {
		fmt.Fprintln(w, "No sessions yet: run `baton` to start one.")
		return nil
	}
	writeSessionTable(w, ss, "", time.Now())
	return nil
}

// ShowSession writes a session's header, its latest note, and its whole
// live transcript as text.
func ShowSession(ctx context.Context, a *app.App, w io.Writer, ref string) error {
	s, err := a.Resolve(ctx, ref)
	if err != nil {
		return err
	}
	msgs, err := a.Store.Transcript(ctx, s.ID)
	if err != nil {
		return fmt.Errorf("show session: %w", err)
	}
	state := "open"
	if !s.Open() {
		state = "ended (" + s.EndReason + ")"
	}
	fmt.Fprintf(w, "%s · %s\nid: %s\nstarted: %s on %s · %s · %d in / %d out tokens\nheld by: %s\n\n",
		describe(s), state, s.ID, s.CreatedAt.Local().Format("2006-01-02 15:04"), s.Platform, plural.Count(s.MessageCount, "message", "messages"), s.InputTokens, s.OutputTokens, heldWhere(s, time.Now()))
	if err := writeLatestNote(ctx, a, w, s.ID); err != nil {
		return fmt.Errorf("show session: %w", err)
	}
	out := newRenderer(w, false, nil)
	out.keptAt = func(att store.Attachment) string { return store.SessionFileOf(ctx, a.Store, s.ID, att) }
	printTranscript(out, msgs, 0)
	return nil
}

// SearchSessions writes full-text search hits over every session.
func SearchSessions(ctx context.Context, a *app.App, w io.Writer, query string) error {
	hits, err := a.Store.Search(ctx, store.SearchQuery{Text: query, Limit: 50})
	if err != nil {
		return fmt.Errorf("search: %w", err)
	}
	writeHits(w, hits)
	return nil
}

// ExportSession writes a session as JSON, superseded rows included, with
// the bytes of its attachments (base64, once per file).
func ExportSession(ctx context.Context, a *app.App, w io.Writer, ref string) error {
	s, err := a.Resolve(ctx, ref)
	if err != nil {
		return err
	}
	e, err := store.ExportSession(ctx, a.Store, s.ID)
	if err != nil {
		return err
	}
	data, err := store.MarshalExport(e)
	if err != nil {
		return fmt.Errorf("export session: %w", err)
	}
	_, err = w.Write(append(data, '\n'))
	return err
}

// DeleteSession removes a session with everything stored about it.
func DeleteSession(ctx context.Context, a *app.App, w io.Writer, ref string) error {
	s, err := a.Resolve(ctx, ref)
	if err != nil {
		return err
	}
	if err := a.Store.DeleteSession(ctx, s.ID); err != nil {
		return err
	}
	fmt.Fprintf(w, "Deleted %s.\n", describe(s))
	return nil
}

// RenameSession sets a session's title.
func RenameSession(ctx context.Context, a *app.App, w io.Writer, ref, title string) error {
	s, err := a.Resolve(ctx, ref)
	if err != nil {
		return err
	}
	s, err = a.Store.SetTitle(ctx, s.ID, title)
	if err != nil {
		return fmt.Errorf("rename session: %w", err)
	}
	fmt.Fprintf(w, "Renamed %s.\n", describe(s))
	return nil
}
