package discord

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
	"github.com/disgoorg/disgo/discord"
	"github.com/disgoorg/disgo/gateway"
	"github.com/disgoorg/disgo/rest"

	"github.com/baton-agent/baton/internal/platform"
)

// Run connects to the gateway — resuming the session of the previous Run
// when there is one — says Live once Discord answered READY or RESUMED,
// and hands each person's message to r, until ctx ends. An event counts as
// handled (the sequence number a resume starts after) only once r stored
// it, so a failed Receive or a dropped connection makes Discord replay it
// on the next Run. Any failure ends Run with the reason; a refused token
// or intent is marked platform.Refused.
func (a *Adapter) Run(ctx context.Context, r platform.Receiver) error {
	err := a.run(ctx, r)
	if ctx.Err() != nil {
		return nil
	}
	return err
}

func (a *Adapter) run(ctx context.Context, r platform.Receiver) error {
	a.loadSession(ctx)
	defer a.saveSession(ctx)
	a.mu.Lock()
	st := a.session
	a.mu.Unlock()
	target := st.url
	if st.id == "" || target == "" {
		st = resumeState{}
		u, err := a.gatewayURL(ctx)
		if err != nil {
			return err
		}
		target = u
	}
	dctx, cancel := context.WithTimeout(ctx, a.cfg.RequestTimeout)
	ws, _, err := websocket.Dial(dctx, withQuery(target), &websocket.DialOptions{HTTPClient: a.cfg.HTTPClient})
	cancel()
	if err != nil {
		return fmt.Errorf("discord: connect to the gateway: %w", err)
	}
	defer ws.CloseNow()
	ws.SetReadLimit(64 << 20) // READY and GUILD_CREATE can be large
	c := &conn{a: a, ws: ws, r: r, seq: st.seq}
	err = c.serve(ctx, st)
	var ended *sessionEnded
	if errors.As(err, &ended) {
		a.forgetSession()
	}
	return err
}

// gatewayURL asks Discord where the gateway is (GET /gateway/bot), which
// also checks the token; Config.GatewayURL, when set, is used instead,
// after the same check.
func (a *Adapter) gatewayURL(ctx context.Context) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, a.cfg.RequestTimeout)
	defer cancel()
	var gb struct {
		URL string `json:"url"`
	}
	if err := a.rest.Do(rest.GetGatewayBot.Compile(nil), nil, &gb, rest.WithCtx(ctx)); err != nil {
		err = classify("GET /gateway/bot", err)
		if errors.Is(err, platform.ErrRefused) {
			return "", platform.Refused(fmt.Errorf("discord: Discord refused the bot token: %w", err))
		}
		return "", fmt.Errorf("discord: %w", err)
	}
	if a.cfg.GatewayURL != "" {
		return a.cfg.GatewayURL, nil
	}
	if gb.URL == "" {
		return "", errors.New("discord: GET /gateway/bot answered no gateway URL")
	}
	return gb.URL, nil
}

// Probe asks GET /gateway/bot whether Discord answers again, and whether
// a new session may be started: Discord allows a bot about 1,000
// identifies a day, so a probe that finds none left fails until they
// reset, and the supervisor's restarts wait out their backoff instead of
// spending the last ones.
func (a *Adapter) Probe(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, a.cfg.RequestTimeout)
	defer cancel()
	var gb struct {
		Limit *struct {
			Remaining  int   `json:"remaining"`
			ResetAfter int64 `json:"reset_after"`
		} `json:"session_start_limit"`
	}
	if err := a.rest.Do(rest.GetGatewayBot.Compile(nil), nil, &gb, rest.WithCtx(ctx)); err != nil {
		return fmt.Errorf("discord: probe: %w", classify("GET /gateway/bot", err))
	}
	if gb.Limit != nil && gb.Limit.Remaining <= 0 {
		return fmt.Errorf("discord: no session starts left today; they reset in %s",
			(time.Duration(gb.Limit.ResetAfter) * time.Millisecond).Round(time.Second))
	}
	return nil
}

// withQuery adds the version and encoding the gateway is spoken in (no
// compression, so no compress parameter).
func withQuery(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return u
	}
	q := p.Query()
	q.Set("v", strconv.Itoa(gateway.Version))
	q.Set("encoding", "json")
	p.RawQuery = q.Encode()
	return p.String()
}

