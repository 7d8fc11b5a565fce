// Package discordtest is a fake Discord for tests: the REST API (v10) and
// the gateway websocket on 127.0.0.1, speaking Discord's wire protocol —
// HELLO, IDENTIFY, READY and GUILD_CREATE, heartbeats and their ACKs,
// RESUME with the events missed replayed, MESSAGE_CREATE and
// THREAD_CREATE dispatches, the intents deciding what a session sees, a
// message created with an enforced nonce given back instead of made again
// — and the failures the real one shows on demand: route and global 429s
// with retry_after, 5xx, routes it does not have, thread creation refused
// for want of a permission (403, code 50013), a refused token, the
// websocket dropped mid-run, an answer lost, the whole service down. It is
// built on fakekit, as every fake service is.
package discordtest

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/baton-agent/baton/internal/platform/fakekit"
)

// Channel types, as Discord numbers them.
const (
	GuildText    = 0
	DM           = 1
	PublicThread = 11
)

// Route names, as FailNext, Unsupported and CallCount take them.
const (
	RouteGateway        = "Gateway" // the websocket
	RouteGetGatewayBot  = "Get Gateway Bot"
	RouteGetChannel     = "Get Channel"
	RouteCreateMessage  = "Create Message"
	RouteEditMessage    = "Edit Message"
	RouteTyping         = "Trigger Typing Indicator"
	RouteStartThread    = "Start Thread without Message"
	RouteGetCurrentUser = "Get Current User"
	RouteGetMessages    = "Get Channel Messages"
)

// Channel is a channel the fake knows.
type Channel struct {
	ID       string
	Type     int
	GuildID  string // "" for a DM
	ParentID string // a thread's channel
	Name     string
	Archive  int // a thread's auto_archive_duration, minutes
}

// User is a message's author.
type User struct {
	ID       string
	Username string
}

// Post is a message the bot posted or edited and the fake accepted.
type Post struct {
	Route     string // RouteCreateMessage or RouteEditMessage
	ChannelID string
	MessageID string
	Content   string
	// AllowedMentions is the allowed_mentions the request carried, as
	// sent ("" when absent).
	AllowedMentions string
	// Pings is what the message would have pinged by Discord's rules:
	// "everyone" for @everyone/@here, role and user ids.
	Pings []string
	// Nonce is the nonce a created message carried ("" for none);
	// Enforced says whether enforce_nonce was set.
	Nonce    string
	Enforced bool
	// Attachments are the files a created message carries.
	Attachments []Attachment
}

// NonceWindow is how long an enforced nonce finds the message it made.
// Discord says only "the past few minutes".
const NonceWindow = 5 * time.Minute

// maxNonce is the longest string nonce Discord takes.
const maxNonce = 25

// nonced is a message created with an enforced nonce.
type nonced struct {
	msgID, channelID string
	at               time.Time
}

// Server is the fake Discord. Its methods are safe for concurrent use.
// The kit's are its own: Wait (cond is checked after every change),
// Calls and CallCount, and FailNext, LoseNext and Unsupported by Discord
// route ("POST /channels/{id}/messages"); a 429 from FailNext is limited
// to its route (see RateLimitGlobal), a LoseNext is a message posted that
// the bot never heard of, and Unsupported answers Discord's 404 for an
// unknown endpoint.
type Server struct {
	*fakekit.Server
	tb    testing.TB
	token string
	bot   User
	guild string

	mu            sync.Mutex // guards what follows; the kit has its own lock
	next          uint64
	channels      map[string]*Channel
	order         []string // channel ids in creation order
	posts         []Post
	authors       map[string]string           // message id → author id
	history       map[string][]map[string]any // channel id → its messages, oldest first
	nonces        map[string]nonced           // author id + nonce → the message it made
	sessions      map[string]*session
	conns         map[*wsConn]bool
	identifies    int
	resumes       int
	heartbeat     time.Duration
	refuseThreads bool
	refuseIntent  bool
	globalLimit   time.Duration
	startsUsed    bool // GET /gateway/bot says no session starts are left
	dropAfter     map[string]int
	stored        map[string]*Attachment // attachment id → the file the CDN serves
	attached      map[string][]any       // message id → its attachments as messages give them
}

