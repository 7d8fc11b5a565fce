package matrix

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/id"

	"github.com/baton-agent/baton/internal/platform"
)

// maxBackfillPages bounds how many pages of a room's missed events one
// sync fetches (Config.TimelineLimit each, at most 100).
const maxBackfillPages = 50

// Run checks the token with whoami, says Live, and long-polls /sync,
// handing each text message of a joined room to r, until ctx ends.
// Invitations from an owner are accepted, others declined. The sync token
// is stored (Config.Memory) only after every message of its batch was
// stored by r, so a restart resumes where baton stopped: nothing is
// handed over twice or skipped. On its very first start (no token stored)
// the adapter begins from now rather than answering old history. Any
// failure ends Run with the reason (a refused token marked
// platform.Refused); the gateway restarts it.
func (a *Adapter) Run(ctx context.Context, r platform.Receiver) error {
	err := a.run(ctx, r)
	if ctx.Err() != nil {
		return nil
	}
	return err
}

func (a *Adapter) run(ctx context.Context, r platform.Receiver) error {
	if err := a.identify(ctx); err != nil {
		return err
	}
	a.readMediaConfig(ctx)
	since, err := a.loadSince(ctx)
	if err != nil {
		return err
	}
	if since == "" {
		// First start: take the position of now, accepting the
		// invitations that wait, and hand over nothing older.
		resp, err := a.sync(ctx, "", 0)
		if err != nil {
			return err
		}
		if err := a.invitations(ctx, resp); err != nil {
			return err
		}
		if err := a.saveSince(ctx, resp.NextBatch); err != nil {
			return err
		}
		since = resp.NextBatch
	}
	r.Live()
	for ctx.Err() == nil {
		resp, err := a.sync(ctx, since, a.cfg.SyncTimeout)
		if err != nil {
			return err
		}
		if err := a.invitations(ctx, resp); err != nil {
			return err
		}
		rooms := make([]string, 0, len(resp.Rooms.Join))
		for room := range resp.Rooms.Join {
			rooms = append(rooms, room)
		}
		slices.Sort(rooms) // a stable order, so a redelivery comes in the same order
		for _, room := range rooms {
			tl := resp.Rooms.Join[room].Timeline
			events, err := a.timeline(ctx, id.RoomID(room), tl, since)
			if err != nil {
				return err
			}
			for _, ev := range events {
				if err := r.Receive(ctx, ev); err != nil {
					// Not stored: the token stays before this batch, so
					// the next run reads it again (the store drops the
					// events it already has by their ids).
					return fmt.Errorf("matrix: store event %s: %w", ev.ID, err)
				}
			}
			if err := a.saveNewest(ctx, id.RoomID(room), tl.Events); err != nil {
				return err
			}
		}
		if err := a.saveSince(ctx, resp.NextBatch); err != nil {
			return err
		}
		since = resp.NextBatch
	}
	return nil
}

// identify asks the homeserver whose the token is.
// Probe asks whoami whether the homeserver answers again: the supervisor
// of a platform that is down restarts it as soon as it does.
func (a *Adapter) Probe(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, a.cfg.RequestTimeout)
	defer cancel()
	if _, err := a.cli.Whoami(ctx); err != nil {
		return fmt.Errorf("matrix: probe: %w", failure("whoami", err, false))
	}
	return nil
}

func (a *Adapter) identify(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, a.cfg.RequestTimeout)
	defer cancel()
	resp, err := a.cli.Whoami(ctx)
	if err != nil {
		err = failure("whoami", err, false)
		if errors.Is(err, platform.ErrRefused) {
			return platform.Refused(fmt.Errorf("matrix: the homeserver refused the access token: %w", err))
		}
		return fmt.Errorf("matrix: %w", err)
	}
	if a.cfg.UserID != "" && resp.UserID != id.UserID(a.cfg.UserID) {
		return platform.Refused(fmt.Errorf("matrix: the access token belongs to %s, not to the configured %s", resp.UserID, a.cfg.UserID))
	}
	a.mu.Lock()
	a.me = resp.UserID
	a.mu.Unlock()
	a.cli.UserID = resp.UserID
	return nil
}

