// Package telegramtest is a fake Telegram Bot API server for tests: real
// HTTP on 127.0.0.1, requests parsed as the real API receives them
// (multipart/form-data, application/x-www-form-urlencoded, JSON or query
// string), updates handed out by getUpdates with the real offset and
// long-poll semantics, forum topics, and failures on demand (429 with
// retry_after, 5xx, unsupported methods, rejected HTML, the whole service
// down behind its proxy), and files people send (PushPhoto, PushDocument,
// PushFile) served by getFile and the file download route. It is built on
// fakekit, as every fake service is.
package telegramtest

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/baton-agent/baton/internal/platform"
	"github.com/baton-agent/baton/internal/platform/fakekit"
)

// Chat types, as the Bot API names them.
const (
	Private    = "private"
	Group      = "group"
	Supergroup = "supergroup"
)

// Chat is a chat the fake knows. A forum supergroup has IsForum set; a
// private chat with IsForum set has topics enabled (Bot API 9 private chat
// topics), so createForumTopic works there too.
type Chat struct {
	ID      int64
	Type    string // Private, Group or Supergroup
	Title   string
	IsForum bool
	// NoTopicRights makes createForumTopic in this forum answer 400 "not
	// enough rights to create a topic", as Telegram does where the bot is
	// not an administrator allowed to manage topics; other forums are not
	// touched.
	NoTopicRights bool
}

// User is a message's sender.
type User struct {
	ID        int64
	FirstName string
	Username  string
}

// SentMessage is a message the bot posted (sendMessage) or changed
// (editMessageText) and the fake accepted.
type SentMessage struct {
	Method    string // "sendMessage" or "editMessageText"
	ChatID    string
	ThreadID  int    // message_thread_id; 0 for none
	MessageID int    // the id the fake gave it (or the edited one)
	Text      string // as sent: HTML when ParseMode is "HTML"
	ParseMode string
	Plain     string // the text a person sees: tags stripped, entities decoded
}

// Call is one request the fake received, answered or not.
type Call struct {
	Method     string
	Params     map[string]string
	Status     int // HTTP status answered; 0 when the client left unanswered
	Start, End time.Time
	Note       string // what the fake answered in its terms: update ids, the message id
}

// Topic is a forum topic created with createForumTopic.
type Topic struct {
	ChatID   string
	ThreadID int
	Name     string
}

// Server is the fake Bot API. Its methods are safe for concurrent use.
// The kit's are its own: URL to configure the client with, Close (pending
// long polls return at once), Down (long polls in flight are cut and
// every request answers 502 with a proxy's HTML page until Up), DownWith
// (fakekit.Hangup: connections closed without an answer), Up, CallCount,
// and Unsupported, which answers 404 "method not supported" as a Bot API
// server without the methods would.
type Server struct {
	*fakekit.Server // HTTP, calls, failures on demand, down/up
	tb              testing.TB
	token           string
	botID           int64
	botTag          string

	// mu guards the Bot API state below. The kit has its own lock, taken
	// only after mu: Changed may be called with mu held.
	mu         sync.Mutex
	updates    []json.RawMessage
	updateIDs  []int64
	nextUpdate int64
	confirmed  int64 // every update below this id was confirmed by an offset
	nextMsg    int
	nextThread int
	chats      map[int64]Chat
	sent       []SentMessage
	topics     []Topic
	commands   []json.RawMessage
	rejectHTML int
	forbidden  []string               // texts whose sends and edits answer 403
	pages      map[string]int         // methods answered with a web server's HTML error page, by status
	polls      int64                  // getUpdates calls so far: a newer one ends an older one's wait
	files      map[string]*storedFile // by file_id: what getFile and the download route serve
	sentFiles  []SentFile
}

