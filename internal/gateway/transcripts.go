package gateway

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/baton-agent/baton/internal/note"
	"github.com/baton-agent/baton/internal/place"
	"github.com/baton-agent/baton/internal/platform"
	"github.com/baton-agent/baton/internal/store"
	"github.com/baton-agent/baton/internal/transcript"
)

// TranscriptStore is the part of the store Transcripts reads.
type TranscriptStore interface {
	ListSessions(ctx context.Context, f store.SessionFilter) ([]store.Session, error)
	BindingsForSession(ctx context.Context, sessionID string) ([]store.Binding, error)
	LookupBinding(ctx context.Context, key string) (store.Binding, error)
	Transcript(ctx context.Context, sessionID string) ([]store.Message, error)
}

// Transcripts offers platforms the owner's conversations from the store
// (platform.Transcripts): the web page's side bar and history.
type Transcripts struct {
	Store   TranscriptStore
	OwnerID string
	// Display names platforms for people, as Config.Display does.
	Display map[string]string
}

var (
	_ platform.Transcripts = Transcripts{}
	_ platform.FileOpener  = Transcripts{}
)

// fileReader is the store's reading of kept files.
type fileReader interface {
	OpenFile(ctx context.Context, sha256 string) (io.ReadCloser, error)
}

// OpenFile is a file the transcript of the session bound to key carries,
// by its hash (ref): one another session carries is not found here, so a
// page shows only what its own conversation holds.
func (t Transcripts) OpenFile(ctx context.Context, key, ref string) (platform.File, error) {
	fr, ok := t.Store.(fileReader)
	if !ok {
		return platform.File{}, fmt.Errorf("file %s of %s: the store keeps no files: %w", ref, key, store.ErrNotFound)
	}
	bd, err := t.Store.LookupBinding(ctx, key)
	if err != nil {
		return platform.File{}, fmt.Errorf("file %s of %s: %w", ref, key, err)
	}
	msgs, err := t.Store.Transcript(ctx, bd.SessionID)
	if err != nil {
		return platform.File{}, fmt.Errorf("file %s of %s: %w", ref, key, err)
	}
	for _, m := range msgs {
		for _, a := range m.Attachments {
			if a.SHA256 != ref {
				continue
			}
			return platform.File{Name: transcript.Name(a), MediaType: a.MediaType, Size: a.Size,
				Open: func(ctx context.Context) (io.ReadCloser, error) { return fr.OpenFile(ctx, a.SHA256) }}, nil
		}
	}
	return platform.File{}, fmt.Errorf("file %s of %s: %w", ref, key, store.ErrNotFound)
}

// conversationsListed caps how many recent sessions Conversations looks at.
const conversationsListed = 50

// Conversations lists the places on platform bound to one of the owner's
// recent sessions, most recently active first (the store's order).
func (t Transcripts) Conversations(ctx context.Context, p string) ([]platform.Conversation, error) {
	ss, err := t.Store.ListSessions(ctx, store.SessionFilter{OwnerID: t.OwnerID, Limit: conversationsListed})
	if err != nil {
		return nil, fmt.Errorf("list conversations: %w", err)
	}
	out := []platform.Conversation{}
	for _, s := range ss {
		bs, err := t.Store.BindingsForSession(ctx, s.ID)
		if err != nil {
			return nil, fmt.Errorf("list conversations: %w", err)
		}
		for _, bd := range bs {
			if !strings.HasPrefix(bd.Key, p+":") {
				continue
			}
			title := s.Title
			if title == "" {
				title = "Conversation " + shortID(s.ID)
			}
			out = append(out, platform.Conversation{Key: bd.Key, Title: title, Updated: s.UpdatedAt})
		}
	}
	return out, nil
}

// View is the transcript of the session bound to key, as people see it;
// none yet is empty.
func (t Transcripts) View(ctx context.Context, key string) ([]platform.Line, error) {
	bd, err := t.Store.LookupBinding(ctx, key)
	if errors.Is(err, store.ErrNotFound) {
		return []platform.Line{}, nil
	} else if err != nil {
		return nil, fmt.Errorf("history of %s: %w", key, err)
	}
	msgs, err := t.Store.Transcript(ctx, bd.SessionID)
	if err != nil {
		return nil, fmt.Errorf("history of %s: %w", key, err)
	}
	lines := withIDs(msgs, TranscriptLines(msgs))
	if ns, ok := t.Store.(noteStore); ok {
		lines = withNotes(ctx, ns, msgs, lines)
	}
	if ps, ok := t.Store.(parkedStore); ok {
		if lines, err = withParked(ctx, ps, key, lines); err != nil {
			return nil, fmt.Errorf("history of %s: %w", key, err)
		}
	}
	if hs, ok := t.Store.(holderStore); ok {
		lines = t.withWhere(ctx, hs, key, bd.SessionID, lines)
	}
	return lines, nil
}

// withIDs gives each of the person's lines the platform's id of its
// message: the person's messages give one line each, in order.
func withIDs(msgs []store.Message, lines []platform.Line) []platform.Line {
	k := 0
	for i := range lines {
		if lines[i].Role != string(transcript.User) {
			continue
		}
		for k < len(msgs) && (msgs[k].Role != store.RoleUser || msgs[k].Kind != "") {
			k++
		}
		if k == len(msgs) {
			break
		}
		lines[i].ID = msgs[k].PlatformMsgID
		k++
	}
	return lines
}

// parkedStore is the store's parked messages, for a history that shows
// what was said at a place while the session was held elsewhere.
type parkedStore interface {
	Parked(ctx context.Context, addressKey string) ([]store.Inbound, error)
}

