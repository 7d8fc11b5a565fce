package slack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/slack-go/slack"

	"github.com/baton-agent/baton/internal/platform"
)

// Catching up after an outage. Socket Mode delivers an event only over an
// open connection, and Slack retries one that went unacknowledged for a
// few minutes at most: what people said while baton was away longer is
// not delivered. So the adapter marks, for each place where a person last
// spoke to baton (a DM, a channel's top level, a thread), the newest
// message it handed over (platform.Marks, kept in Config.Memory), and on
// every new connection, before its first envelope, asks each place for
// what came after: conversations.history for a top level,
// conversations.replies for a thread, oldest first. What comes twice (a
// message Slack delivers once more as well) is dropped by the adapter's
// memory of ids and by the gateway's inbox. A place nobody had spoken to
// baton in before the outage is not known, so not caught up.

// maxMarked bounds the places marked (platform.Marks).
const maxMarked = 32

// catchUpPage is how many messages one history request asks for.
const catchUpPage = 100

// maxCatchUpPages bounds one place's catch-up at 2,000 messages (the
// newest, for a top level, whose history Slack gives newest first).
const maxCatchUpPages = 20

// saveMarksEvery paces keeping the marks in Config.Memory; they are kept
// when Run ends too. After a crash the catch-up starts from a little
// earlier, and what it hands over twice is dropped by the inbox.
const saveMarksEvery = 30 * time.Second

// marksKey is where Config.Memory keeps the marks.
const marksKey = "marks"

// place is what a mark needs to ask Slack about its place.
type place struct {
	Channel string `json:"channel"`
	Thread  string `json:"thread,omitempty"` // the root's ts; "" for the top level
	DM      bool   `json:"dm,omitempty"`
}

func placeKey(channel, thread string) string { return channel + "/" + thread }

// newerTS reports whether ts x ("1700000000.000100") is after y.
func newerTS(x, y string) bool {
	xs, xf, _ := strings.Cut(x, ".")
	ys, yf, _ := strings.Cut(y, ".")
	if len(xs) != len(ys) {
		return len(xs) > len(ys)
	}
	if xs != ys {
		return xs > ys
	}
	return xf > yf
}

// mark notes ev, a person's message just handed over, as its place's
// newest, and keeps the marks when they were last kept a while ago.
func (a *Adapter) mark(ctx context.Context, ev platform.Event) {
	if strings.HasPrefix(ev.ID, "slash:") {
		return // a slash command is no message in the history
	}
	channel, ts, ok := strings.Cut(ev.ID, ":")
	if !ok {
		return
	}
	a.marks.Note(placeKey(channel, ev.At.Thread), place{Channel: channel, Thread: ev.At.Thread, DM: ev.At.Kind == platform.DM}, ts)
	a.mu.Lock()
	due := time.Since(a.marksSaved) >= saveMarksEvery
	a.mu.Unlock()
	if due {
		a.saveMarks(ctx)
	}
}

// loadMarks reads the marks an earlier run kept, once.
func (a *Adapter) loadMarks(ctx context.Context) {
	a.mu.Lock()
	if a.marksLoaded || a.cfg.Memory == nil {
		a.marksLoaded = true
		a.mu.Unlock()
		return
	}
	a.marksLoaded = true
	a.mu.Unlock()
	v, err := a.cfg.Memory.Get(ctx, marksKey)
	if err != nil {
		a.log.Warn("slack: read where people last spoke to baton; not catching up on them", "err", err)
		return
	}
	if v == "" {
		return
	}
	var saved map[string]platform.Mark[place]
	if err := json.Unmarshal([]byte(v), &saved); err != nil {
		a.log.Warn("slack: undecodable marks of where people last spoke to baton; not catching up on them", "err", err)
		return
	}
	a.marks.Restore(saved)
}

// saveMarks keeps the marks in Config.Memory.
func (a *Adapter) saveMarks(ctx context.Context) {
	a.mu.Lock()
	a.marksSaved = time.Now()
	a.mu.Unlock()
	if a.cfg.Memory == nil {
		return
	}
	v := ""
	if all := a.marks.All(); len(all) > 0 {
		b, _ := json.Marshal(all)
		v = string(b)
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), a.cfg.RequestTimeout)
	defer cancel()
	if err := a.cfg.Memory.Set(ctx, marksKey, v); err != nil {
		a.log.Warn("slack: keep where people last spoke to baton", "err", err)
	}
}

// gone are the answers that say baton can no longer read a place.
var gone = map[string]bool{
	"channel_not_found": true, "not_in_channel": true, "thread_not_found": true,
	"is_archived": true, "missing_scope": true, "access_denied": true,
}