// conn is one gateway connection.
type conn struct {
	a   *Adapter
	ws  *websocket.Conn
	r   platform.Receiver
	seq int // the last event handled; Run's goroutine alone writes it

	stored atomic.Int64 // seq, for the heartbeat goroutine
	acked  atomic.Bool  // the last heartbeat was acknowledged
}

// frame is a gateway payload as it arrives; d is decoded by what op and t
// say.
type frame struct {
	Op gateway.Opcode    `json:"op"`
	S  *int              `json:"s"`
	T  gateway.EventType `json:"t"`
	D  json.RawMessage   `json:"d"`
}

func (c *conn) write(ctx context.Context, op gateway.Opcode, d gateway.MessageData) error {
	b, err := json.Marshal(gateway.Message{Op: op, D: d})
	if err != nil {
		return fmt.Errorf("encode op %d: %w", op, err)
	}
	wctx, cancel := context.WithTimeout(ctx, c.a.cfg.RequestTimeout)
	defer cancel()
	return c.ws.Write(wctx, websocket.MessageText, b)
}

func (c *conn) read(ctx context.Context) (frame, error) {
	_, b, err := c.ws.Read(ctx)
	if err != nil {
		return frame{}, closed(err)
	}
	var f frame
	if err := json.Unmarshal(b, &f); err != nil {
		return frame{}, fmt.Errorf("discord: undecodable gateway payload: %w", err)
	}
	return f, nil
}

// serve speaks the gateway protocol: HELLO, IDENTIFY or RESUME, heartbeats,
// then dispatches until the connection or ctx ends.
func (c *conn) serve(ctx context.Context, st resumeState) error {
	hctx, cancel := context.WithTimeout(ctx, c.a.cfg.RequestTimeout)
	hello, err := c.read(hctx)
	cancel()
	if err != nil {
		return fmt.Errorf("discord: waiting for HELLO: %w", err)
	}
	var h gateway.MessageDataHello
	if hello.Op != gateway.OpcodeHello || json.Unmarshal(hello.D, &h) != nil || h.HeartbeatInterval <= 0 {
		return fmt.Errorf("discord: the gateway opened with op %d, not HELLO", hello.Op)
	}
	c.stored.Store(int64(c.seq))
	c.acked.Store(true)
	bctx, stopBeats := context.WithCancel(ctx)
	beating := make(chan struct{})
	go func() {
		defer close(beating)
		c.heartbeats(bctx, time.Duration(h.HeartbeatInterval)*time.Millisecond)
	}()
	defer func() {
		stopBeats()
		c.ws.CloseNow() // unblocks a heartbeat mid-write
		<-beating
	}()

	if st.id != "" {
		err = c.write(ctx, gateway.OpcodeResume, gateway.MessageDataResume{Token: c.a.cfg.Token, SessionID: st.id, Seq: st.seq})
	} else {
		err = c.write(ctx, gateway.OpcodeIdentify, gateway.MessageDataIdentify{
			Token:      c.a.cfg.Token,
			Properties: gateway.IdentifyCommandDataProperties{OS: "linux", Browser: "baton", Device: "baton"},
			Intents:    Intents,
			Shard:      &[2]int{0, 1},
		})
	}
	if err != nil {
		return fmt.Errorf("discord: identify: %w", closed(err))
	}
	for {
		f, err := c.read(ctx)
		if err != nil {
			return err
		}
		switch f.Op {
		case gateway.OpcodeDispatch:
			if err := c.dispatch(ctx, f); err != nil {
				return err
			}
		case gateway.OpcodeHeartbeat:
			if err := c.beat(ctx); err != nil {
				return fmt.Errorf("discord: heartbeat: %w", closed(err))
			}
		case gateway.OpcodeHeartbeatACK:
			c.acked.Store(true)
		case gateway.OpcodeReconnect:
			// Routine: Discord moves the session. The next Run resumes it.
			return errors.New("discord: the gateway asked to reconnect")
		case gateway.OpcodeInvalidSession:
			var resumable bool
			_ = json.Unmarshal(f.D, &resumable)
			if !resumable {
				c.a.forgetSession()
			}
			return fmt.Errorf("discord: the gateway ended the session (resumable: %v)", resumable)
		}
	}
}

