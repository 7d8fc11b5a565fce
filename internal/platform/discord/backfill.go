package discord

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"

	"github.com/disgoorg/disgo/discord"
	"github.com/disgoorg/disgo/rest"
)

// Catching up after a long outage. Discord resumes a gateway session for
// a while after its connection ends, replaying what was said meanwhile;
// past that it answers INVALID_SESSION, a new session starts, and nothing
// from the gap is replayed. So the adapter marks, for each channel where
// a person last spoke to baton, the newest message it handed over
// (platform.Marks, with the channel's guild, which REST messages do not
// carry; kept with the session in Config.Memory), and when a session had to
// start afresh it asks each such channel for what came after, oldest
// first, before it hands over anything newer. What comes twice (a message
// the old session had replayed too) is dropped by the gateway's inbox,
// which knows every message by its id. A channel nobody had spoken to
// baton in before the outage is not known, so not caught up.

// maxMarked bounds the channels marked (platform.Marks).
const maxMarked = 32

// catchUpPage is the most messages Discord gives for one request.
const catchUpPage = 100

// maxCatchUpPages bounds one channel's catch-up at 2,000 messages.
const maxCatchUpPages = 20

// newer reports whether snowflake x is after y: decimal ids without
// leading zeros, so the longer is the larger.
func newer(x, y string) bool {
	if len(x) != len(y) {
		return len(x) > len(y)
	}
	return x > y
}

// sessionStarted is told of a READY: a new session, which replays
// nothing from before it, so a catch-up is due wherever people spoke.
func (a *Adapter) sessionStarted() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.marks.Len() > 0 {
		a.catchUpDue = true
	}
}

// catchUp hands over, channel by channel, what people said after the
// newest message handed over there, when a catch-up is due. It runs
// before the connection reads its next event, so those come after. A
// channel baton can no longer read is forgotten; any other failure ends
// the connection with the catch-up still due, for the next one.
func (c *conn) catchUp(ctx context.Context) error {
	a := c.a
	a.mu.Lock()
	due := a.catchUpDue
	a.mu.Unlock()
	if !due {
		return nil
	}
	channels := slices.Sorted(maps.Keys(a.marks.All()))
	caught := 0
	for _, ch := range channels {
		n, err := c.catchUpChannel(ctx, ch)
		caught += n
		switch {
		case err == nil:
		case status(err) == http.StatusNotFound || status(err) == http.StatusForbidden:
			a.log.Info("discord: a channel people spoke in is gone or closed to baton; not catching it up", "channel", ch, "err", err)
			a.marks.Forget(ch)
		default:
			return fmt.Errorf("discord: catch up on channel %s: %w", ch, err)
		}
	}
	a.mu.Lock()
	a.catchUpDue = false
	a.mu.Unlock()
	a.saveSession(ctx)
	if caught > 0 {
		a.log.Info("discord: caught up on messages said while baton was away", "messages", caught, "channels", len(channels))
	}
	return nil
}

// catchUpChannel hands over the messages after the channel's newest one
// handed over, oldest first, and says how many it asked about.
func (c *conn) catchUpChannel(ctx context.Context, channel string) (int, error) {
	seen := 0
	for range maxCatchUpPages {
		mark, ok := c.a.marks.Get(channel)
		if !ok {
			return seen, nil
		}
		var page []wireMessage
		q := discord.QueryValues{"after": mark.Last, "limit": catchUpPage}
		if err := c.a.call(ctx, "GET /channels/"+channel+"/messages", rest.GetMessages.Compile(q, channel), nil, &page); err != nil {
			return seen, err
		}
		// Discord gives the page newest first.
		slices.SortFunc(page, func(x, y wireMessage) int {
			switch {
			case x.ID == y.ID:
				return 0
			case newer(x.ID, y.ID):
				return 1
			}
			return -1
		})
		for _, m := range page {
			if m.GuildID == "" {
				m.GuildID = mark.Where
			}
			m.ChannelID = channel
			if err := c.handle(ctx, m); err != nil {
				return seen, err
			}
			seen++
			// Past what was skipped too (the bot's own, other bots'):
			// the next page starts after this one.
			c.a.marks.Pass(channel, m.ID)
		}
		if len(page) < catchUpPage {
			return seen, nil
		}
	}
	c.a.log.Warn("discord: stopped catching up a channel after its first messages", "channel", channel, "messages", seen)
	return seen, nil
}
