package cli

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/baton-agent/baton/internal/app"
	"github.com/baton-agent/baton/internal/store"
)

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
		fmt.Fprintf(tw, "%s %s\t%s\t%d\t%s\t%s\n", mark, short(s.ID), clipHead(title, 40), s.MessageCount, s.Platform, ago(s.UpdatedAt, now))
	}
	tw.Flush()
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
	fmt.Fprintf(w, "%s · %s\nid: %s\nstarted: %s on %s · %d messages · %d in / %d out tokens\n\n",
		describe(s), state, s.ID, s.CreatedAt.Local().Format("2006-01-02 15:04"), s.Platform, s.MessageCount, s.InputTokens, s.OutputTokens)
	if err := writeLatestNote(ctx, a, w, s.ID); err != nil {
		return fmt.Errorf("show session: %w", err)
	}
	out := newRenderer(w, false, nil)
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

// ExportSession writes a session as JSON, superseded rows included.
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