// heartbeats beats every interval (the first after a random part of it, as
// Discord asks) and closes a connection whose last beat went unanswered.
func (c *conn) heartbeats(ctx context.Context, every time.Duration) {
	first := time.NewTimer(time.Duration(rand.Int64N(int64(every)) + 1))
	defer first.Stop()
	select {
	case <-ctx.Done():
		return
	case <-first.C:
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		if !c.acked.Swap(false) {
			c.a.log.Warn("discord: heartbeat not acknowledged; reconnecting")
			c.ws.CloseNow() // a dead peer answers no close handshake
			return
		}
		if err := c.beat(ctx); err != nil {
			return // the reader sees the connection fail
		}
		c.a.saveSession(ctx)
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// beat sends a heartbeat carrying the last event handled: what the session
// would resume after.
func (c *conn) beat(ctx context.Context) error {
	return c.write(ctx, gateway.OpcodeHeartbeat, gateway.MessageDataHeartbeat(int(c.stored.Load())))
}

// handled moves the resume point past event s.
func (c *conn) handled(s *int) {
	if s == nil || *s <= c.seq {
		return
	}
	c.seq = *s
	c.stored.Store(int64(c.seq))
	c.a.mu.Lock()
	c.a.session.seq = c.seq
	c.a.mu.Unlock()
}

func (c *conn) dispatch(ctx context.Context, f frame) error {
	switch f.T {
	case gateway.EventTypeReady:
		var d struct {
			SessionID string `json:"session_id"`
			ResumeURL string `json:"resume_gateway_url"`
			User      struct {
				ID string `json:"id"`
			} `json:"user"`
		}
		if err := json.Unmarshal(f.D, &d); err != nil || d.SessionID == "" {
			return fmt.Errorf("discord: undecodable READY: %v", err)
		}
		c.a.mu.Lock()
		c.a.session = resumeState{id: d.SessionID, url: d.ResumeURL}
		c.a.botID = d.User.ID
		c.a.mu.Unlock()
		c.seq = 0
		c.handled(f.S)
		c.a.sessionStarted()
		c.a.saveSession(ctx)
		c.r.Live()
		return c.catchUp(ctx)
	case gateway.EventTypeResumed:
		c.handled(f.S)
		c.r.Live()
		return c.catchUp(ctx) // one an earlier session began and did not finish
	case gateway.EventTypeGuildCreate:
		c.a.learnGuild(f.D)
	case gateway.EventTypeChannelCreate, gateway.EventTypeChannelUpdate, gateway.EventTypeThreadCreate, gateway.EventTypeThreadUpdate:
		var ch wireChannel
		if json.Unmarshal(f.D, &ch) == nil {
			c.a.learn(ch)
		}
	case gateway.EventTypeThreadListSync:
		var d struct {
			Threads []wireChannel `json:"threads"`
		}
		if json.Unmarshal(f.D, &d) == nil {
			for _, ch := range d.Threads {
				c.a.learn(ch)
			}
		}
	case gateway.EventTypeMessageCreate:
		if err := c.message(ctx, f.D); err != nil {
			return err
		}
	}
	c.handled(f.S)
	return nil
}

// message hands a person's message to the receiver. What is not for baton
// (the bot's own messages, other bots, system messages, neither text nor
// files) is skipped; an undecodable one is logged and skipped, so it
// cannot block the session.
func (c *conn) message(ctx context.Context, raw json.RawMessage) error {
	var m wireMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		c.a.log.Warn("discord: undecodable message skipped", "err", err)
		return nil
	}
	return c.handle(ctx, m)
}

// handle is message for a decoded message, from the gateway or caught up
// over REST (catchUp).
func (c *conn) handle(ctx context.Context, m wireMessage) error {
	if m.ID == "" || m.ChannelID == "" || m.Author.ID == "" {
		c.a.log.Warn("discord: message without an id, channel or author skipped")
		return nil
	}
	botID := c.a.BotID()
	if m.Author.Bot || m.Author.System || m.WebhookID != "" || m.Author.ID == botID || (m.Type != 0 && m.Type != 19) {
		return nil
	}
	text := strings.TrimSpace(stripMention(m.Content, botID))
	files := c.a.attachments(m)
	if (text == "" && len(files) == 0) || c.a.seen.Has(m.ID) {
		return nil
	}
	at, err := c.a.addressOf(ctx, m.ChannelID, m.GuildID)
	if err != nil {
		// Not handled: the resume point stays before it, and Discord
		// replays it after the restart.
		return fmt.Errorf("discord: where message %s was said: %w", m.ID, err)
	}
	name := m.Author.GlobalName
	if name == "" {
		name = m.Author.Username
	}
	when, _ := time.Parse(time.RFC3339Nano, m.Timestamp)
	if when.IsZero() {
		when = snowflakeTime(m.ID)
	}
	ev := platform.Event{At: at, SenderID: m.Author.ID, Sender: name, Text: text, ID: m.ID, Time: when.UTC(), Attachments: files}
	if err := c.r.Receive(ctx, ev); err != nil {
		return fmt.Errorf("discord: store message %s: %w", m.ID, err)
	}
	c.a.seen.Add(m.ID)
	c.a.marks.Note(m.ChannelID, m.GuildID, m.ID)
	return nil
}

// stripMention drops a leading mention of the bot ("<@id> /handoff cli"),
// the way people address a bot in a channel.
func stripMention(text, botID string) string {
	if botID == "" {
		return text
	}
	t := strings.TrimSpace(text)
	for _, m := range []string{"<@" + botID + ">", "<@!" + botID + ">"} {
		if rest, ok := strings.CutPrefix(t, m); ok {
			return rest
		}
	}
	return text
}

// snowflakeTime is when a Discord id was made.
func snowflakeTime(id string) time.Time {
	n, err := strconv.ParseUint(id, 10, 64)
	if err != nil {
		return time.Now()
	}
	return time.UnixMilli(int64(n>>22) + 1420070400000)
}

// The parts of Discord's payloads baton reads. Decoding into these rather
// than the library's full models keeps an odd field from failing a whole
// event.
type wireMessage struct {
	ID        string `json:"id"`
	ChannelID string `json:"channel_id"`
	GuildID   string `json:"guild_id"`
	Type      int    `json:"type"` // 0 default, 19 reply
	Content   string `json:"content"`
	Timestamp string `json:"timestamp"`
	WebhookID string `json:"webhook_id"`
	// Attachments are the message's files.
	Attachments []wireAttachment `json:"attachments"`
	Author      struct {
		ID         string `json:"id"`
		Username   string `json:"username"`
		GlobalName string `json:"global_name"`
		Bot        bool   `json:"bot"`
		System     bool   `json:"system"`
	} `json:"author"`
}

type wireChannel struct {
	ID       string              `json:"id"`
	Type     discord.ChannelType `json:"type"`
	GuildID  string              `json:"guild_id"`
	ParentID string              `json:"parent_id"`
}

func (a *Adapter) learnGuild(raw json.RawMessage) {
	var g struct {
		ID       string        `json:"id"`
		Channels []wireChannel `json:"channels"`
		Threads  []wireChannel `json:"threads"`
	}
	if json.Unmarshal(raw, &g) != nil {
		return
	}
	for _, ch := range append(g.Channels, g.Threads...) {
		if ch.GuildID == "" {
			ch.GuildID = g.ID
		}
		a.learn(ch)
	}
}

func (a *Adapter) learn(ch wireChannel) {
	if ch.ID == "" {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.channels[ch.ID] = chanInfo{kind: ch.Type, parent: ch.ParentID, guild: ch.GuildID}
}

func (a *Adapter) forgetSession() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.session = resumeState{}
}

// memoryKey is where Config.Memory keeps the session to resume.
const memoryKey = "resume"

// savedSession is the session to resume as Config.Memory keeps it. The
// bot's id comes with it: a resumed session gets no READY to learn it
// from, and without it the bot's own messages would look like a person's.
type savedSession struct {
	ID    string `json:"session_id"`
	URL   string `json:"resume_gateway_url"`
	Seq   int    `json:"seq"`
	BotID string `json:"bot_id"`
	// What catching up needs (backfill.go): where people last spoke to
	// baton, and whether a catch-up is due.
	Channels map[string]platform.Mark[string] `json:"channels,omitempty"`
	CatchUp  bool                             `json:"catch_up,omitempty"`
}

// loadSession reads the session an earlier run of baton left, once.
func (a *Adapter) loadSession(ctx context.Context) {
	a.mu.Lock()
	if a.loaded || a.cfg.Memory == nil {
		a.loaded = true
		a.mu.Unlock()
		return
	}
	a.loaded = true
	a.mu.Unlock()
	v, err := a.cfg.Memory.Get(ctx, memoryKey)
	if err != nil || v == "" {
		if err != nil {
			a.log.Warn("discord: read the session to resume; identifying afresh", "err", err)
		}
		return
	}
	var s savedSession
	if err := json.Unmarshal([]byte(v), &s); err != nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.session.id == "" && s.ID != "" && s.BotID != "" {
		a.session = resumeState{id: s.ID, url: s.URL, seq: s.Seq}
		a.botID = s.BotID
	}
	a.marks.Restore(s.Channels)
	a.catchUpDue = a.catchUpDue || s.CatchUp
}

// saveSession keeps the session to resume in Config.Memory (none: the
// next start identifies afresh). It is saved when a session starts, with
// every heartbeat and when Run ends: after a crash the next start resumes
// from a little earlier, and what Discord replays twice is dropped by the
// gateway's inbox, which knows every message by its id.
func (a *Adapter) saveSession(ctx context.Context) {
	if a.cfg.Memory == nil {
		return
	}
	a.mu.Lock()
	saved := savedSession{CatchUp: a.catchUpDue, Channels: a.marks.All()}
	if a.session.id != "" {
		saved.ID, saved.URL, saved.Seq, saved.BotID = a.session.id, a.session.url, a.session.seq, a.botID
	}
	a.mu.Unlock()
	v := ""
	if saved.ID != "" || len(saved.Channels) > 0 {
		b, _ := json.Marshal(saved)
		v = string(b)
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), a.cfg.RequestTimeout)
	defer cancel()
	if err := a.cfg.Memory.Set(ctx, memoryKey, v); err != nil {
		a.log.Warn("discord: keep the session to resume", "err", err)
	}
}

