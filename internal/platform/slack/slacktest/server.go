// Package slacktest is a fake Slack for tests: real HTTP and a real
// websocket on 127.0.0.1. It answers the Web API methods baton uses
// (auth.test, apps.connections.open, chat.postMessage, chat.update,
// assistant.threads.setStatus) as Slack does — HTTP 200 with ok:false and
// an error code for refusals, 429 with Retry-After for rate limits — and
// serves Socket Mode: apps.connections.open hands out a ws:// URL, the
// socket greets with hello, delivers events_api envelopes and keeps each
// one until the client acknowledges it (an envelope not acknowledged is
// delivered again on the next connection), and on demand sends a
// disconnect envelope or drops the socket. It is built on fakekit, as
// every fake service is: calls recorded, failures on demand, the whole
// service down behind its proxy.
package slacktest

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/coder/websocket"

	"github.com/baton-agent/baton/internal/platform/fakekit"
)

// Identities the fake reports.
const (
	TeamID    = "T0BATON"
	AppID     = "A0BATON"
	BotUserID = "U0BATON"
	BotID     = "B0BATON"
)

// maxText is Slack's hard limit on a message's text.
const maxText = 40000

// Message is what a person says, for PushMessage.
type Message struct {
	Channel string // C… channel, G… private channel, D… DM
	// ChannelType is "channel", "group", "im" or "mpim"; default from the
	// channel id's first letter.
	ChannelType string
	User        string // U… sender
	Text        string // Slack markup: "<@U0BATON> hello", "&lt;" …
	ThreadTS    string // the thread's root ts; "" at the top level
	// Mention delivers an app_mention event for the message as well, as
	// Slack does for an app subscribed to both.
	Mention bool
}

// Post is a message the bot posted (chat.postMessage) or changed
// (chat.update) and the fake accepted.
type Post struct {
	Method   string // "chat.postMessage" or "chat.update"
	Channel  string
	TS       string // the message's ts (the edited one for chat.update)
	ThreadTS string // thread_ts as sent; "" for a top-level message
	Text     string // mrkdwn as sent
	// Broadcast is reply_broadcast: a thread reply also shown in the channel.
	Broadcast bool
}

// Status is an assistant.threads.setStatus call.
type Status struct{ Channel, ThreadTS, Status string }

// envelope is one Socket Mode delivery the fake keeps until acknowledged.
type envelope struct {
	id         string
	typ        string
	payload    map[string]any
	acked      bool
	deliveries int
	sentOn     map[int]bool // socket ids it was written to
	expired    bool         // Slack gave up retrying it (ExpireUnacked)
}

// socket is one open Socket Mode connection.
type socket struct {
	id         int
	conn       *websocket.Conn
	disconnect string // a disconnect envelope to send, with this reason
	cancel     context.CancelFunc
}

// Server is the fake Slack. Its methods are safe for concurrent use.
// The kit's are its own: URL (the Web API is at URL()+"/api/"), Wait
// (cond is checked after every change of the fake's state), Calls and
// CallCount, FailNext with an HTTP status (a 429 carries Retry-After,
// rounded up to whole seconds), and Unsupported, which answers ok:false
// unknown_method.
type Server struct {
	*fakekit.Server
	tb       testing.TB
	botToken string
	appToken string

	mu         sync.Mutex // guards the state below; the kit has its own
	clock      int64      // the last ts handed out, in microseconds
	nextEnv    int
	envelopes  []*envelope
	posts      []Post
	statuses   []Status
	authors    map[string]string           // channel:ts → user who posted it
	history    map[string][]map[string]any // channel → its messages as the Web API gives them, oldest first
	sockets    map[int]*socket
	nextSocket int
	connects   int
	failCodes  map[string][]string
	forbidden  []string
	deaf       bool     // new sockets read nothing: pings go unanswered
	noFiles    bool     // downloads sign in, as for a token without files:read
	holdShares bool     // completed uploads are shared at ReleaseShares
	held       []func() // the shares held, to make at ReleaseShares
	files      map[string]*slackFile
	fileOrder  []string // file ids, oldest first
	nextFile   int
}