// New starts a fake Discord accepting token, with one guild holding a text
// channel named "general" (see Home), closed when tb ends.
func New(tb testing.TB, token string) *Server {
	tb.Helper()
	s := &Server{
		tb: tb, token: token,
		next:      uint64(time.Now().UnixMilli()-1420070400000) << 22,
		channels:  map[string]*Channel{},
		authors:   map[string]string{},
		history:   map[string][]map[string]any{},
		nonces:    map[string]nonced{},
		sessions:  map[string]*session{},
		conns:     map[*wsConn]bool{},
		heartbeat: 41250 * time.Millisecond,
		dropAfter: map[string]int{},
	}
	s.bot = User{ID: s.newID(), Username: "baton"}
	s.guild = s.newID()
	cfg := fakekit.Config{Method: routeOf, Failure: writeFailure}
	// With Discord's own OpenAPI description at hand, the fake refuses
	// what Discord would (see specCheck).
	switch api, err := loadOpenAPI(); {
	case err != nil:
		tb.Fatal(err)
	case api != nil:
		cfg.Spec, cfg.Refuse = specCheck(api), writeRefusal
	}
	s.Server = fakekit.New(tb, cfg, http.HandlerFunc(s.serve))
	s.AddChannel("general")
	return s
}

// newID makes a snowflake; s.mu held or not yet shared.
func (s *Server) newID() string {
	s.next++
	return strconv.FormatUint(s.next, 10)
}

// APIURL is the REST base to configure the client with (rest.WithURL).
func (s *Server) APIURL() string { return s.URL() + "/api/v10" }

// GatewayURL is the websocket GET /gateway/bot names.
func (s *Server) GatewayURL() string {
	return "ws" + strings.TrimPrefix(s.URL(), "http") + "/gateway"
}

// Token is the bot token the fake accepts.
func (s *Server) Token() string { return s.token }

// Bot is the bot's user.
func (s *Server) Bot() User { return s.bot }

// Guild is the guild's id.
func (s *Server) Guild() string { return s.guild }

// Home is the "general" text channel's id.
func (s *Server) Home() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.order[0]
}

// SetHeartbeat sets the heartbeat interval HELLO asks for (default
// 41.25 s, as Discord's).
func (s *Server) SetHeartbeat(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.heartbeat = d
}

// AddChannel adds a guild text channel and returns its id.
func (s *Server) AddChannel(name string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := s.newID()
	s.addLocked(&Channel{ID: id, Type: GuildText, GuildID: s.guild, Name: name})
	return id
}

// AddDM opens the DM channel between the bot and a user and returns its id.
func (s *Server) AddDM(user User) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, id := range s.order {
		if c := s.channels[id]; c.Type == DM && c.Name == user.ID {
			return id
		}
	}
	id := s.newID()
	s.addLocked(&Channel{ID: id, Type: DM, Name: user.ID})
	return id
}

func (s *Server) addLocked(c *Channel) {
	s.channels[c.ID] = c
	s.order = append(s.order, c.ID)
	s.Changed()
}

// Channel returns a channel by id.
func (s *Server) Channel(id string) (Channel, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.channels[id]
	if !ok {
		return Channel{}, false
	}
	return *c, true
}

// Threads returns the threads created, in order.
func (s *Server) Threads() []Channel {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Channel
	for _, id := range s.order {
		if c := s.channels[id]; c.Type == PublicThread {
			out = append(out, *c)
		}
	}
	return out
}

// Posts returns every message the bot posted or edited, in order.
func (s *Server) Posts() []Post {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Post(nil), s.posts...)
}