// withParked adds the messages parked at key, marked kept, among the
// lines by the time they were said. One already in the transcript (it
// runs now, after /continue) is shown there alone.
func withParked(ctx context.Context, ps parkedStore, key string, lines []platform.Line) ([]platform.Line, error) {
	parked, err := ps.Parked(ctx, key)
	if err != nil || len(parked) == 0 {
		return lines, err
	}
	ran := map[string]bool{}
	for _, l := range lines {
		if l.ID != "" {
			ran[l.ID] = true
		}
	}
	for _, in := range parked {
		if in.PlatformMsgID != "" && ran[in.PlatformMsgID] {
			continue
		}
		at := len(lines)
		for at > 0 && lines[at-1].Time.After(in.ReceivedAt) {
			at--
		}
		lines = slices.Insert(lines, at, platform.Line{Role: string(transcript.User), Text: in.Text, Time: in.ReceivedAt, ID: in.PlatformMsgID, Kept: true})
	}
	return lines, nil
}

// holderStore is where the store says a session is, for a history that
// ends with it when that is not here.
type holderStore interface {
	GetSession(ctx context.Context, id string) (store.Session, error)
	HandoffState(ctx context.Context, sessionID string) (store.Handoff, error)
}

// withWhere ends the history of key with the line the place answers
// with while its session is held elsewhere or on its way out, so a page
// opened then says where the conversation is, as it was told live.
func (t Transcripts) withWhere(ctx context.Context, hs holderStore, key, sessionID string, lines []platform.Line) []platform.Line {
	s, err := hs.GetSession(ctx, sessionID)
	if err != nil {
		return lines
	}
	name := func(k string) string { return place.NameOf(k, TerminalPlatform, t.Display) }
	h, err := hs.HandoffState(ctx, sessionID)
	inFlight := err == nil && (h.State == store.HandoffPending || h.State == store.HandoffRunning)
	if s.HeldElsewhere(key) {
		if inFlight && h.Destination == key {
			// On its way here: the greeting is shown before the move
			// completes, and a page reading its history then must not
			// end it with "in the terminal now".
			return lines
		}
		return append(lines, platform.Line{Role: string(transcript.Note), Text: place.Elsewhere(name(s.Holder), s.HeldSince, time.Now()), Time: s.HeldSince})
	}
	if inFlight && s.Holder == key && h.Destination != key {
		return append(lines, platform.Line{Role: string(transcript.Note), Text: place.OnItsWay(name(h.Platform + ":")), Time: h.RequestedAt})
	}
	return lines
}

// noteStore is the store's handoff notes, for a history that shows them
// where they were first shown.
type noteStore interface {
	HandoffNote(ctx context.Context, handoffID int64) (store.Note, error)
}

// withNotes puts each handoff's note at the top of the first answer after
// its handoff line, as the first message at the destination showed it.
// Each handoff message is one handoff line, in the same order.
func withNotes(ctx context.Context, ns noteStore, msgs []store.Message, lines []platform.Line) []platform.Line {
	var handoffs []int64
	for _, m := range msgs {
		if m.Kind == store.KindHandoff {
			id, _ := strconv.ParseInt(strings.TrimPrefix(m.PlatformMsgID, "handoff:"), 10, 64)
			handoffs = append(handoffs, id)
		}
	}
	k := 0
	for i := 0; i < len(lines); i++ {
		if lines[i].Role != string(transcript.Note) || !strings.HasPrefix(lines[i].Text, "↪ ") || k >= len(handoffs) {
			continue
		}
		id := handoffs[k]
		k++
		if id <= 0 {
			continue
		}
		row, err := ns.HandoffNote(ctx, id)
		if err != nil {
			continue // none (an older handoff), or unreadable: the history stands without it
		}
		n, err := note.FromStored(row)
		if err != nil {
			continue
		}
		at := i + 1
		for at < len(lines) && lines[at].Role != string(transcript.Assistant) && lines[at].Role != string(transcript.User) {
			at++
		}
		if at < len(lines) && lines[at].Role == string(transcript.Assistant) {
			lines[at].Text = withNote(n, lines[at].Text)
			continue
		}
		lines = slices.Insert(lines, i+1, platform.Line{Role: string(transcript.Assistant), Text: n.Markdown(), Time: row.CreatedAt})
	}
	return lines
}

// TranscriptLines turns a stored transcript into what a page shows:
// transcript.View decides what each message is; a page's line marks tool
// calls →, results ← and handoffs ↪.
func TranscriptLines(msgs []store.Message) []platform.Line {
	view := transcript.View(msgs)
	out := make([]platform.Line, 0, len(view))
	for _, l := range view {
		line := platform.Line{Role: string(l.Role), Text: l.Text, Time: l.Time}
		for _, f := range l.Files {
			line.Files = append(line.Files, platform.LineFile{Ref: f.SHA256, Name: f.Name, MediaType: f.MediaType, Size: f.Size})
		}
		switch l.Role {
		case transcript.ToolCall:
			line.Role, line.Tool, line.Text = "tool", l.Tool, "→ "+l.Tool+" "+l.Args
			line.Call, line.Detail, line.CallID = "call", l.Args, l.CallID
		case transcript.ToolResult:
			line.Role, line.Tool, line.Text = "tool", l.Tool, "← "+l.Tool+": "+l.Text
			line.Call, line.Detail, line.CallID = "result", l.Text, l.CallID
		case transcript.Note:
			if l.Kind == store.KindHandoff {
				line.Text = "↪ " + l.Text
			}
		}
		out = append(out, line)
	}
	return out
}
