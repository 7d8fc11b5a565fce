package slack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/coder/websocket"

	"github.com/baton-agent/baton/internal/platform"
)

// maxEnvelope bounds one Socket Mode frame: a message of Slack's longest
// (40,000 characters) with its envelope fits many times over.
const maxEnvelope = 4 << 20

// ErrReconnect ends Run when Slack asks the client to reconnect (a
// disconnect envelope: the connection is refreshed every few hours); the
// supervisor starts the next connection.
var ErrReconnect = errors.New("Slack asked for a new connection")

// envelope is one Socket Mode frame from Slack.
type envelope struct {
	Type         string          `json:"type"`
	EnvelopeID   string          `json:"envelope_id"`
	Reason       string          `json:"reason"`
	Payload      json.RawMessage `json:"payload"`
	RetryAttempt int             `json:"retry_attempt"`
}

// Run checks the bot token (auth.test), opens a Socket Mode connection
// with the app token, says Live once Slack's hello arrives, and hands
// each message to r, acknowledging its envelope only after r stored it.
// It returns when ctx ends (nil), when Slack asks for a new connection
// (ErrReconnect), when the socket drops or stops answering pings, or when
// r could not store an event (its envelope stays unacknowledged, so Slack
// delivers it again on the next connection). Refused tokens are marked
// platform.Refused.
func (a *Adapter) Run(ctx context.Context, r platform.Receiver) error {
	err := a.run(ctx, r)
	if ctx.Err() != nil {
		return nil
	}
	return err
}

func (a *Adapter) run(ctx context.Context, r platform.Receiver) error {
	a.loadMarks(ctx)
	defer a.saveMarks(ctx)
	if err := a.identify(ctx); err != nil {
		return err
	}
	conn, err := a.connect(ctx)
	if err != nil {
		return err
	}
	defer conn.CloseNow()
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	go a.keepAlive(ctx, cancel, conn)

	live := false
	for {
		_, data, err := conn.Read(ctx)
		if err != nil {
			if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) {
				err = cause
			}
			return fmt.Errorf("slack: socket: %w", err)
		}
		var env envelope
		if err := json.Unmarshal(data, &env); err != nil {
			a.log.Warn("slack: undecodable Socket Mode frame skipped", "err", err)
			continue
		}
		switch env.Type {
		case "hello":
			if !live {
				live = true
				r.Live()
				// Before any envelope of this connection: what was said
				// while none was open comes first.
				if err := a.catchUp(ctx, r); err != nil {
					return err
				}
			}
			continue
		case "disconnect":
			_ = conn.Close(websocket.StatusNormalClosure, "")
			return fmt.Errorf("slack: %w (%s)", ErrReconnect, cmpOr(env.Reason, "no reason given"))
		}
		if env.EnvelopeID == "" {
			continue // nothing to acknowledge
		}
		ev, ok := a.decodeEnvelope(env)
		if ok && !a.seen.Has(ev.ID) {
			if err := r.Receive(ctx, ev); err != nil {
				// Not stored: no acknowledgement, so Slack delivers the
				// envelope again once the supervisor reconnects.
				return fmt.Errorf("slack: store message %s: %w", ev.ID, err)
			}
			a.seen.Add(ev.ID)
			a.mark(ctx, ev)
		}
		if err := a.ack(ctx, conn, env.EnvelopeID); err != nil {
			return err
		}
	}
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// ack acknowledges one envelope.
func (a *Adapter) ack(ctx context.Context, conn *websocket.Conn, id string) error {
	b, _ := json.Marshal(map[string]string{"envelope_id": id})
	wctx, cancel := context.WithTimeout(ctx, a.cfg.RequestTimeout)
	defer cancel()
	if err := conn.Write(wctx, websocket.MessageText, b); err != nil {
		return fmt.Errorf("slack: acknowledge envelope %s: %w", id, err)
	}
	return nil
}

// keepAlive pings Slack every PingEvery and ends the connection (through
// cancel) when a ping goes unanswered: a socket dead without a close
// frame would otherwise wait forever.
func (a *Adapter) keepAlive(ctx context.Context, cancel context.CancelCauseFunc, conn *websocket.Conn) {
	t := time.NewTicker(a.cfg.PingEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		pctx, pcancel := context.WithTimeout(ctx, a.cfg.PingEvery)
		err := conn.Ping(pctx)
		pcancel()
		if err != nil && ctx.Err() == nil {
			cancel(fmt.Errorf("no answer to a ping: %w", err))
			return
		}
	}
}