// New starts a fake Slack on 127.0.0.1 accepting botToken (xoxb-) for the
// Web API and appToken (xapp-) for apps.connections.open; it is closed
// when tb ends. Point the client at URL()+"/api/".
func New(tb testing.TB, botToken, appToken string) *Server {
	tb.Helper()
	s := &Server{
		tb: tb, botToken: botToken, appToken: appToken,
		clock:     1_700_000_000_000_000,
		authors:   map[string]string{},
		history:   map[string][]map[string]any{},
		sockets:   map[int]*socket{},
		failCodes: map[string][]string{},
	}
	cfg := fakekit.Config{Method: methodOf, Failure: writeFailure}
	// With Slack's own description of the Web API at hand, the fake
	// refuses what Slack would (see WebAPI.check).
	switch api, err := loadWebAPI(); {
	case err != nil:
		tb.Fatal(err)
	case api != nil:
		cfg.Spec, cfg.Refuse = specCheck(api), writeRefusal
	}
	s.Server = fakekit.New(tb, cfg, http.HandlerFunc(s.serve))
	tb.Cleanup(s.DropSockets) // before the kit closes: sockets are hijacked, the kit no longer sees them
	return s
}

// methodOf names a request by its Web API method (/api/<method>); the
// Socket Mode websocket is "socket".
func methodOf(r *http.Request) string {
	if m, ok := strings.CutPrefix(r.URL.Path, "/api/"); ok {
		return m
	}
	switch {
	case r.URL.Path == "/link":
		return "socket"
	case strings.HasPrefix(r.URL.Path, "/files-pri/"):
		return RouteDownload
	case strings.HasPrefix(r.URL.Path, "/upload/v1/"):
		return RouteUpload
	}
	return r.URL.Path
}

// writeFailure answers a failure the kit was asked for as Slack does: a
// 429 with Retry-After, a method Slack lacks as ok:false unknown_method,
// other statuses with a short body.
func writeFailure(w http.ResponseWriter, r *http.Request, f fakekit.Failure) {
	switch {
	case f.Unsupported:
		fakekit.WriteJSON(w, http.StatusOK, map[string]any{"ok": false, "error": "unknown_method"})
	case f.Status == http.StatusTooManyRequests:
		w.Header().Set("Retry-After", strconv.Itoa(int((f.RetryAfter+time.Second-1)/time.Second)))
		fakekit.WriteJSON(w, f.Status, map[string]any{"ok": false, "error": "ratelimited"})
	default:
		fakekit.WriteError(w, r, f)
	}
}

// APIURL is the Web API base to configure a client with.
func (s *Server) APIURL() string { return s.URL() + "/api/" }

// Down takes Slack down: open sockets are dropped and every request
// answers 502 with a proxy's HTML page until Up.
func (s *Server) Down() {
	s.Server.Down()
	s.DropSockets()
}

// FailNextWith makes the next call of method answer ok:false with an
// error code ("channel_not_found", "invalid_auth", …). Calls queue.
func (s *Server) FailNextWith(method, code string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := strings.ToLower(method)
	s.failCodes[k] = append(s.failCodes[k], code)
}

// Forbid makes every chat.postMessage and chat.update whose text contains
// sub answer ok:false channel_not_found, a refusal no retry changes.
func (s *Server) Forbid(sub string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.forbidden = append(s.forbidden, sub)
}

// Connects is how many Socket Mode connections were opened so far.
func (s *Server) Connects() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.connects
}

// OpenSockets is how many Socket Mode connections are open now.
func (s *Server) OpenSockets() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.sockets)
}

// ts hands out the next message ts. s.mu must be held.
func (s *Server) ts() string {
	s.clock += 100
	return fmt.Sprintf("%d.%06d", s.clock/1_000_000, s.clock%1_000_000)
}

func channelType(channel string) string {
	switch {
	case strings.HasPrefix(channel, "D"):
		return "im"
	case strings.HasPrefix(channel, "G"):
		return "group"
	}
	return "channel"
}