// Shown returns the bot's messages as a person sees them now: one per
// message, in the order posted, each with its latest edit.
func (s *Server) Shown() []Post {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Post
	at := map[string]int{}
	for _, p := range s.posts {
		if i, ok := at[p.MessageID]; ok {
			out[i].Content, out[i].Pings = p.Content, p.Pings
			continue
		}
		at[p.MessageID] = len(out)
		out = append(out, p)
	}
	return out
}

// Identifies and Resumes count the sessions identified and resumed.
func (s *Server) Identifies() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.identifies
}

// Resumes counts the successful RESUMEs.
func (s *Server) Resumes() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.resumes
}

// Connected is the number of gateway connections that are READY or
// RESUMED now.
func (s *Server) Connected() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for c := range s.conns {
		if c.session != nil {
			n++
		}
	}
	return n
}

// SessionStartsUsed makes GET /gateway/bot say the bot has no session
// starts (identifies) left until they reset, as Discord does after about
// 1,000 in a day.
func (s *Server) SessionStartsUsed(used bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.startsUsed = used
}

// RateLimitGlobal makes the next REST request, whatever its route, answer
// 429 for the global limit, asking for retryAfter.
func (s *Server) RateLimitGlobal(retryAfter time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.globalLimit = retryAfter
}

// RefuseThreads makes thread creation answer 403 Missing Permissions (code
// 50013), as for a bot without Create Public Threads in the channel.
func (s *Server) RefuseThreads(refuse bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refuseThreads = refuse
}

// RefuseMessageContent makes IDENTIFY with the Message Content intent
// close 4014, as for a bot whose privileged intent is off in the portal.
func (s *Server) RefuseMessageContent(refuse bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refuseIntent = refuse
}

// DropAfterNext drops every gateway connection right after the next
// successful request of route has been answered: the connection lost
// mid-way through whatever that request was part of.
func (s *Server) DropAfterNext(route string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dropAfter[strings.ToLower(route)]++
}

// Drop cuts every gateway connection without a close frame, as a network
// failure does; sessions stay resumable and keep what they miss.
func (s *Server) Drop() {
	s.mu.Lock()
	conns := s.connsLocked()
	s.mu.Unlock()
	for _, c := range conns {
		c.ws.CloseNow()
	}
}

// CloseWith closes every gateway connection with a close code (4000 is
// resumable, 4009 ends the session, 4004 refuses the token).
func (s *Server) CloseWith(code int, reason string) {
	s.mu.Lock()
	conns := s.connsLocked()
	s.mu.Unlock()
	for _, c := range conns {
		c.closeWith(code, reason)
	}
}

func (s *Server) connsLocked() []*wsConn {
	var out []*wsConn
	for c := range s.conns {
		out = append(out, c)
	}
	return out
}

// Down takes Discord down: gateway connections are cut and every request
// answers 502 with a proxy's HTML page until Up.
func (s *Server) Down() {
	s.Server.Down()
	s.Drop()
}

// Close stops the server.
func (s *Server) Close() {
	s.Drop()
	s.Server.Close()
}