// sinceKey is where the sync token is stored: per account, since a token
// means nothing to another account.
func (a *Adapter) sinceKey() string { return "since:" + a.UserID() }

func (a *Adapter) loadSince(ctx context.Context) (string, error) {
	a.mu.Lock()
	since := a.since
	a.mu.Unlock()
	if since != "" || a.cfg.Memory == nil {
		return since, nil
	}
	since, err := a.cfg.Memory.Get(ctx, a.sinceKey())
	if err != nil {
		return "", fmt.Errorf("matrix: read the sync token: %w", err)
	}
	return since, nil
}

func (a *Adapter) saveSince(ctx context.Context, since string) error {
	if since == "" {
		return errors.New("matrix: sync answer without next_batch")
	}
	if a.cfg.Memory != nil {
		if err := a.cfg.Memory.Set(ctx, a.sinceKey(), since); err != nil {
			return fmt.Errorf("matrix: store the sync token: %w", err)
		}
	}
	a.mu.Lock()
	a.since = since
	a.mu.Unlock()
	return nil
}

// The parts of a /sync answer baton reads. Decoding into these rather
// than the library's full models keeps an odd event from failing a batch.
type syncResponse struct {
	NextBatch string `json:"next_batch"`
	Rooms     struct {
		Join   map[string]joinedRoom  `json:"join"`
		Invite map[string]invitedRoom `json:"invite"`
	} `json:"rooms"`
}

type joinedRoom struct {
	Timeline timeline `json:"timeline"`
}

type timeline struct {
	Events    []json.RawMessage `json:"events"`
	Limited   bool              `json:"limited"`
	PrevBatch string            `json:"prev_batch"`
}

type invitedRoom struct {
	InviteState struct {
		Events []wireEvent `json:"events"`
	} `json:"invite_state"`
}

type wireEvent struct {
	Type           string          `json:"type"`
	EventID        string          `json:"event_id"`
	Sender         string          `json:"sender"`
	StateKey       *string         `json:"state_key"`
	OriginServerTS int64           `json:"origin_server_ts"`
	Content        json.RawMessage `json:"content"`
	Unsigned       struct {
		PrevContent *struct {
			Membership string `json:"membership"`
		} `json:"prev_content"`
	} `json:"unsigned"`
}

type messageContent struct {
	MsgType    string          `json:"msgtype"`
	Body       string          `json:"body"`
	FileName   string          `json:"filename"`
	URL        string          `json:"url"`
	File       json.RawMessage `json:"file"` // an encrypted file's keys
	Info       *fileInfo       `json:"info"`
	Voice      json.RawMessage `json:"m.voice"`
	VoiceMSC   json.RawMessage `json:"org.matrix.msc3245.voice"`
	Membership string          `json:"membership"`
	RelatesTo  *relatesTo      `json:"m.relates_to"`
	NewContent json.RawMessage `json:"m.new_content"`
}

type relatesTo struct {
	RelType       string     `json:"rel_type,omitempty"`
	EventID       string     `json:"event_id,omitempty"`
	IsFallingBack bool       `json:"is_falling_back,omitempty"`
	InReplyTo     *inReplyTo `json:"m.in_reply_to,omitempty"`
}

type inReplyTo struct {
	EventID string `json:"event_id"`
}