// isThread reports whether a channel type is a thread.
func isThread(t discord.ChannelType) bool {
	return t == discord.ChannelTypeGuildPublicThread || t == discord.ChannelTypeGuildPrivateThread || t == discord.ChannelTypeGuildNewsThread
}

// addressOf says where a message in channel was said: a DM when it has no
// guild, a thread (under its parent) or a channel otherwise. A channel not
// seen in an event yet is looked up once (GET /channels/{id}).
func (a *Adapter) addressOf(ctx context.Context, channel, guild string) (platform.Address, error) {
	if guild == "" {
		return platform.Address{Platform: Name, Kind: platform.DM, Chat: channel}, nil
	}
	a.mu.Lock()
	info, ok := a.channels[channel]
	a.mu.Unlock()
	if !ok {
		ctx, cancel := context.WithTimeout(ctx, a.cfg.RequestTimeout)
		defer cancel()
		var ch wireChannel
		if err := a.rest.Do(rest.GetChannel.Compile(nil, channel), nil, &ch, rest.WithCtx(ctx)); err != nil {
			return platform.Address{}, classify("GET /channels/"+channel, err)
		}
		a.learn(ch)
		info = chanInfo{kind: ch.Type, parent: ch.ParentID, guild: ch.GuildID}
	}
	if isThread(info.kind) && info.parent != "" {
		return platform.Address{Platform: Name, Kind: platform.Thread, Chat: info.parent, Thread: channel}, nil
	}
	return platform.Address{Platform: Name, Kind: platform.Group, Chat: channel}, nil
}