// routeOf names a request by its Discord route.
func routeOf(r *http.Request) string {
	p := strings.TrimPrefix(r.URL.Path, "/api/v10")
	parts := strings.Split(strings.Trim(p, "/"), "/")
	switch {
	case p == "/gateway" && r.URL.Path == "/gateway":
		return RouteGateway
	case strings.HasPrefix(r.URL.Path, cdnBase+"/attachments/") && r.Method == http.MethodGet:
		return RouteCDN
	case p == "/gateway/bot" && r.Method == http.MethodGet:
		return RouteGetGatewayBot
	case p == "/users/@me" && r.Method == http.MethodGet:
		return RouteGetCurrentUser
	case len(parts) == 2 && parts[0] == "channels" && r.Method == http.MethodGet:
		return RouteGetChannel
	case len(parts) == 3 && parts[0] == "channels" && parts[2] == "messages" && r.Method == http.MethodPost:
		return RouteCreateMessage
	case len(parts) == 3 && parts[0] == "channels" && parts[2] == "messages" && r.Method == http.MethodGet:
		return RouteGetMessages
	case len(parts) == 4 && parts[0] == "channels" && parts[2] == "messages" && r.Method == http.MethodPatch:
		return RouteEditMessage
	case len(parts) == 3 && parts[0] == "channels" && parts[2] == "typing" && r.Method == http.MethodPost:
		return RouteTyping
	case len(parts) == 3 && parts[0] == "channels" && parts[2] == "threads" && r.Method == http.MethodPost:
		return RouteStartThread
	}
	return r.Method + " " + p
}

// writeFailure answers a failure the kit was asked for as Discord does.
func writeFailure(w http.ResponseWriter, _ *http.Request, f fakekit.Failure) {
	switch {
	case f.Unsupported:
		fakekit.WriteJSON(w, http.StatusNotFound, map[string]any{"message": "404: Not Found", "code": 0})
	case f.Status == http.StatusTooManyRequests:
		writeRateLimit(w, f.RetryAfter, false)
	default:
		fakekit.WriteJSON(w, f.Status, map[string]any{"message": http.StatusText(f.Status), "code": 0})
	}
}

func writeRateLimit(w http.ResponseWriter, wait time.Duration, global bool) {
	secs := wait.Seconds()
	w.Header().Set("Retry-After", strconv.Itoa(int((wait+time.Second-1)/time.Second)))
	w.Header().Set("X-RateLimit-Remaining", "0")
	w.Header().Set("X-RateLimit-Reset-After", strconv.FormatFloat(secs, 'f', 3, 64))
	scope := "user"
	if global {
		scope = "global"
		w.Header().Set("X-RateLimit-Global", "true")
	}
	w.Header().Set("X-RateLimit-Scope", scope)
	fakekit.WriteJSON(w, http.StatusTooManyRequests, map[string]any{
		"message": "You are being rate limited.", "retry_after": secs, "global": global,
	})
}

func writeError(w http.ResponseWriter, status, code int, msg string) {
	fakekit.WriteJSON(w, status, map[string]any{"message": msg, "code": code})
}

// serve answers REST and the gateway; the kit has answered failures asked
// for, unsupported routes and a service down before it is called.
func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	route := routeOf(r)
	switch route {
	case RouteGateway:
		s.serveGateway(w, r)
		return
	case RouteCDN:
		s.serveCDN(w, r)
		return
	}
	if r.Header.Get("Authorization") != "Bot "+s.token {
		writeError(w, http.StatusUnauthorized, 0, "401: Unauthorized")
		return
	}
	s.mu.Lock()
	global := s.globalLimit
	s.globalLimit = 0
	s.mu.Unlock()
	if global > 0 {
		writeRateLimit(w, global, true)
		return
	}
	parts := strings.Split(strings.Trim(strings.TrimPrefix(r.URL.Path, "/api/v10"), "/"), "/")
	ok := false
	switch route {
	case RouteGetGatewayBot:
		s.mu.Lock()
		remaining := 999
		if s.startsUsed {
			remaining = 0
		}
		s.mu.Unlock()
		fakekit.WriteJSON(w, http.StatusOK, map[string]any{
			"url": s.GatewayURL(), "shards": 1,
			"session_start_limit": map[string]any{"total": 1000, "remaining": remaining, "reset_after": 14400000, "max_concurrency": 1},
		})
		ok = true
	case RouteGetCurrentUser:
		fakekit.WriteJSON(w, http.StatusOK, s.userJSON(s.bot, true))
		ok = true
	case RouteGetChannel:
		ok = s.getChannel(w, parts[1])
	case RouteCreateMessage, RouteEditMessage:
		ok = s.postMessage(w, r, route, parts)
	case RouteGetMessages:
		ok = s.getMessages(w, r, parts[1])
	case RouteTyping:
		if _, found := s.Channel(parts[1]); !found {
			writeError(w, http.StatusNotFound, 10003, "Unknown Channel")
			return
		}
		w.WriteHeader(http.StatusNoContent)
		ok = true
	case RouteStartThread:
		ok = s.startThread(w, r, parts[1])
	default:
		writeError(w, http.StatusNotFound, 0, "404: Not Found")
	}
	if ok {
		s.mu.Lock()
		drop := s.dropAfter[strings.ToLower(route)] > 0
		if drop {
			s.dropAfter[strings.ToLower(route)]--
		}
		s.mu.Unlock()
		if drop {
			_ = http.NewResponseController(w).Flush()
			s.Drop()
		}
	}
}