// PushMessage makes a person say m: its message event (and an app_mention
// when m.Mention) goes out over Socket Mode. It returns the message's ts
// and the envelope id of the message event.
func (s *Server) PushMessage(m Message) (ts, envelopeID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ts = s.ts()
	s.authors[m.Channel+":"+ts] = m.User
	ct := m.ChannelType
	if ct == "" {
		ct = channelType(m.Channel)
	}
	ev := map[string]any{
		"type": "message", "channel": m.Channel, "channel_type": ct, "user": m.User,
		"text": m.Text, "ts": ts, "event_ts": ts, "team": TeamID,
	}
	if m.ThreadTS != "" {
		ev["thread_ts"] = m.ThreadTS
		if root := s.authors[m.Channel+":"+m.ThreadTS]; root != "" {
			ev["parent_user_id"] = root
		}
	}
	s.recordLocked(m.Channel, ev)
	envelopeID = s.queueLocked("events_api", s.callback(ev))
	if m.Mention {
		mention := map[string]any{}
		for k, v := range ev {
			if k != "channel_type" {
				mention[k] = v
			}
		}
		mention["type"] = "app_mention"
		s.queueLocked("events_api", s.callback(mention))
	}
	return ts, envelopeID
}

// PushEnvelope sends a raw envelope of type typ with payload (an
// events_api callback, a slash_commands payload…) and returns its id.
func (s *Server) PushEnvelope(typ string, payload map[string]any) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.queueLocked(typ, payload)
}

// callback wraps an event as the Events API delivers it. s.mu must be held.
func (s *Server) callback(ev map[string]any) map[string]any {
	s.nextEnv++
	return map[string]any{
		"token": "verification-token", "team_id": TeamID, "api_app_id": AppID,
		"event": ev, "type": "event_callback", "event_id": fmt.Sprintf("Ev%06d", s.nextEnv),
		"event_time": s.clock / 1_000_000,
		// Required by the Events API's wrapper description, though Slack
		// deprecated it: the users the event is visible to.
		"authed_users": []string{BotUserID},
	}
}

// queueLocked keeps an envelope for delivery. s.mu must be held.
func (s *Server) queueLocked(typ string, payload map[string]any) string {
	s.nextEnv++
	e := &envelope{id: fmt.Sprintf("env-%06d", s.nextEnv), typ: typ, payload: payload, sentOn: map[int]bool{}}
	s.envelopes = append(s.envelopes, e)
	s.Changed()
	return e.id
}

// Acked reports whether the envelope with id was acknowledged.
func (s *Server) Acked(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range s.envelopes {
		if e.id == id {
			return e.acked
		}
	}
	return false
}

// Deliveries is how many times the envelope with id was written to a socket.
func (s *Server) Deliveries(id string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range s.envelopes {
		if e.id == id {
			return e.deliveries
		}
	}
	return 0
}

// Unacked is the number of envelopes not yet acknowledged.
func (s *Server) Unacked() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, e := range s.envelopes {
		if !e.acked {
			n++
		}
	}
	return n
}

// Disconnect sends a disconnect envelope with reason ("refresh_requested",
// "warning", "link_disabled") on every open socket, as Slack does before
// it retires a connection; the socket stays open until the client closes it.
func (s *Server) Disconnect(reason string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, so := range s.sockets {
		so.disconnect = reason
	}
	s.Changed()
}

// DropSockets cuts every open socket without a close frame, as a network
// failure does.
func (s *Server) DropSockets() {
	s.mu.Lock()
	socks := make([]*socket, 0, len(s.sockets))
	for _, so := range s.sockets {
		socks = append(socks, so)
	}
	s.mu.Unlock()
	for _, so := range socks {
		so.cancel()
		_ = so.conn.CloseNow()
	}
}

// StopAnswering makes new sockets read nothing from the client: its pings
// go unanswered and its acknowledgements unread, as on a connection that
// died without a close.
func (s *Server) StopAnswering() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.deaf = true
}

// Posts returns every message posted or edited, in order.
func (s *Server) Posts() []Post {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Post(nil), s.posts...)
}

// Shown returns the bot's messages as people see them now: one per
// message, in the order posted, each with its latest edit applied.
func (s *Server) Shown() []Post {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Post
	at := map[string]int{}
	for _, p := range s.posts {
		k := p.Channel + ":" + p.TS
		if i, ok := at[k]; ok && p.Method == "chat.update" {
			out[i].Text = p.Text
			continue
		}
		at[k] = len(out)
		out = append(out, p)
	}
	return out
}