// New starts a fake Bot API for token on 127.0.0.1, closed when tb ends.
// Point the client at URL() (bot.WithServerURL).
func New(tb testing.TB, token string) *Server {
	tb.Helper()
	s := &Server{
		tb:         tb,
		token:      token,
		botTag:     "baton_test_bot",
		nextUpdate: 1000,
		nextMsg:    1,
		nextThread: 100,
		chats:      map[int64]Chat{},
	}
	if id, err := strconv.ParseInt(strings.SplitN(token, ":", 2)[0], 10, 64); err == nil {
		s.botID = id
	} else {
		s.botID = 4242
	}
	cfg := fakekit.Config{Method: methodOf, Failure: writeFailure}
	// With Telegram's own description of the Bot API at hand, the fake
	// refuses what Telegram would (see BotAPI.check).
	switch api, err := loadBotAPI(); {
	case err != nil:
		tb.Fatal(err)
	case api != nil:
		cfg.Spec, cfg.Refuse = specCheck(api), writeRefusal
	}
	s.Server = fakekit.New(tb, cfg, http.HandlerFunc(s.serve))
	return s
}

// methodOf names a request by its Bot API method: /bot<token>/<method>;
// a file download (/file/bot<token>/<file_path>) is downloadMethod.
func methodOf(r *http.Request) string {
	if strings.HasPrefix(r.URL.Path, "/file/") {
		return downloadMethod
	}
	rest, ok := strings.CutPrefix(r.URL.Path, "/bot")
	if !ok {
		return ""
	}
	_, method, _ := strings.Cut(rest, "/")
	return method
}

// writeFailure answers a failure the kit was asked for as the Bot API does.
func writeFailure(w http.ResponseWriter, _ *http.Request, f fakekit.Failure) {
	desc := http.StatusText(f.Status)
	secs := int((f.RetryAfter + time.Second - 1) / time.Second)
	switch {
	case f.Unsupported:
		desc = "Not Found: method not supported"
	case f.Status == http.StatusTooManyRequests:
		desc = "Too Many Requests: retry after " + strconv.Itoa(secs)
	}
	writeAnswer(w, f.Status, desc, secs, nil)
}

// Token is the bot token the fake accepts.
func (s *Server) Token() string { return s.token }

// BotUsername is the username getMe reports, without "@".
func (s *Server) BotUsername() string { return s.botTag }

// AddChat registers a chat, so messages in it carry its type and
// createForumTopic works in it when it is a forum. Chats not added are
// private when their id is positive and plain groups otherwise.
func (s *Server) AddChat(c Chat) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.chats[c.ID] = c
}

func (s *Server) chat(id int64) Chat {
	if c, ok := s.chats[id]; ok {
		return c
	}
	if id > 0 {
		return Chat{ID: id, Type: Private}
	}
	return Chat{ID: id, Type: Group, Title: "group"}
}

// PushUpdate queues a raw update for getUpdates. An update without an
// "update_id" gets the next one; the id used is returned. Pushing the same
// id twice queues it twice, as a server that lost an acknowledgement would.
func (s *Server) PushUpdate(update map[string]any) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	var id int64
	switch v := update["update_id"].(type) {
	case int64:
		id = v
	case int:
		id = int64(v)
	case float64:
		id = int64(v)
	default:
		s.nextUpdate++
		id = s.nextUpdate
		update["update_id"] = id
	}
	if id > s.nextUpdate {
		s.nextUpdate = id
	}
	raw, err := json.Marshal(update)
	if err != nil {
		s.tb.Errorf("telegramtest: marshal update: %v", err)
		return id
	}
	s.updates = append(s.updates, raw)
	s.updateIDs = append(s.updateIDs, id)
	s.Changed()
	return id
}

// PushMessage queues a text message from a person in a chat (thread 0 for
// none; a thread in a forum is a topic message) and returns its update id
// and message id.
func (s *Server) PushMessage(chatID int64, thread int, from User, text string) (updateID int64, messageID int) {
	s.mu.Lock()
	s.nextMsg++
	messageID = s.nextMsg
	c := s.chat(chatID)
	s.mu.Unlock()
	return s.PushUpdate(map[string]any{"message": s.message(c, thread, from, text, messageID)}), messageID
}

// PushMessageID queues a message with a given message id, for tests of a
// message delivered again under a new update id.
func (s *Server) PushMessageID(chatID int64, thread int, from User, text string, messageID int) int64 {
	s.mu.Lock()
	c := s.chat(chatID)
	s.mu.Unlock()
	return s.PushUpdate(map[string]any{"message": s.message(c, thread, from, text, messageID)})
}