func (s *Server) userJSON(u User, bot bool) map[string]any {
	return map[string]any{"id": u.ID, "username": u.Username, "global_name": u.Username, "discriminator": "0", "bot": bot, "avatar": nil}
}

func channelJSON(c *Channel) map[string]any {
	m := map[string]any{"id": c.ID, "type": c.Type, "name": c.Name}
	if c.GuildID != "" {
		m["guild_id"] = c.GuildID
	}
	if c.ParentID != "" {
		m["parent_id"] = c.ParentID
	}
	if c.Type == PublicThread {
		m["thread_metadata"] = map[string]any{"archived": false, "auto_archive_duration": c.Archive, "locked": false}
	}
	if c.Type == DM {
		m["recipients"] = []any{map[string]any{"id": c.Name}}
		delete(m, "name")
	}
	return m
}

func (s *Server) getChannel(w http.ResponseWriter, id string) bool {
	c, ok := s.Channel(id)
	if !ok {
		writeError(w, http.StatusNotFound, 10003, "Unknown Channel")
		return false
	}
	fakekit.WriteJSON(w, http.StatusOK, channelJSON(&c))
	return true
}

var (
	userMention = regexp.MustCompile(`<@!?(\d+)>`)
	roleMention = regexp.MustCompile(`<@&(\d+)>`)
)