// syncFilter asks only for what baton reads: messages and memberships in
// room timelines (and encrypted events, to say they cannot be read).
func (a *Adapter) syncFilter() string {
	types := []string{"m.room.message", "m.room.member", "m.room.encrypted"}
	f := map[string]any{
		"presence":     map[string]any{"types": []string{}},
		"account_data": map[string]any{"types": []string{}},
		"room": map[string]any{
			"timeline":     map[string]any{"limit": a.cfg.TimelineLimit, "types": types},
			"state":        map[string]any{"types": []string{}, "lazy_load_members": true},
			"ephemeral":    map[string]any{"types": []string{}},
			"account_data": map[string]any{"types": []string{}},
		},
	}
	b, _ := json.Marshal(f)
	return string(b)
}

// sync makes one /sync call, waiting up to wait for news.
func (a *Adapter) sync(ctx context.Context, since string, wait time.Duration) (*syncResponse, error) {
	q := map[string]string{"filter": a.syncFilter(), "timeout": strconv.FormatInt(wait.Milliseconds(), 10)}
	if since != "" {
		q["since"] = since
	}
	ctx, cancel := context.WithTimeout(ctx, wait+a.cfg.RequestTimeout)
	defer cancel()
	var resp syncResponse
	_, err := a.cli.MakeFullRequest(ctx, mautrix.FullRequest{
		Method:       http.MethodGet,
		URL:          a.cli.BuildURLWithQuery(mautrix.ClientURLPath{"v3", "sync"}, q),
		ResponseJSON: &resp,
	})
	if err != nil {
		return nil, fmt.Errorf("matrix: %w", failure("sync", err, false))
	}
	return &resp, nil
}

// timeline is a joined room's new messages as events, oldest first. A
// limited timeline (more news than one sync returns) is completed from
// /messages back to since, so nothing is skipped.
func (a *Adapter) timeline(ctx context.Context, room id.RoomID, tl timeline, since string) ([]platform.Event, error) {
	raws := tl.Events
	me := id.UserID(a.UserID())
	if tl.Limited && since != "" && tl.PrevBatch != "" && !joinedIn(raws, me) {
		seen, err := a.loadNewest(ctx, room)
		if err != nil {
			return nil, err
		}
		older, err := a.backfill(ctx, room, tl.PrevBatch, since, seen)
		if err != nil {
			return nil, err
		}
		raws = append(older, raws...)
	}
	var out []platform.Event
	for _, raw := range raws {
		var w wireEvent
		if err := json.Unmarshal(raw, &w); err != nil {
			a.log.Warn("matrix: undecodable event skipped", "room", room, "err", err)
			continue
		}
		if w.Type == "m.room.member" && w.StateKey != nil && id.UserID(*w.StateKey) == me {
			// The bot joined here in this stretch: what was said before
			// it was invited is history, not a message to it.
			var c messageContent
			_ = json.Unmarshal(w.Content, &c)
			prev := ""
			if w.Unsigned.PrevContent != nil {
				prev = w.Unsigned.PrevContent.Membership
			}
			if c.Membership == "invite" || (c.Membership == "join" && prev != "invite" && prev != "join") {
				out = out[:0]
			}
			continue
		}
		if w.Type == "m.room.encrypted" && id.UserID(w.Sender) != me {
			a.warnEncrypted(room)
			continue
		}
		ev, ok := a.decode(room, w)
		if ok {
			out = append(out, ev)
		}
	}
	return out, nil
}

// joinedIn reports whether the bot's own join is among raws: a room
// joined in this stretch, whose earlier history is not news.
func joinedIn(raws []json.RawMessage, me id.UserID) bool {
	for _, raw := range raws {
		var w wireEvent
		if json.Unmarshal(raw, &w) == nil && w.Type == "m.room.member" && w.StateKey != nil && id.UserID(*w.StateKey) == me {
			var c messageContent
			if json.Unmarshal(w.Content, &c) == nil && c.Membership == "join" {
				return true
			}
		}
	}
	return false
}

// newestKey is where the newest event of a room handed over is stored.
func (a *Adapter) newestKey(room id.RoomID) string {
	return "newest:" + a.UserID() + ":" + string(room)
}