// Statuses returns the assistant.threads.setStatus calls accepted.
func (s *Server) Statuses() []Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Status(nil), s.statuses...)
}

// serve answers the Web API and the Socket Mode websocket; the kit has
// answered failures asked for, unsupported methods and a service down.
func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	method := methodOf(r)
	switch method {
	case "socket":
		s.serveSocket(w, r)
		return
	case RouteDownload:
		s.serveDownload(w, r)
		return
	case RouteUpload:
		s.serveUpload(w, r)
		return
	}
	params, err := fakekit.Params(r)
	if err != nil {
		fakekit.WriteJSON(w, http.StatusOK, map[string]any{"ok": false, "error": "invalid_form_data"})
		return
	}
	token := params["token"]
	if b, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok && token == "" {
		token = b
	}
	key := strings.ToLower(method)
	want := s.botToken
	if key == "apps.connections.open" {
		want = s.appToken
	}
	switch {
	case token == "":
		fail(w, "not_authed")
		return
	case key == "apps.connections.open" && !strings.HasPrefix(token, "xapp-"):
		fail(w, "not_allowed_token_type")
		return
	case token != want:
		fail(w, "invalid_auth")
		return
	}
	s.mu.Lock()
	if q := s.failCodes[key]; len(q) > 0 {
		code := q[0]
		s.failCodes[key] = q[1:]
		s.mu.Unlock()
		fail(w, code)
		return
	}
	s.mu.Unlock()

	switch key {
	case "auth.test":
		fakekit.WriteJSON(w, http.StatusOK, map[string]any{
			"ok": true, "url": "https://baton-test.slack.com/", "team": "baton-test", "user": "baton",
			"team_id": TeamID, "user_id": BotUserID, "bot_id": BotID,
		})
	case "apps.connections.open":
		s.mu.Lock()
		s.nextSocket++
		n := s.nextSocket
		s.mu.Unlock()
		fakekit.WriteJSON(w, http.StatusOK, map[string]any{
			"ok": true, "url": "ws" + strings.TrimPrefix(s.URL(), "http") + "/link?ticket=" + strconv.Itoa(n),
		})
	case "chat.postmessage", "chat.update":
		s.chat(w, method, params)
	case "conversations.history", "conversations.replies":
		s.conversation(w, key, params)
	case "files.getuploadurlexternal":
		s.getUploadURL(w, params)
	case "files.completeuploadexternal":
		s.completeUpload(w, params)
	case "files.info":
		s.fileInfo(w, params)
	case "assistant.threads.setstatus":
		if params["channel_id"] == "" || params["thread_ts"] == "" {
			fail(w, "invalid_arguments")
			return
		}
		s.mu.Lock()
		s.statuses = append(s.statuses, Status{Channel: params["channel_id"], ThreadTS: params["thread_ts"], Status: params["status"]})
		s.Changed()
		s.mu.Unlock()
		fakekit.WriteJSON(w, http.StatusOK, map[string]any{"ok": true})
	default:
		fail(w, "unknown_method")
	}
}

// recordLocked keeps a message as the Web API's history gives it back
// (no channel, no channel_type). s.mu must be held.
func (s *Server) recordLocked(channel string, ev map[string]any) {
	m := map[string]any{}
	for k, v := range ev {
		switch k {
		case "channel", "channel_type", "event_ts":
		default:
			m[k] = v
		}
	}
	s.history[channel] = append(s.history[channel], m)
}