func (s *Server) message(c Chat, thread int, from User, text string, id int) map[string]any {
	chat := map[string]any{"id": c.ID, "type": c.Type}
	if c.Title != "" {
		chat["title"] = c.Title
	}
	if c.IsForum {
		chat["is_forum"] = true
	}
	if c.Type == Private {
		chat["first_name"] = from.FirstName
	}
	m := map[string]any{
		"message_id": id,
		"date":       time.Now().Unix(),
		"chat":       chat,
		"from":       map[string]any{"id": from.ID, "is_bot": false, "first_name": from.FirstName, "username": from.Username},
		"text":       text,
	}
	if thread != 0 {
		m["message_thread_id"] = thread
		m["is_topic_message"] = true
	}
	if strings.HasPrefix(text, "/") {
		cmd := strings.Fields(text)[0]
		m["entities"] = []map[string]any{{"type": "bot_command", "offset": 0, "length": platform.UTF16Len(cmd)}}
	}
	return m
}

// Confirmed is the offset the client last confirmed: every update with a
// smaller id is acknowledged and will not be handed out again.
func (s *Server) Confirmed() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.confirmed
}

// Polls counts the getUpdates calls the server has taken up; the newest
// is the one a later call ends with 409 Conflict.
func (s *Server) Polls() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.polls
}

// Pending is the number of queued updates not yet confirmed.
func (s *Server) Pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.updates)
}

// WaitConfirmed blocks until the client has confirmed every update below
// offset, or ctx ends.
func (s *Server) WaitConfirmed(ctx context.Context, offset int64) error {
	return s.wait(ctx, func() bool { return s.confirmed >= offset })
}

// Sent returns the messages the bot posted or edited, in order.
func (s *Server) Sent() []SentMessage {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]SentMessage(nil), s.sent...)
}

// ForgetSent drops the record of the messages the bot posted, for
// benchmarks that measure the memory of the bot, once they read it all:
// edits of those messages fail afterwards, and counts start again.
func (s *Server) ForgetSent() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sent = nil
}

// WaitSent blocks until at least n messages were sent (or edited), then
// returns them all; it fails with ctx's error otherwise.
func (s *Server) WaitSent(ctx context.Context, n int) ([]SentMessage, error) {
	if err := s.wait(ctx, func() bool { return len(s.sent) >= n }); err != nil {
		return s.Sent(), fmt.Errorf("waiting for %d sent messages (have %d): %w", n, len(s.Sent()), err)
	}
	return s.Sent(), nil
}

// WaitSentAfter blocks until more than n messages were sent (or edited),
// then returns those after the first n: a reader that follows a long run
// of sends takes each once.
func (s *Server) WaitSentAfter(ctx context.Context, n int) ([]SentMessage, error) {
	if err := s.wait(ctx, func() bool { return len(s.sent) > n }); err != nil {
		return nil, fmt.Errorf("waiting for more than %d sent messages: %w", n, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]SentMessage(nil), s.sent[n:]...), nil
}

// Shown returns the messages the bot posted as a person sees them now:
// one per message, in the order posted, each with its latest edit applied
// (and the topic it was posted in).
func (s *Server) Shown() []SentMessage {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []SentMessage
	at := map[string]int{} // chat:message id → index in out
	for _, m := range s.sent {
		k := m.ChatID + ":" + strconv.Itoa(m.MessageID)
		if i, ok := at[k]; ok && !strings.EqualFold(m.Method, "sendMessage") {
			thread := out[i].ThreadID
			out[i] = m
			out[i].ThreadID = thread
			continue
		}
		at[k] = len(out)
		out = append(out, m)
	}
	return out
}

// Calls returns every request received, in order, failures included (a
// call cut unanswered while the service was down has Status 0).
func (s *Server) Calls() []Call {
	var out []Call
	for _, c := range s.Server.Calls() {
		out = append(out, Call{Method: c.Method, Params: c.Params, Status: c.Status, Start: c.Start, End: c.End, Note: c.Note})
	}
	return out
}