// closed turns a websocket close into what it means: a refused token or
// intent is platform.Refused (restarting will not help), a session Discord
// will not resume is forgotten by the caller's next identify.
func closed(err error) error {
	code := websocket.CloseStatus(err)
	if code == -1 {
		return fmt.Errorf("discord: gateway connection: %w", err)
	}
	var why string
	switch code {
	case 4004:
		return platform.Refused(fmt.Errorf("discord: Discord refused the bot token (gateway close %d)", code))
	case 4014:
		return platform.Refused(fmt.Errorf("discord: the Message Content intent is not enabled for this bot: switch it on in the developer portal (Bot → Privileged Gateway Intents) (gateway close %d)", code))
	case 4010, 4011, 4012, 4013:
		return platform.Refused(fmt.Errorf("discord: the gateway refused the connection settings (close %d)", code))
	case 4007, 4009:
		return &sessionEnded{fmt.Errorf("discord: gateway closed: session expired (%d)", code)}
	}
	var ce websocket.CloseError
	if errors.As(err, &ce) && ce.Reason != "" {
		why = ": " + ce.Reason
	}
	return fmt.Errorf("discord: gateway closed the connection (%d%s)", code, why)
}

// sessionEnded is a close after which the session cannot be resumed.
type sessionEnded struct{ err error }

func (e *sessionEnded) Error() string { return e.err.Error() }
func (e *sessionEnded) Unwrap() error { return e.err }