// identify checks the bot token and learns the bot's user id (auth.test).
func (a *Adapter) identify(ctx context.Context) error {
	cctx, cancel := context.WithTimeout(ctx, a.cfg.RequestTimeout)
	defer cancel()
	resp, err := a.api.AuthTestContext(cctx)
	if err != nil {
		return classify("auth.test (bot token)", err)
	}
	a.mu.Lock()
	a.botUser = resp.UserID
	a.mu.Unlock()
	return nil
}

// Probe asks auth.test whether Slack answers again: the supervisor of a
// platform that is down restarts it as soon as it does, instead of
// waiting out its backoff.
func (a *Adapter) Probe(ctx context.Context) error {
	cctx, cancel := context.WithTimeout(ctx, a.cfg.RequestTimeout)
	defer cancel()
	if _, err := a.api.AuthTestContext(cctx); err != nil {
		return classify("auth.test (probe)", err)
	}
	return nil
}

// connect asks for a Socket Mode URL (apps.connections.open, app token)
// and dials it.
func (a *Adapter) connect(ctx context.Context) (*websocket.Conn, error) {
	cctx, cancel := context.WithTimeout(ctx, a.cfg.RequestTimeout)
	defer cancel()
	_, url, err := a.api.StartSocketModeContext(cctx)
	if err != nil {
		return nil, classify("apps.connections.open (app token)", err)
	}
	h := http.Header{}
	h.Set("Origin", "https://api.slack.com") // as Slack's own clients send it
	conn, resp, err := websocket.Dial(cctx, url, &websocket.DialOptions{HTTPHeader: h, HTTPClient: a.cfg.HTTPClient})
	if resp != nil && resp.Body != nil {
		resp.Body.Close()
	}
	if err != nil {
		if resp != nil {
			return nil, fmt.Errorf("slack: open the socket: %s", http.StatusText(resp.StatusCode))
		}
		return nil, fmt.Errorf("slack: open the socket: %w", err)
	}
	conn.SetReadLimit(maxEnvelope)
	return conn, nil
}

// The parts of an Events API callback baton reads.
type eventCallback struct {
	Type    string       `json:"type"`
	EventID string       `json:"event_id"`
	Event   messageEvent `json:"event"`
}

// messageEvent is a message as an event carries it, or as the Web API's
// history gives it back (with Channel and ChannelType filled in).
type messageEvent struct {
	Type        string `json:"type"`
	Subtype     string `json:"subtype"`
	Channel     string `json:"channel"`
	ChannelType string `json:"channel_type"`
	User        string `json:"user"`
	BotID       string `json:"bot_id"`
	Text        string `json:"text"`
	TS          string `json:"ts"`
	ThreadTS    string `json:"thread_ts"`
	Hidden      bool   `json:"hidden"`
	// Files are the message's files (subtype file_share).
	Files []wireFile `json:"files"`
}

// slashCommand is a slash_commands payload.
type slashCommand struct {
	Command   string `json:"command"`
	Text      string `json:"text"`
	ChannelID string `json:"channel_id"`
	UserID    string `json:"user_id"`
	UserName  string `json:"user_name"`
	TriggerID string `json:"trigger_id"`
}

// decodeEnvelope turns an envelope into an event; ok is false for what
// baton does not act on (its own messages, edits, joins, interactions),
// which is acknowledged all the same.
func (a *Adapter) decodeEnvelope(env envelope) (platform.Event, bool) {
	switch env.Type {
	case "events_api":
		ev, ok, err := decodeEvent(env.Payload, a.BotUserID(), a.opener)
		if err != nil {
			a.log.Warn("slack: undecodable event skipped", "envelope", env.EnvelopeID, "err", err)
		}
		return ev, ok
	case "slash_commands":
		var c slashCommand
		if err := json.Unmarshal(env.Payload, &c); err != nil || c.Command == "" || c.ChannelID == "" || c.UserID == "" {
			a.log.Warn("slack: undecodable slash command skipped", "envelope", env.EnvelopeID, "err", err)
			return platform.Event{}, false
		}
		id := c.TriggerID
		if id == "" {
			id = env.EnvelopeID
		}
		return platform.Event{
			At:       addressOf(c.ChannelID, "", ""),
			SenderID: c.UserID,
			Sender:   c.UserName,
			Text:     strings.TrimSpace(c.Command + " " + c.Text),
			ID:       "slash:" + id,
			Time:     time.Now().UTC(),
		}, true
	}
	return platform.Event{}, false
}