// WriteLog writes the request log, a line per call in the order answered:
// when it came and how long it took, the method and its telling
// parameters (getUpdates' offset and timeout; a send's chat, topic and
// text), the status and what it returned — for a failure report.
func (s *Server) WriteLog(w io.Writer) error {
	for _, c := range s.Calls() {
		var what string
		switch strings.ToLower(c.Method) {
		case "getupdates":
			what = fmt.Sprintf("offset=%s timeout=%s", c.Params["offset"], c.Params["timeout"])
		case "sendmessage", "editmessagetext", "createforumtopic", "sendchataction", "sendphoto", "senddocument":
			text := c.Params["text"]
			if text == "" {
				text = c.Params["caption"]
			}
			if text == "" {
				text = c.Params["name"]
			}
			if r := []rune(text); len(r) > 60 {
				text = string(r[:60]) + "…"
			}
			what = fmt.Sprintf("chat=%s thread=%s message=%s %q", c.Params["chat_id"], c.Params["message_thread_id"], c.Params["message_id"], text)
		}
		status := strconv.Itoa(c.Status)
		if c.Status == 0 {
			status = "unanswered (client gone)"
		}
		if _, err := fmt.Fprintf(w, "%s +%-6s %s %s → %s %s\n", c.Start.Format("15:04:05.000"), c.End.Sub(c.Start).Round(time.Millisecond), c.Method, what, status, c.Note); err != nil {
			return err
		}
	}
	return nil
}

// Topics returns the forum topics created, in order.
func (s *Server) Topics() []Topic {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Topic(nil), s.topics...)
}

// Commands returns the "commands" parameter of each setMyCommands call.
func (s *Server) Commands() []json.RawMessage {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]json.RawMessage(nil), s.commands...)
}

// FailNext makes the next call of method fail with status (429 answers
// carry parameters.retry_after = retryAfter seconds). Calls queue: three
// FailNext calls fail the next three requests.
func (s *Server) FailNext(method string, status, retryAfter int) {
	s.Server.FailNext(method, status, time.Duration(retryAfter)*time.Second)
}

// ErrorPage makes methods answer status with an HTML error page instead
// of the Bot API's JSON, as a web server or proxy in front of a Bot API
// server without those methods does (a 404, 405 or 501 page).
func (s *Server) ErrorPage(status int, methods ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pages == nil {
		s.pages = map[string]int{}
	}
	for _, m := range methods {
		s.pages[strings.ToLower(m)] = status
	}
}

// Forbid makes every sendMessage and editMessageText whose text contains
// sub answer 403, as Telegram does for a chat that blocked the bot: a
// refusal no retry changes, whichever call meets it first.
func (s *Server) Forbid(sub string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.forbidden = append(s.forbidden, sub)
}

// RejectEntities makes the next n sendMessage/editMessageText calls with a
// parse_mode fail with 400 "can't parse entities", whatever their text.
// (Malformed HTML is always rejected so.)
func (s *Server) RejectEntities(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rejectHTML += n
}

// wait blocks until cond (checked under s.mu) holds or ctx ends.
func (s *Server) wait(ctx context.Context, cond func() bool) error {
	return s.Wait(ctx, func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return cond()
	})
}