// catchUp hands over what people said in each marked place after its
// mark. A place baton can no longer read is forgotten; any other failure
// ends the connection, and the next one catches up again.
func (a *Adapter) catchUp(ctx context.Context, r platform.Receiver) error {
	keys := slices.Sorted(maps.Keys(a.marks.All()))
	caught := 0
	for _, k := range keys {
		n, err := a.catchUpPlace(ctx, r, k)
		caught += n
		var resp slack.SlackErrorResponse
		switch {
		case err == nil:
		case errors.As(err, &resp) && gone[resp.Err]:
			a.log.Info("slack: a place people spoke in is gone or closed to baton; not catching it up", "place", k, "err", err)
			a.marks.Forget(k)
		default:
			return fmt.Errorf("slack: catch up on %s: %w", k, err)
		}
	}
	if len(keys) > 0 {
		a.saveMarks(ctx)
	}
	if caught > 0 {
		a.log.Info("slack: caught up on messages said while baton was away", "messages", caught, "places", len(keys))
	}
	return nil
}

// catchUpPlace hands over the place's messages after its mark, oldest
// first, and says how many it handed over.
func (a *Adapter) catchUpPlace(ctx context.Context, r platform.Receiver, key string) (int, error) {
	mk, ok := a.marks.Get(key)
	if !ok {
		return 0, nil
	}
	msgs, err := a.history(ctx, mk)
	if err != nil {
		return 0, err
	}
	slices.SortFunc(msgs, func(x, y slack.Message) int {
		switch {
		case x.Timestamp == y.Timestamp:
			return 0
		case newerTS(x.Timestamp, y.Timestamp):
			return 1
		}
		return -1
	})
	handed := 0
	for _, m := range msgs {
		if !newerTS(m.Timestamp, mk.Last) {
			continue // a thread's root, or what the mark covers
		}
		e := messageEvent{Type: cmpOr(m.Type, "message"), Subtype: m.SubType, Channel: mk.Where.Channel, User: m.User,
			BotID: m.BotID, Text: m.Text, TS: m.Timestamp, ThreadTS: m.ThreadTimestamp, Hidden: m.Hidden, Files: wireFiles(m.Files)}
		if mk.Where.DM {
			e.ChannelType = "im"
		}
		ev, ok, err := messageOf(e, a.BotUserID(), a.opener)
		if err != nil {
			a.log.Warn("slack: undecodable message in the history skipped", "place", key, "err", err)
		}
		if ok && !a.seen.Has(ev.ID) {
			if err := r.Receive(ctx, ev); err != nil {
				return handed, fmt.Errorf("store message %s: %w", ev.ID, err)
			}
			a.seen.Add(ev.ID)
			a.mark(ctx, ev)
			handed++
		}
		// Past what was skipped too: the next catch-up starts after it.
		a.marks.Pass(key, m.Timestamp)
	}
	return handed, nil
}

// history is what Slack holds of a marked place after its mark: a top
// level's messages (conversations.history) or a thread's
// (conversations.replies, its root among them), in pages.
func (a *Adapter) history(ctx context.Context, mk platform.Mark[place]) ([]slack.Message, error) {
	var out []slack.Message
	cursor := ""
	for range maxCatchUpPages {
		cctx, cancel := context.WithTimeout(ctx, a.cfg.RequestTimeout)
		var page []slack.Message
		var next string
		var err error
		if mk.Where.Thread == "" {
			var resp *slack.GetConversationHistoryResponse
			resp, err = a.api.GetConversationHistoryContext(cctx, &slack.GetConversationHistoryParameters{
				ChannelID: mk.Where.Channel, Oldest: mk.Last, Limit: catchUpPage, Cursor: cursor})
			if err == nil {
				page, next = resp.Messages, resp.ResponseMetaData.NextCursor
				if !resp.HasMore {
					next = ""
				}
			}
		} else {
			var more bool
			page, more, next, err = a.api.GetConversationRepliesContext(cctx, &slack.GetConversationRepliesParameters{
				ChannelID: mk.Where.Channel, Timestamp: mk.Where.Thread, Oldest: mk.Last, Limit: catchUpPage, Cursor: cursor})
			if !more {
				next = ""
			}
		}
		cancel()
		if err != nil {
			if mk.Where.Thread == "" {
				return nil, classify("conversations.history", err)
			}
			return nil, classify("conversations.replies", err)
		}
		out = append(out, page...)
		if next == "" {
			return out, nil
		}
		cursor = next
	}
	a.log.Warn("slack: caught up on the newest messages of a place only", "channel", mk.Where.Channel, "messages", len(out))
	return out, nil
}
