package discordtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"sync"

	"github.com/coder/websocket"
	"github.com/disgoorg/disgo/gateway"
)

// session is a gateway session: what it was sent, numbered, so a RESUME
// can replay what its client missed.
type session struct {
	id      string
	intents gateway.Intents
	seq     int
	events  []event
	msgSeq  map[string]int // message id → the seq of its MESSAGE_CREATE
	acked   int            // the highest seq a heartbeat or RESUME carried
	conn    *wsConn        // nil while no connection serves it
}

type event struct {
	seq int
	raw []byte
}

// wsConn is one gateway websocket. Frames go out through its queue, in
// order, written by one goroutine, so the server's lock is never held
// across a network write.
type wsConn struct {
	ws      *websocket.Conn
	session *session // set once READY or RESUMED; guarded by Server.mu

	mu     sync.Mutex
	queue  [][]byte
	wake   chan struct{}
	cancel context.CancelFunc
}

func (c *wsConn) send(b []byte) {
	c.mu.Lock()
	c.queue = append(c.queue, b)
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

func (c *wsConn) closeWith(code int, reason string) {
	// Queued behind what was already sent, as Discord closes after its
	// last frame.
	c.send(closeFrame{code: code, reason: reason}.marshal())
}

// closeFrame rides the queue as a marker.
type closeFrame struct {
	code   int
	reason string
}

const closeMarker = "\x00close"

func (f closeFrame) marshal() []byte {
	b, _ := json.Marshal(map[string]any{"code": f.code, "reason": f.reason})
	return append([]byte(closeMarker), b...)
}

func (c *wsConn) writer(ctx context.Context) {
	for {
		c.mu.Lock()
		q := c.queue
		c.queue = nil
		c.mu.Unlock()
		for _, b := range q {
			if len(b) > len(closeMarker) && string(b[:len(closeMarker)]) == closeMarker {
				var f struct {
					Code   int    `json:"code"`
					Reason string `json:"reason"`
				}
				_ = json.Unmarshal(b[len(closeMarker):], &f)
				_ = c.ws.Close(websocket.StatusCode(f.Code), f.Reason)
				c.cancel()
				return
			}
			if err := c.ws.Write(ctx, websocket.MessageText, b); err != nil {
				c.cancel()
				return
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-c.wake:
		}
	}
}

func frameJSON(op gateway.Opcode, seq int, t string, d any) []byte {
	m := map[string]any{"op": op, "d": d, "s": nil, "t": nil}
	if op == gateway.OpcodeDispatch {
		m["s"], m["t"] = seq, t
	}
	b, _ := json.Marshal(m)
	return b
}

// dispatchLocked numbers an event for every session that may see it and
// sends it where a connection serves the session; a session without one
// keeps it for its RESUME. mentioned says whether a message mentions the
// bot (its content is then shown without the Message Content intent).
// s.mu is held.
func (s *Server) dispatchLocked(t string, d map[string]any, c *Channel, mentioned bool) {
	for _, ss := range s.sessions {
		payload := d
		if t == "MESSAGE_CREATE" {
			need := gateway.IntentGuildMessages
			if c.GuildID == "" {
				need = gateway.IntentDirectMessages
			}
			if !ss.intents.Has(need) {
				continue
			}
			if c.GuildID != "" && !mentioned && !ss.intents.Has(gateway.IntentMessageContent) {
				// Discord's rule: without the intent, guild messages
				// arrive with their content and attachments empty.
				payload = map[string]any{}
				for k, v := range d {
					payload[k] = v
				}
				payload["content"] = ""
				payload["attachments"] = []any{}
			}
		}
		ss.seq++
		raw := frameJSON(gateway.OpcodeDispatch, ss.seq, t, payload)
		ss.events = append(ss.events, event{seq: ss.seq, raw: raw})
		if t == "MESSAGE_CREATE" {
			ss.msgSeq[d["id"].(string)] = ss.seq
		}
		if ss.conn != nil {
			ss.conn.send(raw)
		}
	}
}

func newSessionID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func (s *Server) serveGateway(w http.ResponseWriter, r *http.Request) {
	ws, err := websocket.Accept(w, r, nil)
	if err != nil {
		return // Accept has answered
	}
	ws.SetReadLimit(1 << 20)
	ctx, cancel := context.WithCancel(context.Background())
	c := &wsConn{ws: ws, wake: make(chan struct{}, 1), cancel: cancel}
	s.mu.Lock()
	s.conns[c] = true
	interval := s.heartbeat
	s.Changed()
	s.mu.Unlock()
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.writer(ctx)
	}()
	defer func() {
		cancel()
		ws.CloseNow()
		<-done
		s.mu.Lock()
		delete(s.conns, c)
		if c.session != nil && c.session.conn == c {
			c.session.conn = nil
		}
		s.Changed()
		s.mu.Unlock()
	}()

	c.send(frameJSON(gateway.OpcodeHello, 0, "", map[string]any{"heartbeat_interval": interval.Milliseconds()}))
	for {
		_, b, err := ws.Read(ctx)
		if err != nil {
			return
		}
		var m gateway.Message
		if err := json.Unmarshal(b, &m); err != nil {
			c.closeWith(4002, "Error while decoding payload.")
			continue
		}
		switch d := m.D.(type) {
		case gateway.MessageDataHeartbeat:
			s.mu.Lock()
			if c.session != nil && int(d) > c.session.acked {
				c.session.acked = int(d)
				s.Changed()
			}
			s.mu.Unlock()
			c.send(frameJSON(gateway.OpcodeHeartbeatACK, 0, "", nil))
		case gateway.MessageDataIdentify:
			s.identify(c, d)
		case gateway.MessageDataResume:
			s.resume(c, d)
		default:
			c.closeWith(4001, "Unknown opcode.")
		}
	}
}

func (s *Server) identify(c *wsConn, d gateway.MessageDataIdentify) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case c.session != nil:
		c.closeWith(4005, "Already authenticated.")
		return
	case d.Token != s.token:
		c.closeWith(4004, "Authentication failed.")
		return
	case s.refuseIntent && d.Intents.Has(gateway.IntentMessageContent):
		c.closeWith(4014, "Disallowed intent(s).")
		return
	}
	ss := &session{id: newSessionID(), intents: d.Intents, msgSeq: map[string]int{}, conn: c}
	s.sessions[ss.id] = ss
	c.session = ss
	s.identifies++
	ready := map[string]any{
		"v": gateway.Version, "user": s.userJSON(s.bot, true),
		"guilds": []any{map[string]any{"id": s.guild, "unavailable": true}}, "session_id": ss.id,
		"resume_gateway_url": s.GatewayURL(), "shard": []int{0, 1},
		"application": map[string]any{"id": s.bot.ID, "flags": 0},
	}
	s.sendLocked(ss, "READY", ready)
	if d.Intents.Has(gateway.IntentGuilds) {
		var channels, threads []any
		for _, id := range s.order {
			ch := s.channels[id]
			switch ch.Type {
			case GuildText:
				channels = append(channels, channelJSON(ch))
			case PublicThread:
				threads = append(threads, channelJSON(ch))
			}
		}
		s.sendLocked(ss, "GUILD_CREATE", map[string]any{"id": s.guild, "name": "baton", "unavailable": false, "channels": channels, "threads": threads})
	}
	s.Changed()
}

// sendLocked numbers and sends an event for one session only.
func (s *Server) sendLocked(ss *session, t string, d any) {
	ss.seq++
	raw := frameJSON(gateway.OpcodeDispatch, ss.seq, t, d)
	ss.events = append(ss.events, event{seq: ss.seq, raw: raw})
	if ss.conn != nil {
		ss.conn.send(raw)
	}
}

func (s *Server) resume(c *wsConn, d gateway.MessageDataResume) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if d.Token != s.token {
		c.closeWith(4004, "Authentication failed.")
		return
	}
	ss, ok := s.sessions[d.SessionID]
	if !ok || d.Seq > ss.seq {
		c.send(frameJSON(gateway.OpcodeInvalidSession, 0, "", false))
		return
	}
	if old := ss.conn; old != nil && old != c {
		old.ws.CloseNow()
	}
	ss.conn = c
	c.session = ss
	if d.Seq > ss.acked {
		ss.acked = d.Seq
	}
	s.resumes++
	for _, e := range ss.events {
		if e.seq > d.Seq {
			c.send(e.raw)
		}
	}
	s.sendLocked(ss, "RESUMED", nil)
	s.Changed()
}