// pings is what content would ping under allowed (Discord's rules: with
// no allowed_mentions everything mentioned is pinged).
func pings(content string, allowed json.RawMessage) []string {
	var am *struct {
		Parse []string `json:"parse"`
		Users []string `json:"users"`
		Roles []string `json:"roles"`
	}
	if len(allowed) > 0 && string(allowed) != "null" {
		_ = json.Unmarshal(allowed, &am)
	}
	parses := func(kind string) bool {
		if am == nil {
			return true
		}
		for _, p := range am.Parse {
			if p == kind {
				return true
			}
		}
		return false
	}
	var out []string
	if (strings.Contains(content, "@everyone") || strings.Contains(content, "@here")) && parses("everyone") {
		out = append(out, "everyone")
	}
	for _, m := range userMention.FindAllStringSubmatch(content, -1) {
		if parses("users") || (am != nil && contains(am.Users, m[1])) {
			out = append(out, "user:"+m[1])
		}
	}
	for _, m := range roleMention.FindAllStringSubmatch(content, -1) {
		if parses("roles") || (am != nil && contains(am.Roles, m[1])) {
			out = append(out, "role:"+m[1])
		}
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func (s *Server) postMessage(w http.ResponseWriter, r *http.Request, route string, parts []string) bool {
	body, files, err := readMessage(r)
	switch {
	case errors.Is(err, errTooLarge):
		writeError(w, http.StatusRequestEntityTooLarge, 40005, "Request entity too large")
		return false
	case err != nil:
		writeError(w, http.StatusBadRequest, 50109, "The request body contains invalid JSON.")
		return false
	case len(files) > 0 && route != RouteCreateMessage:
		writeError(w, http.StatusBadRequest, 50035, "Invalid Form Body: files are taken by a new message only here")
		return false
	}
	nonce, ok := parseNonce(body.Nonce)
	if !ok {
		writeError(w, http.StatusBadRequest, 50035, "Invalid Form Body: nonce must be an integer or a string of at most 25 characters")
		return false
	}

	s.mu.Lock()
	c, ok := s.channels[parts[1]]
	if !ok {
		s.mu.Unlock()
		writeError(w, http.StatusNotFound, 10003, "Unknown Channel")
		return false
	}
	ch := *c
	var msgID string
	if route == RouteEditMessage {
		msgID = parts[3]
		if author, found := s.authors[msgID]; !found {
			s.mu.Unlock()
			writeError(w, http.StatusNotFound, 10008, "Unknown Message")
			return false
		} else if author != s.bot.ID {
			s.mu.Unlock()
			writeError(w, http.StatusForbidden, 50005, "Cannot edit a message authored by another user")
			return false
		}
	}
	s.mu.Unlock()
	if (body.Content == nil || strings.TrimSpace(*body.Content) == "") && len(files) == 0 {
		writeError(w, http.StatusBadRequest, 50006, "Cannot send an empty message")
		return false
	}
	if body.Content == nil {
		body.Content = new(string)
	}
	if utf8.RuneCountInString(*body.Content) > 2000 {
		fakekit.WriteJSON(w, http.StatusBadRequest, map[string]any{
			"message": "Invalid Form Body", "code": 50035,
			"errors": map[string]any{"content": map[string]any{"_errors": []any{map[string]any{"code": "BASE_TYPE_MAX_LENGTH", "message": "Must be 2000 or fewer in length."}}}},
		})
		return false
	}
	s.mu.Lock()
	if route == RouteCreateMessage && nonce != "" && body.EnforceNonce {
		// Discord gives back the message this nonce made and creates
		// none: no post, no MESSAGE_CREATE.
		if m, found := s.repeatLocked(nonce); found {
			s.mu.Unlock()
			fakekit.Annotate(r, "repeat of nonce "+nonce)
			fakekit.WriteJSON(w, http.StatusOK, m)
			return true
		}
	}
	if msgID == "" {
		msgID = s.newID()
		s.authors[msgID] = s.bot.ID
		if nonce != "" && body.EnforceNonce {
			s.nonces[s.bot.ID+"\x00"+nonce] = nonced{msgID: msgID, channelID: ch.ID, at: time.Now()}
		}
	}
	allowed := ""
	if len(body.AllowedMentions) > 0 {
		allowed = string(body.AllowedMentions)
	}
	post := Post{Route: route, ChannelID: ch.ID, MessageID: msgID, Content: *body.Content,
		AllowedMentions: allowed, Pings: pings(*body.Content, body.AllowedMentions)}
	if route == RouteCreateMessage {
		post.Nonce, post.Enforced = nonce, body.EnforceNonce
		var atts []any
		for _, f := range files {
			a := s.keepLocked(ch.ID, f.Name, f.ContentType, f.Data)
			post.Attachments = append(post.Attachments, *a)
			atts = append(atts, s.attachmentJSON(a))
		}
		if len(atts) > 0 {
			if s.attached == nil {
				s.attached = map[string][]any{}
			}
			s.attached[msgID] = atts
		}
	}
	s.posts = append(s.posts, post)
	msg := s.messageJSON(&ch, msgID, s.bot, true, *body.Content)
	if atts, ok := s.attached[msgID]; ok {
		msg["attachments"] = atts
	}
	if post.Nonce != "" {
		msg["nonce"] = post.Nonce
	}
	if route == RouteCreateMessage {
		// Discord tells the bot of its own messages too.
		s.dispatchLocked("MESSAGE_CREATE", msg, &ch, false)
		s.history[ch.ID] = append(s.history[ch.ID], restMessage(msg))
	} else {
		for _, m := range s.history[ch.ID] {
			if m["id"] == msgID {
				m["content"] = *body.Content
			}
		}
	}
	s.Changed()
	s.mu.Unlock()
	fakekit.WriteJSON(w, http.StatusOK, msg)
	return true
}

// parseNonce reads a message's nonce, an integer or a string of at most
// 25 characters; "" for none, ok false for one Discord refuses.
func parseNonce(raw json.RawMessage) (nonce string, ok bool) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", true
	}
	var str string
	if json.Unmarshal(raw, &str) == nil {
		return str, utf8.RuneCountInString(str) <= maxNonce
	}
	var n json.Number
	if json.Unmarshal(raw, &n) == nil {
		if _, err := n.Int64(); err == nil {
			return n.String(), true
		}
	}
	return "", false
}