// conversation answers conversations.history (a channel's top-level
// messages and thread broadcasts, newest first) and conversations.replies
// (a thread: its root first, then its replies, oldest first), each after
// oldest (exclusive unless inclusive), in pages of limit (default 100)
// with a cursor, as Slack does.
func (s *Server) conversation(w http.ResponseWriter, method string, p map[string]string) {
	channel := p["channel"]
	s.mu.Lock()
	all, ok := s.history[channel]
	all = slices.Clone(all)
	s.mu.Unlock()
	if channel == "" || !ok {
		fail(w, "channel_not_found")
		return
	}
	after := func(ts string) bool {
		if p["oldest"] == "" {
			return true
		}
		o, _ := strconv.ParseFloat(p["oldest"], 64)
		t, _ := strconv.ParseFloat(ts, 64)
		return t > o || (p["inclusive"] == "true" || p["inclusive"] == "1") && t == o
	}
	var out []map[string]any
	if method == "conversations.history" {
		for _, m := range all {
			thread, _ := m["thread_ts"].(string)
			ts := m["ts"].(string)
			if (thread == "" || thread == ts || m["subtype"] == "thread_broadcast") && after(ts) {
				out = append(out, m)
			}
		}
		slices.Reverse(out)
	} else {
		root := p["ts"]
		for _, m := range all {
			thread, _ := m["thread_ts"].(string)
			ts := m["ts"].(string)
			switch {
			case ts == root:
				out = append([]map[string]any{m}, out...)
			case thread == root && after(ts):
				out = append(out, m)
			}
		}
		if len(out) == 0 || out[0]["ts"] != root {
			fail(w, "thread_not_found")
			return
		}
	}
	limit, err := strconv.Atoi(p["limit"])
	if err != nil || limit <= 0 {
		limit = 100
	}
	start, _ := strconv.Atoi(p["cursor"])
	if start > len(out) {
		start = len(out)
	}
	end := min(start+limit, len(out))
	next := ""
	if end < len(out) {
		next = strconv.Itoa(end)
	}
	page := out[start:end]
	if page == nil {
		page = []map[string]any{}
	}
	if p["include_all_metadata"] != "true" && p["include_all_metadata"] != "1" {
		// Metadata is given only to a client that asks for it.
		bare := make([]map[string]any, 0, len(page))
		for _, m := range page {
			if _, ok := m["metadata"]; ok {
				c := maps.Clone(m)
				delete(c, "metadata")
				m = c
			}
			bare = append(bare, m)
		}
		page = bare
	}
	fakekit.WriteJSON(w, http.StatusOK, map[string]any{"ok": true, "messages": page, "has_more": next != "",
		"response_metadata": map[string]any{"next_cursor": next}})
}

// ExpireUnacked gives up on every envelope not yet acknowledged, as Slack
// does after its last retry: they are never delivered again.
func (s *Server) ExpireUnacked() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range s.envelopes {
		if !e.acked {
			e.expired = true
		}
	}
}

func fail(w http.ResponseWriter, code string) {
	fakekit.WriteJSON(w, http.StatusOK, map[string]any{"ok": false, "error": code})
}