// saveNewest remembers the newest of a room's timeline events, handed
// over now: a later backfill of the room stops there.
func (a *Adapter) saveNewest(ctx context.Context, room id.RoomID, raws []json.RawMessage) error {
	for i := len(raws) - 1; i >= 0; i-- {
		var w wireEvent
		if json.Unmarshal(raws[i], &w) != nil || w.EventID == "" {
			continue
		}
		if a.cfg.Memory != nil {
			if err := a.cfg.Memory.Set(ctx, a.newestKey(room), w.EventID); err != nil {
				return fmt.Errorf("matrix: store the newest event of %s: %w", room, err)
			}
		}
		a.mu.Lock()
		a.newestSeen[room] = w.EventID
		a.mu.Unlock()
		return nil
	}
	return nil
}

func (a *Adapter) loadNewest(ctx context.Context, room id.RoomID) (string, error) {
	a.mu.Lock()
	ev := a.newestSeen[room]
	a.mu.Unlock()
	if ev != "" || a.cfg.Memory == nil {
		return ev, nil
	}
	ev, err := a.cfg.Memory.Get(ctx, a.newestKey(room))
	if err != nil {
		return "", fmt.Errorf("matrix: read the newest event of %s: %w", room, err)
	}
	return ev, nil
}

// backfill fetches the events of room between since and from (a
// timeline's prev_batch), oldest first. It stops at seen, the newest
// event handed over before, if it comes first: homeservers differ in how
// exactly they honour "to".
func (a *Adapter) backfill(ctx context.Context, room id.RoomID, from, since, seen string) ([]json.RawMessage, error) {
	filter, _ := json.Marshal(map[string]any{"types": []string{"m.room.message", "m.room.member", "m.room.encrypted"}})
	limit := min(a.cfg.TimelineLimit, 100)
	var newestFirst []json.RawMessage
	for page := 0; page < maxBackfillPages && from != ""; page++ {
		var resp struct {
			Chunk []json.RawMessage `json:"chunk"`
			End   string            `json:"end"`
		}
		q := map[string]string{"dir": "b", "from": from, "to": since, "limit": strconv.Itoa(limit), "filter": string(filter)}
		rctx, cancel := context.WithTimeout(ctx, a.cfg.RequestTimeout)
		_, err := a.cli.MakeFullRequest(rctx, mautrix.FullRequest{
			Method:       http.MethodGet,
			URL:          a.cli.BuildURLWithQuery(mautrix.ClientURLPath{"v3", "rooms", room, "messages"}, q),
			ResponseJSON: &resp,
		})
		cancel()
		if err != nil {
			return nil, fmt.Errorf("matrix: %w", failure("messages of "+string(room), err, false))
		}
		reached := false
		for _, raw := range resp.Chunk {
			var w wireEvent
			if seen != "" && json.Unmarshal(raw, &w) == nil && w.EventID == seen {
				reached = true
				break
			}
			newestFirst = append(newestFirst, raw)
		}
		if reached || len(resp.Chunk) == 0 || resp.End == "" || resp.End == from {
			break
		}
		from = resp.End
	}
	slices.Reverse(newestFirst)
	return newestFirst, nil
}

func (a *Adapter) warnEncrypted(room id.RoomID) {
	a.mu.Lock()
	first := !a.warned[room]
	a.warned[room] = true
	a.mu.Unlock()
	if first {
		a.log.Warn("matrix: an encrypted message was skipped: encrypted rooms are not supported; use an unencrypted room", "room", room)
	}
}