// repeatLocked is the message the bot made with nonce within NonceWindow,
// as Discord answers a create that enforces it; s.mu held.
func (s *Server) repeatLocked(nonce string) (map[string]any, bool) {
	n, ok := s.nonces[s.bot.ID+"\x00"+nonce]
	if !ok || time.Since(n.at) > NonceWindow {
		return nil, false
	}
	c, ok := s.channels[n.channelID]
	if !ok {
		return nil, false
	}
	content := ""
	for _, p := range s.posts {
		if p.MessageID == n.msgID {
			content = p.Content // the latest edit
		}
	}
	m := s.messageJSON(c, n.msgID, s.bot, true, content)
	if atts, ok := s.attached[n.msgID]; ok {
		m["attachments"] = atts
	}
	m["nonce"] = nonce
	return m, true
}

func (s *Server) messageJSON(c *Channel, id string, author User, bot bool, content string) map[string]any {
	m := map[string]any{
		"id": id, "channel_id": c.ID, "type": 0, "content": content,
		"author": s.userJSON(author, bot), "timestamp": time.Now().UTC().Format(time.RFC3339Nano),
		"edited_timestamp": nil, "tts": false, "mention_everyone": false, "mentions": []any{},
		"mention_roles": []any{}, "attachments": []any{}, "embeds": []any{}, "pinned": false,
	}
	if c.GuildID != "" {
		m["guild_id"] = c.GuildID
	}
	return m
}