func (s *Server) chat(w http.ResponseWriter, method string, p map[string]string) {
	channel, text := p["channel"], p["text"]
	switch {
	case channel == "":
		fail(w, "channel_not_found")
		return
	case strings.TrimSpace(text) == "":
		fail(w, "no_text")
		return
	case utf8.RuneCountInString(text) > maxText:
		fail(w, "msg_too_long")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, f := range s.forbidden {
		if strings.Contains(text, f) {
			fail(w, "channel_not_found")
			return
		}
	}
	var meta map[string]any
	if raw := p["metadata"]; raw != "" {
		var m struct {
			EventType    string         `json:"event_type"`
			EventPayload map[string]any `json:"event_payload"`
		}
		if err := json.Unmarshal([]byte(raw), &m); err != nil || m.EventType == "" || m.EventPayload == nil {
			fail(w, "invalid_metadata_format")
			return
		}
		meta = map[string]any{"event_type": m.EventType, "event_payload": m.EventPayload}
	}
	post := Post{Method: method, Channel: channel, Text: text, ThreadTS: p["thread_ts"], Broadcast: p["reply_broadcast"] == "true"}
	if strings.EqualFold(method, "chat.update") {
		post.Method = "chat.update"
		post.TS = p["ts"]
		switch author, ok := s.authors[channel+":"+post.TS]; {
		case !ok:
			fail(w, "message_not_found")
			return
		case author != BotUserID:
			fail(w, "cant_update_message")
			return
		}
		post.ThreadTS = ""
		for _, q := range s.posts {
			if q.Channel == channel && q.TS == post.TS {
				post.ThreadTS = q.ThreadTS
			}
		}
	} else {
		post.Method = "chat.postMessage"
		post.TS = s.ts()
		s.authors[channel+":"+post.TS] = BotUserID
		// Slack tells the app of its own message too.
		ev := map[string]any{
			"type": "message", "channel": channel, "channel_type": channelType(channel), "user": BotUserID,
			"bot_id": BotID, "text": text, "ts": post.TS, "event_ts": post.TS, "team": TeamID,
		}
		if post.ThreadTS != "" {
			ev["thread_ts"] = post.ThreadTS
			if post.Broadcast {
				ev["subtype"] = "thread_broadcast"
			}
		}
		s.recordLocked(channel, ev)
		if meta != nil {
			h := s.history[channel]
			h[len(h)-1]["metadata"] = meta
		}
		s.queueLocked("events_api", s.callback(ev))
	}
	s.posts = append(s.posts, post)
	s.Changed()
	msg := map[string]any{"type": "message", "user": BotUserID, "bot_id": BotID, "text": text, "ts": post.TS}
	if post.ThreadTS != "" {
		msg["thread_ts"] = post.ThreadTS
	}
	fakekit.WriteJSON(w, http.StatusOK, map[string]any{"ok": true, "channel": channel, "ts": post.TS, "text": text, "message": msg})
}

// serveSocket is one Socket Mode connection: hello, then every envelope
// not yet acknowledged (and not yet written on this socket), in order;
// acknowledgements are read as they come.
func (s *Server) serveSocket(w http.ResponseWriter, r *http.Request) {
	// Slack's clients send Origin: https://api.slack.com.
	conn, err := websocket.Accept(w, r, &websocket.AcceptOptions{OriginPatterns: []string{"api.slack.com"}})
	if err != nil {
		return
	}
	conn.SetReadLimit(1 << 20)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s.mu.Lock()
	s.connects++
	id := s.connects
	so := &socket{id: id, conn: conn, cancel: cancel}
	s.sockets[id] = so
	s.Changed()
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.sockets, id)
		s.Changed()
		s.mu.Unlock()
		_ = conn.CloseNow()
	}()

	s.mu.Lock()
	deaf := s.deaf
	s.mu.Unlock()
	if !deaf {
		go s.readAcks(ctx, cancel, conn)
	}
	if err := writeJSON(ctx, conn, map[string]any{
		"type": "hello", "num_connections": 1,
		"debug_info":      map[string]any{"host": "applink-fake", "approximate_connection_time": 18060},
		"connection_info": map[string]any{"app_id": AppID},
	}); err != nil {
		return
	}
	for {
		wake := s.Changes()
		s.mu.Lock()
		var out []map[string]any
		if so.disconnect != "" {
			out = append(out, map[string]any{"type": "disconnect", "reason": so.disconnect,
				"debug_info": map[string]any{"host": "applink-fake"}})
			so.disconnect = ""
		}
		for _, e := range s.envelopes {
			if e.acked || e.expired || e.sentOn[id] {
				continue
			}
			e.sentOn[id] = true
			e.deliveries++
			f := map[string]any{"envelope_id": e.id, "type": e.typ, "payload": e.payload,
				"accepts_response_payload": e.typ != "events_api", "retry_attempt": e.deliveries - 1}
			if e.deliveries > 1 {
				f["retry_reason"] = "timeout"
			}
			out = append(out, f)
		}
		s.mu.Unlock()
		for _, f := range out {
			if err := writeJSON(ctx, conn, f); err != nil {
				return
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-wake:
		}
	}
}

// readAcks reads the client's frames: acknowledgements mark envelopes
// done. It ends the connection when the client goes away.
func (s *Server) readAcks(ctx context.Context, cancel context.CancelFunc, conn *websocket.Conn) {
	defer cancel()
	for {
		_, data, err := conn.Read(ctx)
		if err != nil {
			return
		}
		var ack struct {
			EnvelopeID string `json:"envelope_id"`
		}
		if json.Unmarshal(data, &ack) != nil || ack.EnvelopeID == "" {
			continue
		}
		s.mu.Lock()
		for _, e := range s.envelopes {
			if e.id == ack.EnvelopeID {
				e.acked = true
			}
		}
		s.Changed()
		s.mu.Unlock()
	}
}

func writeJSON(ctx context.Context, conn *websocket.Conn, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return conn.Write(wctx, websocket.MessageText, b)
}