// serve routes /bot<token>/<method>; the kit has answered failures asked
// for, unsupported methods and a service down before it is called.
func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if file, ok := strings.CutPrefix(r.URL.Path, "/file/bot"); ok {
		s.download(w, r, file)
		return
	}
	rest, ok := strings.CutPrefix(r.URL.Path, "/bot")
	if !ok {
		http.NotFound(w, r)
		return
	}
	token, method, ok := strings.Cut(rest, "/")
	if !ok || token != s.token {
		s.reply(w, r, "", nil, 401, "Unauthorized", 0, nil)
		return
	}
	params, err := fakekit.Params(r)
	if err != nil {
		s.reply(w, r, method, params, 400, "Bad Request: "+err.Error(), 0, nil)
		return
	}
	key := strings.ToLower(method)
	s.mu.Lock()
	page := s.pages[key]
	s.mu.Unlock()
	if page != 0 {
		text := strconv.Itoa(page) + " " + http.StatusText(page)
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(page)
		_, _ = io.WriteString(w, "<html><head><title>"+text+"</title></head><body><center><h1>"+text+"</h1></center><hr><center>nginx</center></body></html>\n")
		return
	}

	switch key {
	case "getme":
		s.reply(w, r, method, params, 200, "", 0, map[string]any{
			"id": s.botID, "is_bot": true, "first_name": "baton", "username": s.botTag,
			"can_join_groups": true, "has_topics_enabled": true,
		})
	case "getupdates":
		s.getUpdates(w, r, params)
	case "sendmessage", "editmessagetext":
		s.sendMessage(w, r, method, params)
	case "sendchataction":
		if params["chat_id"] == "" || params["action"] == "" {
			s.reply(w, r, method, params, 400, "Bad Request: chat_id and action are required", 0, nil)
			return
		}
		s.reply(w, r, method, params, 200, "", 0, true)
	case "setmycommands":
		var cmds []map[string]string
		if err := json.Unmarshal([]byte(params["commands"]), &cmds); err != nil {
			s.reply(w, r, method, params, 400, "Bad Request: can't parse commands JSON", 0, nil)
			return
		}
		s.mu.Lock()
		s.commands = append(s.commands, json.RawMessage(params["commands"]))
		s.mu.Unlock()
		s.reply(w, r, method, params, 200, "", 0, true)
	case "createforumtopic":
		s.createForumTopic(w, r, params)
	case "getfile":
		s.getFile(w, r, params)
	case "sendphoto", "senddocument", "sendvoice":
		s.sendFile(w, r, method, params)
	case "deletewebhook", "sendmessagedraft":
		s.reply(w, r, method, params, 200, "", 0, true)
	default:
		s.reply(w, r, method, params, 404, "Not Found", 0, nil)
	}
}

func (s *Server) getUpdates(w http.ResponseWriter, r *http.Request, p map[string]string) {
	offset, _ := strconv.ParseInt(p["offset"], 10, 64)
	timeout, _ := strconv.Atoi(p["timeout"])
	limit, _ := strconv.Atoi(p["limit"])
	if limit <= 0 || limit > 100 {
		limit = 100
	}
	deadline := time.Now().Add(time.Duration(timeout) * time.Second)
	// As Telegram does, a long poll still waiting when another getUpdates
	// arrives for the bot (a second program with the same token) ends
	// with 409 Conflict.
	s.mu.Lock()
	s.polls++
	poll := s.polls
	s.Changed()
	s.mu.Unlock()
	for {
		wake := s.Changes() // before looking, so a change is not missed
		s.mu.Lock()
		if s.polls != poll {
			s.mu.Unlock()
			s.reply(w, r, "getUpdates", p, 409, "Conflict: terminated by other getUpdates request; make sure that only one bot instance is running", 0, nil)
			return
		}
		if offset > 0 {
			// An offset confirms every update below it, for good.
			keptU, keptID := s.updates[:0:0], s.updateIDs[:0:0]
			for i, id := range s.updateIDs {
				if id >= offset {
					keptU, keptID = append(keptU, s.updates[i]), append(keptID, id)
				}
			}
			s.updates, s.updateIDs = keptU, keptID
			if offset > s.confirmed {
				s.confirmed = offset
				s.Changed()
			}
		}
		idx := make([]int, len(s.updateIDs))
		for i := range idx {
			idx[i] = i
		}
		sort.SliceStable(idx, func(a, b int) bool { return s.updateIDs[idx[a]] < s.updateIDs[idx[b]] })
		var out []json.RawMessage
		for _, i := range idx {
			if len(out) == limit {
				break
			}
			out = append(out, s.updates[i])
		}
		returned := idRange(idx, s.updateIDs, len(out))
		s.mu.Unlock()
		if len(out) > 0 || !time.Now().Before(deadline) {
			if out == nil {
				out = []json.RawMessage{}
			}
			fakekit.Annotate(r, "updates "+returned)
			s.reply(w, r, "getUpdates", p, 200, "", 0, out)
			return
		}
		t := time.NewTimer(time.Until(deadline))
		select {
		case <-r.Context().Done():
			t.Stop()
			return
		case <-wake:
			t.Stop()
		case <-t.C:
		}
	}
}