// decode turns a room event into a person's message. ok is false for
// what baton does not act on: the bot's own events, notices (bots answer
// each other with them), edits, redactions, messages that are neither
// text nor a file (m.image, m.file, m.audio, m.video: see fileOf).
func (a *Adapter) decode(room id.RoomID, w wireEvent) (platform.Event, bool) {
	if w.Type != "m.room.message" || w.EventID == "" || w.Sender == "" || id.UserID(w.Sender) == id.UserID(a.UserID()) {
		return platform.Event{}, false
	}
	var c messageContent
	if err := json.Unmarshal(w.Content, &c); err != nil {
		a.log.Warn("matrix: undecodable message skipped", "room", room, "event", w.EventID, "err", err)
		return platform.Event{}, false
	}
	if c.RelatesTo != nil && c.RelatesTo.RelType == "m.replace" {
		return platform.Event{}, false
	}
	text := c.Body
	var files []platform.Attachment
	if att, caption, ok := a.fileOf(c); ok {
		files, text = []platform.Attachment{att}, caption
	} else if c.MsgType != "m.text" && c.MsgType != "m.emote" {
		return platform.Event{}, false
	}
	if c.RelatesTo != nil && c.RelatesTo.InReplyTo != nil {
		text = stripReplyFallback(text)
	}
	if strings.TrimSpace(text) == "" && len(files) == 0 {
		return platform.Event{}, false
	}
	at := platform.Address{Platform: Name, Kind: platform.Group, Chat: string(room)}
	if c.RelatesTo != nil && c.RelatesTo.RelType == "m.thread" && c.RelatesTo.EventID != "" {
		at.Kind, at.Thread = platform.Thread, c.RelatesTo.EventID
		a.remember(at.Key(), id.EventID(w.EventID))
	}
	sender := id.UserID(w.Sender)
	name := sender.Localpart()
	if name == "" {
		name = w.Sender
	}
	if c.MsgType == "m.emote" {
		text = "* " + name + " " + text
	}
	ts := time.UnixMilli(w.OriginServerTS).UTC()
	if w.OriginServerTS <= 0 {
		ts = time.Now().UTC()
	}
	return platform.Event{At: at, SenderID: w.Sender, Sender: name, Text: text, ID: w.EventID, Time: ts, Attachments: files}, true
}

// stripReplyFallback drops the quoted "> <@someone> …" lines older
// clients put before a reply's own text.
func stripReplyFallback(body string) string {
	if !strings.HasPrefix(body, "> ") {
		return body
	}
	lines := strings.Split(body, "\n")
	i := 0
	for i < len(lines) && strings.HasPrefix(lines[i], ">") {
		i++
	}
	if i < len(lines) && lines[i] == "" {
		i++
	}
	return strings.Join(lines[i:], "\n")
}

// invitations joins the rooms an owner invited the bot to and declines
// the others' invitations.
func (a *Adapter) invitations(ctx context.Context, resp *syncResponse) error {
	me := id.UserID(a.UserID())
	for room, inv := range resp.Rooms.Invite {
		var inviter id.UserID
		for _, ev := range inv.InviteState.Events {
			if ev.Type == "m.room.member" && ev.StateKey != nil && id.UserID(*ev.StateKey) == me {
				inviter = id.UserID(ev.Sender)
			}
		}
		rctx, cancel := context.WithTimeout(ctx, a.cfg.RequestTimeout)
		var err error
		if a.owners[inviter] {
			_, err = a.cli.JoinRoomByID(rctx, id.RoomID(room))
			err = failure("join "+room, err, false)
			if err == nil {
				a.log.Info("matrix: joined a room on the owner's invitation", "room", room, "inviter", inviter)
			}
		} else {
			_, err = a.cli.LeaveRoom(rctx, id.RoomID(room))
			err = failure("decline the invitation to "+room, err, false)
			if err == nil {
				a.log.Info("matrix: declined an invitation from someone who is not an owner", "room", room, "inviter", inviter)
			}
		}
		cancel()
		if err != nil {
			if cl, _ := platform.Classify(err); cl == platform.ClassPermanent {
				// The room is gone or closed to the bot: nothing to do
				// again next time.
				a.log.Warn("matrix: invitation could not be answered", "room", room, "err", err)
				continue
			}
			return fmt.Errorf("matrix: %w", err)
		}
	}
	return nil
}