// decodeEvent reads a message or app_mention event. botUser is the bot's
// user id: its own messages are skipped, and a mention of it that starts
// a message is taken off ("@baton /handoff cli" is the command). Its
// files are opened with open.
func decodeEvent(raw []byte, botUser string, open opener) (platform.Event, bool, error) {
	var cb eventCallback
	if err := json.Unmarshal(raw, &cb); err != nil {
		return platform.Event{}, false, fmt.Errorf("decode event: %w", err)
	}
	if cb.Type != "event_callback" {
		return platform.Event{}, false, nil
	}
	return messageOf(cb.Event, botUser, open)
}

// messageOf is the event for a person's message; ok is false for what
// baton does not act on (see decodeEvent).
func messageOf(e messageEvent, botUser string, open opener) (platform.Event, bool, error) {
	if e.Type != "message" && e.Type != "app_mention" {
		return platform.Event{}, false, nil
	}
	switch e.Subtype {
	case "", "thread_broadcast", "file_share":
	default: // edits, deletions, joins, bot messages…
		return platform.Event{}, false, nil
	}
	if e.Hidden || e.BotID != "" || e.User == "" || (botUser != "" && e.User == botUser) {
		return platform.Event{}, false, nil
	}
	if e.Channel == "" || e.TS == "" {
		return platform.Event{}, false, errors.New("event without channel or ts")
	}
	text := plainText(e.Text, botUser)
	files := attachments(e.Files, open)
	if strings.TrimSpace(text) == "" && len(files) == 0 {
		return platform.Event{}, false, nil
	}
	thread := e.ThreadTS
	if thread == e.TS && e.Subtype != "thread_broadcast" {
		thread = "" // a thread's root is said in the channel
	}
	return platform.Event{
		At:          addressOf(e.Channel, e.ChannelType, thread),
		SenderID:    e.User,
		Sender:      e.User,
		Text:        text,
		ID:          e.Channel + ":" + e.TS,
		Time:        tsTime(e.TS),
		Attachments: files,
	}, true, nil
}

// addressOf maps a channel and thread to an address; see the package
// comment. channelType may be empty (app_mention, slash commands): a D…
// channel id is a DM.
func addressOf(channel, channelType, threadTS string) platform.Address {
	a := platform.Address{Platform: Name, Chat: channel}
	dm := channelType == "im" || (channelType == "" && strings.HasPrefix(channel, "D"))
	switch {
	case dm:
		a.Kind, a.Thread = platform.DM, threadTS
	case threadTS != "":
		a.Kind, a.Thread = platform.Thread, threadTS
	default:
		a.Kind = platform.Group
	}
	return a
}

// tsTime reads a Slack ts ("1700000000.000100") as a time.
func tsTime(ts string) time.Time {
	secs, frac, _ := strings.Cut(ts, ".")
	s, err := strconv.ParseInt(secs, 10, 64)
	if err != nil {
		return time.Now().UTC()
	}
	var ns int64
	if frac != "" {
		frac = (frac + "000000000")[:9]
		ns, _ = strconv.ParseInt(frac, 10, 64)
	}
	return time.Unix(s, ns).UTC()
}

var slackMarkup = regexp.MustCompile(`<([^<>]*)>`)

// plainText turns Slack's message markup into what the person typed: a
// leading mention of the bot dropped, other mentions as @id, links as
// their label and address, and &amp; &lt; &gt; decoded.
func plainText(text, botUser string) string {
	text = strings.TrimSpace(text)
	if botUser != "" {
		text = strings.TrimSpace(strings.TrimPrefix(text, "<@"+botUser+">"))
	}
	text = slackMarkup.ReplaceAllStringFunc(text, func(m string) string {
		inner := m[1 : len(m)-1]
		target, label, hasLabel := strings.Cut(inner, "|")
		switch {
		case strings.HasPrefix(target, "@"), strings.HasPrefix(target, "#"):
			if hasLabel && label != "" {
				return target[:1] + label
			}
			return target
		case strings.HasPrefix(target, "!"):
			if hasLabel && label != "" {
				return label
			}
			return "@" + strings.TrimPrefix(strings.SplitN(target, "^", 2)[0], "!")
		case hasLabel && label != "" && label != target && label != strings.TrimPrefix(target, "mailto:"):
			return label + " (" + target + ")"
		}
		return strings.TrimPrefix(target, "mailto:")
	})
	return strings.NewReplacer("&lt;", "<", "&gt;", ">", "&amp;", "&").Replace(text)
}