// idRange describes the first n update ids of ids in the order idx
// gives: "none", "1001", or "1001…1004 (4)".
func idRange(idx []int, ids []int64, n int) string {
	switch n {
	case 0:
		return "none"
	case 1:
		return strconv.FormatInt(ids[idx[0]], 10)
	}
	return fmt.Sprintf("%d…%d (%d)", ids[idx[0]], ids[idx[n-1]], n)
}

func (s *Server) sendMessage(w http.ResponseWriter, r *http.Request, method string, p map[string]string) {
	chatID, err := strconv.ParseInt(p["chat_id"], 10, 64)
	if err != nil {
		s.reply(w, r, method, p, 400, "Bad Request: chat not found", 0, nil)
		return
	}
	text := p["text"]
	plain := text
	s.mu.Lock()
	for _, f := range s.forbidden {
		if strings.Contains(text, f) {
			s.mu.Unlock()
			s.reply(w, r, method, p, 403, "Forbidden: bot was blocked by the user", 0, nil)
			return
		}
	}
	s.mu.Unlock()
	if p["parse_mode"] != "" {
		s.mu.Lock()
		reject := s.rejectHTML > 0
		if reject {
			s.rejectHTML--
		}
		s.mu.Unlock()
		if !strings.EqualFold(p["parse_mode"], "HTML") {
			reject = true // the fake only speaks HTML
		}
		var perr error
		if !reject {
			plain, perr = CheckHTML(text)
		}
		if reject || perr != nil {
			why := "unsupported start tag"
			if perr != nil {
				why = perr.Error()
			}
			s.reply(w, r, method, p, 400, "Bad Request: can't parse entities: "+why, 0, nil)
			return
		}
	}
	if strings.TrimSpace(plain) == "" {
		s.reply(w, r, method, p, 400, "Bad Request: message text is empty", 0, nil)
		return
	}
	if platform.UTF16Len(plain) > 4096 {
		s.reply(w, r, method, p, 400, "Bad Request: message is too long", 0, nil)
		return
	}
	thread, _ := strconv.Atoi(p["message_thread_id"])
	s.mu.Lock()
	c := s.chat(chatID)
	if thread != 0 && !s.topicExists(p["chat_id"], thread) {
		s.mu.Unlock()
		s.reply(w, r, method, p, 400, "Bad Request: message thread not found", 0, nil)
		return
	}
	var id int
	if method == "editMessageText" || strings.EqualFold(method, "editmessagetext") {
		id, _ = strconv.Atoi(p["message_id"])
	} else {
		s.nextMsg++
		id = s.nextMsg
	}
	s.sent = append(s.sent, SentMessage{
		Method: method, ChatID: p["chat_id"], ThreadID: thread, MessageID: id,
		Text: text, ParseMode: p["parse_mode"], Plain: plain,
	})
	s.Changed()
	s.mu.Unlock()
	msg := map[string]any{
		"message_id": id, "date": time.Now().Unix(), "text": plain,
		"chat": map[string]any{"id": c.ID, "type": c.Type},
		"from": map[string]any{"id": s.botID, "is_bot": true, "first_name": "baton", "username": s.botTag},
	}
	if thread != 0 {
		msg["message_thread_id"] = thread
		msg["is_topic_message"] = true
	}
	fakekit.Annotate(r, "message "+strconv.Itoa(id))
	s.reply(w, r, method, p, 200, "", 0, msg)
}

// topicExists reports whether thread is a topic of chat the fake made, or
// any thread in a chat the test pushed messages for (tests may push topic
// messages without creating the topic first). s.mu must be held.
func (s *Server) topicExists(chat string, thread int) bool {
	for _, t := range s.topics {
		if t.ChatID == chat && t.ThreadID == thread {
			return true
		}
	}
	id, _ := strconv.ParseInt(chat, 10, 64)
	return s.chat(id).IsForum
}