func (s *Server) startThread(w http.ResponseWriter, r *http.Request, parentID string) bool {
	var body struct {
		Name    string `json:"name"`
		Type    int    `json:"type"`
		Archive int    `json:"auto_archive_duration"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		writeError(w, http.StatusBadRequest, 50109, "The request body contains invalid JSON.")
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	parent, ok := s.channels[parentID]
	switch {
	case !ok:
		writeError(w, http.StatusNotFound, 10003, "Unknown Channel")
		return false
	case s.refuseThreads:
		writeError(w, http.StatusForbidden, 50013, "Missing Permissions")
		return false
	case parent.Type != GuildText:
		writeError(w, http.StatusBadRequest, 50024, "Cannot execute action on this channel type")
		return false
	case body.Name == "" || utf8.RuneCountInString(body.Name) > 100:
		writeError(w, http.StatusBadRequest, 50035, "Invalid Form Body: name must be 1-100 characters")
		return false
	case body.Type != 0 && body.Type != PublicThread:
		writeError(w, http.StatusBadRequest, 50035, "Invalid Form Body: type")
		return false
	}
	switch body.Archive {
	case 0:
		body.Archive = 4320 // the channel's default, as Discord uses it
	case 60, 1440, 4320, 10080:
	default:
		writeError(w, http.StatusBadRequest, 50035, "Invalid Form Body: auto_archive_duration")
		return false
	}
	th := &Channel{ID: s.newID(), Type: PublicThread, GuildID: parent.GuildID, ParentID: parent.ID, Name: body.Name, Archive: body.Archive}
	s.addLocked(th)
	obj := channelJSON(th)
	obj["owner_id"] = s.bot.ID
	created := map[string]any{"newly_created": true}
	for k, v := range obj {
		created[k] = v
	}
	s.dispatchLocked("THREAD_CREATE", created, th, false)
	fakekit.WriteJSON(w, http.StatusCreated, obj)
	return true
}

// Say makes a person say text in a channel (a guild channel, a thread or
// a DM) and returns the message id the MESSAGE_CREATE carries.
func (s *Server) Say(channelID string, from User, text string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.channels[channelID]
	if !ok {
		return "", fmt.Errorf("discordtest: no channel %s", channelID)
	}
	id := s.newID()
	s.authors[id] = from.ID
	mentioned := strings.Contains(text, "<@"+s.bot.ID+">") || strings.Contains(text, "<@!"+s.bot.ID+">")
	msg := s.messageJSON(c, id, from, false, text)
	s.dispatchLocked("MESSAGE_CREATE", msg, c, mentioned)
	s.history[c.ID] = append(s.history[c.ID], restMessage(msg))
	s.Changed()
	return id, nil
}

// restMessage is a message as REST gives it: as the gateway's
// MESSAGE_CREATE, without guild_id.
func restMessage(msg map[string]any) map[string]any {
	m := make(map[string]any, len(msg))
	for k, v := range msg {
		if k != "guild_id" {
			m[k] = v
		}
	}
	return m
}

// getMessages answers GET /channels/{id}/messages with after (and limit,
// 1–100, default 50) as Discord does: the messages just after that id,
// newest first. The fake serves after alone, what the adapter asks.
func (s *Server) getMessages(w http.ResponseWriter, r *http.Request, channelID string) bool {
	q := r.URL.Query()
	limit := 50
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 100 {
			writeError(w, http.StatusBadRequest, 50035, "Invalid Form Body: limit")
			return false
		}
		limit = n
	}
	after, err := strconv.ParseUint(q.Get("after"), 10, 64)
	if err != nil {
		writeError(w, http.StatusBadRequest, 50035, "Invalid Form Body: after")
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.channels[channelID]; !ok {
		writeError(w, http.StatusNotFound, 10003, "Unknown Channel")
		return false
	}
	var out []any
	for _, m := range s.history[channelID] { // ids grow with time
		if id, _ := strconv.ParseUint(m["id"].(string), 10, 64); id > after && len(out) < limit {
			out = append(out, m)
		}
	}
	slices.Reverse(out)
	if out == nil {
		out = []any{}
	}
	fakekit.WriteJSON(w, http.StatusOK, out)
	return true
}

// ExpireSessions forgets every gateway session, as Discord does a while
// after its connection ended: a RESUME is answered INVALID_SESSION, and
// what was said meanwhile is never replayed.
func (s *Server) ExpireSessions() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for id, ss := range s.sessions {
		if ss.conn != nil {
			ss.conn.ws.CloseNow()
		}
		delete(s.sessions, id)
	}
	s.Changed()
}

// Acked reports whether the bot's session has acknowledged the message
// with id: a heartbeat or RESUME carried a sequence number at or past the
// MESSAGE_CREATE that brought it.
func (s *Server) Acked(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, ss := range s.sessions {
		if seq, ok := ss.msgSeq[id]; ok && ss.acked >= seq {
			return true
		}
	}
	return false
}

// AddThread opens a thread under a text channel as a person would, and
// returns its id. With announce the sessions hear THREAD_CREATE; without,
// a client learns of it only by asking (GET /channels/{id}).
func (s *Server) AddThread(parentID, name string, announce bool) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	th := &Channel{ID: s.newID(), Type: PublicThread, GuildID: s.guild, ParentID: parentID, Name: name, Archive: 1440}
	s.addLocked(th)
	if announce {
		s.dispatchLocked("THREAD_CREATE", channelJSON(th), th, false)
	}
	return th.ID
}