func (s *Server) createForumTopic(w http.ResponseWriter, r *http.Request, p map[string]string) {
	chatID, err := strconv.ParseInt(p["chat_id"], 10, 64)
	if err != nil {
		s.reply(w, r, "createForumTopic", p, 400, "Bad Request: chat not found", 0, nil)
		return
	}
	name := p["name"]
	if name == "" || platform.UTF16Len(name) > 128 {
		s.reply(w, r, "createForumTopic", p, 400, "Bad Request: invalid topic name", 0, nil)
		return
	}
	s.mu.Lock()
	c := s.chat(chatID)
	if !c.IsForum {
		s.mu.Unlock()
		s.reply(w, r, "createForumTopic", p, 400, "Bad Request: the chat is not a forum", 0, nil)
		return
	}
	if c.NoTopicRights {
		s.mu.Unlock()
		s.reply(w, r, "createForumTopic", p, 400, "Bad Request: not enough rights to create a topic", 0, nil)
		return
	}
	s.nextThread++
	t := Topic{ChatID: p["chat_id"], ThreadID: s.nextThread, Name: name}
	s.topics = append(s.topics, t)
	s.Changed()
	s.mu.Unlock()
	s.reply(w, r, "createForumTopic", p, 200, "", 0, map[string]any{
		"message_thread_id": t.ThreadID, "name": name, "icon_color": 7322096,
	})
}

// reply writes a Bot API answer (the kit records the call).
func (s *Server) reply(w http.ResponseWriter, _ *http.Request, _ string, _ map[string]string, status int, desc string, retryAfter int, result any) {
	writeAnswer(w, status, desc, retryAfter, result)
}

// writeAnswer writes a Bot API answer: the result, or the error with its
// code, description and retry_after.
func writeAnswer(w http.ResponseWriter, status int, desc string, retryAfter int, result any) {
	body := map[string]any{"ok": status == 200}
	if status == 200 {
		body["result"] = result
	} else {
		body["error_code"] = status
		body["description"] = desc
		if retryAfter > 0 {
			body["parameters"] = map[string]any{"retry_after": retryAfter}
		}
	}
	fakekit.WriteJSON(w, status, body)
}

// The tags Telegram's HTML parse mode accepts.
var (
	allowedTags = map[string]bool{
		"b": true, "strong": true, "i": true, "em": true, "u": true, "ins": true,
		"s": true, "strike": true, "del": true, "span": true, "tg-spoiler": true,
		"a": true, "code": true, "pre": true, "blockquote": true, "tg-emoji": true,
	}
	tagRE = regexp.MustCompile(`^<(/?)([a-zA-Z][a-zA-Z0-9-]*)((?:\s+[a-zA-Z-]+\s*=\s*"[^"]*")*)\s*>`)
)

// checkHTML validates text as Telegram's HTML parse mode would — known
// tags only, properly nested, only &lt; &gt; &amp; &quot; and numeric
// entities — and returns what a person sees.
func CheckHTML(text string) (string, error) {
	var plain strings.Builder
	var stack []string
	for i := 0; i < len(text); {
		switch text[i] {
		case '<':
			m := tagRE.FindStringSubmatch(text[i:])
			if m == nil {
				return "", fmt.Errorf("unexpected < at byte offset %d", i)
			}
			name := strings.ToLower(m[2])
			if !allowedTags[name] {
				return "", fmt.Errorf("unsupported start tag %q at byte offset %d", name, i)
			}
			if m[1] == "/" {
				if len(stack) == 0 || stack[len(stack)-1] != name {
					return "", fmt.Errorf("unexpected end tag at byte offset %d", i)
				}
				stack = stack[:len(stack)-1]
			} else {
				stack = append(stack, name)
			}
			i += len(m[0])
		case '&':
			end := strings.IndexByte(text[i:], ';')
			if end < 0 {
				return "", fmt.Errorf("unterminated entity at byte offset %d", i)
			}
			ent := text[i : i+end+1]
			switch {
			case ent == "&lt;", ent == "&gt;", ent == "&amp;", ent == "&quot;":
			case strings.HasPrefix(ent, "&#"):
			default:
				return "", fmt.Errorf("unsupported entity %q at byte offset %d", ent, i)
			}
			plain.WriteString(html.UnescapeString(ent))
			i += end + 1
		default:
			_, w := utf8.DecodeRuneInString(text[i:])
			plain.WriteString(text[i : i+w])
			i += w
		}
	}
	if len(stack) > 0 {
		return "", fmt.Errorf("unclosed start tag %q", stack[len(stack)-1])
	}
	return plain.String(), nil
}
