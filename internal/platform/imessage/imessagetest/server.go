// Package imessagetest is a fake BlueBubbles server for tests: its REST
// API (GET /api/v1/ping, POST /api/v1/message/text, POST
// /api/v1/message/query, POST /api/v1/chat/{guid}/typing, GET
// /api/v1/attachment/{guid}/download, POST /api/v1/message/attachment
// as a multipart form), every request
// checked for ?password=, answers in BlueBubbles' {status, message, data,
// error} envelope, and new messages POSTed as "new-message" webhooks to
// the address the test gives it, as the real server does — once, not
// retried. It is built on fakekit: calls recorded, failures on demand,
// unsupported methods, the server down behind its proxy.
package imessagetest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/platform/fakekit"
)

// Message is a message the fake holds, as BlueBubbles serializes it.
type Message struct {
	GUID                  string       `json:"guid"`
	Text                  string       `json:"text"`
	IsFromMe              bool         `json:"isFromMe"`
	DateCreated           int64        `json:"dateCreated"`
	AssociatedMessageGUID *string      `json:"associatedMessageGuid"`
	AssociatedMessageType *string      `json:"associatedMessageType"`
	IsAudioMessage        bool         `json:"isAudioMessage"`
	Attachments           []Attachment `json:"attachments"`
	Handle                *Handle      `json:"handle"`
	Chats                 []Chat       `json:"chats"`
}

// Handle is a message's sender.
type Handle struct {
	Address string `json:"address"`
	Service string `json:"service"`
}

// Chat is a chat a message belongs to.
type Chat struct {
	GUID           string `json:"guid"`
	ChatIdentifier string `json:"chatIdentifier"`
	Style          int    `json:"style"` // 45 one-to-one, 43 group
}

// Attachment is a file sent with a message.
type Attachment struct {
	GUID           string `json:"guid"`
	TransferName   string `json:"transferName"`
	MimeType       string `json:"mimeType"`
	TotalBytes     int64  `json:"totalBytes"`
	HideAttachment bool   `json:"hideAttachment"`
	// Data is what the download route serves.
	Data []byte `json:"-"`
}

// Hook is one webhook POST the fake made.
type Hook struct {
	Type   string
	GUID   string
	Status int   // the adapter's answer; 0 if the POST failed
	Err    error // why the POST failed
}

// Server is the fake BlueBubbles server. Its methods are safe for
// concurrent use. The kit's are its own: URL, Wait, Calls, CallCount,
// FailNext by method ("message/text"), Unsupported (answered as a server
// without the methods does), Down (behind its proxy: 502 for every
// request, and no webhooks, until Up) and Up.
type Server struct {
	*fakekit.Server
	tb       testing.TB
	password string
	client   *http.Client
	posts    chan post // webhooks to POST, in order, by one goroutine
	stopped  chan struct{}

	mu         sync.Mutex
	webhook    string
	messages   []Message
	hooks      []Hook
	typing     []string
	privateAPI bool
	clock      int64
	next       int
}

// New starts a fake server with password on 127.0.0.1, closed when tb
// ends.
func New(tb testing.TB, password string) *Server {
	tb.Helper()
	s := &Server{tb: tb, password: password, clock: time.Now().UnixMilli(), client: &http.Client{Timeout: 30 * time.Second}}
	s.Server = fakekit.New(tb, fakekit.Config{Method: methodOf, Failure: writeFailure}, http.HandlerFunc(s.serve))
	s.posts, s.stopped = make(chan post, 1024), make(chan struct{})
	go s.poster()
	tb.Cleanup(func() {
		close(s.posts)
		<-s.stopped
	})
	return s
}

type post struct {
	url string
	m   Message
}

// poster POSTs the webhooks in order; the server goes on meanwhile, as
// BlueBubbles does.
func (s *Server) poster() {
	defer close(s.stopped)
	for p := range s.posts {
		s.post(p.url, p.m)
	}
}

// SetWebhook sets where new messages are POSTed (BlueBubbles' Settings →
// API & Webhooks).
func (s *Server) SetWebhook(url string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.webhook = url
}

// EnablePrivateAPI turns the Private API on: typing works.
func (s *Server) EnablePrivateAPI() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.privateAPI = true
}

// methodOf names a request by its path under /api/v1, "chat/typing" for
// any chat's typing, "attachment/download" for any attachment's download.
func methodOf(r *http.Request) string {
	p := strings.TrimPrefix(r.URL.Path, "/api/v1/")
	if strings.HasPrefix(p, "chat/") && strings.HasSuffix(p, "/typing") {
		return "chat/typing"
	}
	if strings.HasPrefix(p, "attachment/") && strings.HasSuffix(p, "/download") {
		return downloadMethod
	}
	return p
}

// downloadMethod names the download route in the call log.
const downloadMethod = "attachment/download"

func envelope(status int, msg string, data any, errType string) map[string]any {
	out := map[string]any{"status": status, "message": msg}
	if data != nil {
		out["data"] = data
	}
	if errType != "" {
		out["error"] = map[string]any{"type": errType, "message": msg}
	}
	return out
}

// writeFailure answers a failure the kit was asked for as BlueBubbles
// does, with a Retry-After header on a 429.
func writeFailure(w http.ResponseWriter, _ *http.Request, f fakekit.Failure) {
	if f.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int((f.RetryAfter+time.Second-1)/time.Second)))
	}
	msg := http.StatusText(f.Status)
	if f.Unsupported {
		msg = "iMessage Private API is not enabled!"
		f.Status = http.StatusInternalServerError
		if strings.HasPrefix(f.Method, "message/") {
			msg, f.Status = "Not Found", http.StatusNotFound
		}
	}
	fakekit.WriteJSON(w, f.Status, envelope(f.Status, msg, nil, "Server Error"))
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Query().Get("password") != s.password {
		fakekit.WriteJSON(w, http.StatusUnauthorized, envelope(http.StatusUnauthorized, "Unauthorized", nil, "Authentication Error"))
		return
	}
	method := methodOf(r)
	switch {
	case method == "ping" && r.Method == http.MethodGet:
		fakekit.WriteJSON(w, http.StatusOK, envelope(http.StatusOK, "Ping received!", "pong", ""))
	case method == "message/text" && r.Method == http.MethodPost:
		s.sendText(w, r)
	case method == "message/query" && r.Method == http.MethodPost:
		s.query(w, r)
	case method == "message/attachment" && r.Method == http.MethodPost:
		s.sendAttachment(w, r)
	case method == downloadMethod && r.Method == http.MethodGet:
		s.download(w, r)
	case method == "chat/typing" && r.Method == http.MethodPost:
		s.mu.Lock()
		on := s.privateAPI
		if on {
			s.typing = append(s.typing, strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, "/api/v1/chat/"), "/typing"))
		}
		s.mu.Unlock()
		if !on {
			fakekit.WriteJSON(w, http.StatusInternalServerError, envelope(500, "iMessage Private API is not enabled!", nil, "Server Error"))
			return
		}
		s.Changed()
		fakekit.WriteJSON(w, http.StatusOK, envelope(http.StatusOK, "Success", nil, ""))
	default:
		fakekit.WriteJSON(w, http.StatusNotFound, envelope(http.StatusNotFound, "Not Found", nil, "Not Found"))
	}
}

func (s *Server) sendText(w http.ResponseWriter, r *http.Request) {
	var req struct {
		ChatGUID string `json:"chatGuid"`
		TempGUID string `json:"tempGuid"`
		Message  string `json:"message"`
		Method   string `json:"method"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.ChatGUID == "" || req.Message == "" {
		fakekit.WriteJSON(w, http.StatusBadRequest, envelope(http.StatusBadRequest, "Bad Request: chatGuid and message are required", nil, "Validation Error"))
		return
	}
	s.mu.Lock()
	if req.Method == "private-api" && !s.privateAPI {
		s.mu.Unlock()
		fakekit.WriteJSON(w, http.StatusInternalServerError, envelope(500, "iMessage Private API is not enabled!", nil, "Server Error"))
		return
	}
	m := Message{GUID: s.guid(), Text: req.Message, IsFromMe: true, DateCreated: s.tick(), Chats: []Chat{chatOf(req.ChatGUID)}}
	s.messages = append(s.messages, m)
	s.mu.Unlock()
	s.Changed()
	fakekit.WriteJSON(w, http.StatusOK, envelope(http.StatusOK, "Message sent!", m, ""))
}

func (s *Server) query(w http.ResponseWriter, r *http.Request) {
	var q struct {
		After  int64    `json:"after"`
		Sort   string   `json:"sort"`
		Limit  int      `json:"limit"`
		Offset int      `json:"offset"`
		With   []string `json:"with"`
	}
	if err := json.NewDecoder(r.Body).Decode(&q); err != nil {
		fakekit.WriteJSON(w, http.StatusBadRequest, envelope(http.StatusBadRequest, "Bad Request", nil, "Validation Error"))
		return
	}
	if q.Limit <= 0 || q.Limit > 1000 {
		q.Limit = 1000
	}
	s.mu.Lock()
	var out []Message
	// Attachments are in the answer only when asked for, as BlueBubbles does.
	withFiles := slices.Contains(q.With, "attachment") || slices.Contains(q.With, "attachments")
	for _, m := range s.messages {
		if m.DateCreated > q.After {
			if !withFiles {
				m.Attachments = nil
			}
			out = append(out, m)
		}
	}
	s.mu.Unlock()
	if q.Sort != "ASC" {
		for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
			out[i], out[j] = out[j], out[i]
		}
	}
	out = out[min(q.Offset, len(out)):]
	out = out[:min(q.Limit, len(out))]
	if out == nil {
		out = []Message{}
	}
	fakekit.WriteJSON(w, http.StatusOK, envelope(http.StatusOK, "Success", out, ""))
}

// guid and tick hand out ids and later timestamps; s.mu is held.
func (s *Server) guid() string {
	s.next++
	return fmt.Sprintf("F00D%04d-0000-4000-8000-000000000000", s.next)
}

func (s *Server) tick() int64 {
	s.clock = max(s.clock+1, time.Now().UnixMilli())
	return s.clock
}

func chatOf(guid string) Chat {
	c := Chat{GUID: guid, Style: 43}
	if i := strings.LastIndex(guid, ";"); i >= 0 {
		c.ChatIdentifier = guid[i+1:]
	}
	if strings.Contains(guid, ";-;") {
		c.Style = 45
	}
	return c
}

// DM is the chat guid of a one-to-one chat with address.
func DM(address string) string { return "iMessage;-;" + address }

// Receive stores a message a person sent in chat and POSTs its webhook;
// it returns the message's guid. The webhook is tried once, as
// BlueBubbles does.
func (s *Server) Receive(from, chat, text string) string {
	return s.ReceiveMessage(Message{Text: text, Handle: &Handle{Address: from, Service: "iMessage"}, Chats: []Chat{chatOf(chat)}})
}

// ReceiveMessage stores m (a guid and a date are given when missing) and
// queues its webhook POST (see Hooks).
func (s *Server) ReceiveMessage(m Message) string {
	s.mu.Lock()
	if m.GUID == "" {
		m.GUID = s.guid()
	}
	if m.DateCreated == 0 {
		m.DateCreated = s.tick()
	}
	s.messages = append(s.messages, m)
	hook := s.webhook
	s.mu.Unlock()
	s.Changed()
	if hook != "" && !s.IsDown() {
		s.posts <- post{hook, m}
	}
	return m.GUID
}

func (s *Server) post(url string, m Message) {
	body, _ := json.Marshal(map[string]any{"type": "new-message", "data": m})
	h := Hook{Type: "new-message", GUID: m.GUID}
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, url, bytes.NewReader(body))
	if err == nil {
		req.Header.Set("Content-Type", "application/json")
		var resp *http.Response
		if resp, err = s.client.Do(req); err == nil {
			h.Status = resp.StatusCode
			resp.Body.Close()
		}
	}
	h.Err = err
	s.mu.Lock()
	s.hooks = append(s.hooks, h)
	s.mu.Unlock()
	s.Changed()
}

// Sent returns the messages baton sent, in order.
func (s *Server) Sent() []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Message
	for _, m := range s.messages {
		if m.IsFromMe {
			out = append(out, m)
		}
	}
	return out
}

// Hooks returns every webhook POST made, in order.
func (s *Server) Hooks() []Hook {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Hook(nil), s.hooks...)
}

// Typing returns the chat guids typing was shown in.
func (s *Server) Typing() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.typing...)
}

// HoldSends makes every message/text call wait until release is called.
func (s *Server) HoldSends() (release func()) { return s.Hold("message/text") }

// Held is how many sends wait now.
func (s *Server) Held() int { return s.Server.Held("message/text") }

// ReceiveFile stores a message a person sent in chat with one file and
// an optional caption, and POSTs its webhook; it returns the message's
// guid. The file's GUID is given when missing, and its TotalBytes is
// len(Data) when 0.
func (s *Server) ReceiveFile(from, chat string, file Attachment, caption string) string {
	s.mu.Lock()
	if file.GUID == "" {
		file.GUID = "at_" + s.guid()
	}
	s.mu.Unlock()
	if file.TotalBytes == 0 {
		file.TotalBytes = int64(len(file.Data))
	}
	return s.ReceiveMessage(Message{Text: "\ufffc" + caption, Attachments: []Attachment{file},
		Handle: &Handle{Address: from, Service: "iMessage"}, Chats: []Chat{chatOf(chat)}})
}

// Downloads counts the requests for attachment bytes, answered or not.
func (s *Server) Downloads() int { return s.CallCount(downloadMethod) }

// download serves an attachment's bytes, as BlueBubbles' GET
// /api/v1/attachment/{guid}/download does.
func (s *Server) download(w http.ResponseWriter, r *http.Request) {
	guid := strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, "/api/v1/attachment/"), "/download")
	s.mu.Lock()
	var found *Attachment
	for _, m := range s.messages {
		for i := range m.Attachments {
			if m.Attachments[i].GUID == guid {
				found = &m.Attachments[i]
			}
		}
	}
	s.mu.Unlock()
	if found == nil {
		fakekit.WriteJSON(w, http.StatusNotFound, envelope(http.StatusNotFound, "Attachment does not exist!", nil, "Not Found"))
		return
	}
	media := found.MimeType
	if media == "" {
		media = "application/octet-stream"
	}
	w.Header().Set("Content-Type", media)
	w.Header().Set("Content-Length", strconv.Itoa(len(found.Data)))
	_, _ = w.Write(found.Data)
}

// sendAttachment takes POST /api/v1/message/attachment: a multipart form
// with chatGuid, tempGuid (required for AppleScript), name, method and
// the file as "attachment", checked as BlueBubbles' validator does.
func (s *Server) sendAttachment(w http.ResponseWriter, r *http.Request) {
	bad := func(msg string) {
		fakekit.WriteJSON(w, http.StatusBadRequest, envelope(http.StatusBadRequest, msg, nil, "Validation Error"))
	}
	if err := r.ParseMultipartForm(1 << 20); err != nil {
		bad("Bad Request: " + err.Error())
		return
	}
	defer r.MultipartForm.RemoveAll()
	chat, temp, name, method := r.FormValue("chatGuid"), r.FormValue("tempGuid"), r.FormValue("name"), r.FormValue("method")
	if method == "" {
		method = "apple-script"
	}
	switch {
	case chat == "" || name == "":
		bad("Bad Request: chatGuid and name are required")
		return
	case method != "apple-script" && method != "private-api":
		bad("Bad Request: method must be apple-script or private-api")
		return
	case method == "apple-script" && temp == "":
		bad("A 'tempGuid' is required when sending via AppleScript")
		return
	}
	file, hdr, err := r.FormFile("attachment")
	if err != nil || hdr.Size == 0 {
		bad("Attachment not provided or was empty!")
		return
	}
	data, err := io.ReadAll(file)
	file.Close()
	if err != nil {
		bad("Bad Request: " + err.Error())
		return
	}
	s.mu.Lock()
	if method == "private-api" && !s.privateAPI {
		s.mu.Unlock()
		fakekit.WriteJSON(w, http.StatusInternalServerError, envelope(500, "iMessage Private API is not enabled!", nil, "Server Error"))
		return
	}
	m := Message{GUID: s.guid(), Text: "\ufffc", IsFromMe: true, DateCreated: s.tick(), Chats: []Chat{chatOf(chat)},
		Attachments: []Attachment{{GUID: "at_" + s.guid(), TransferName: name, MimeType: hdr.Header.Get("Content-Type"), TotalBytes: int64(len(data)), Data: data}}}
	s.messages = append(s.messages, m)
	s.mu.Unlock()
	s.Changed()
	fakekit.WriteJSON(w, http.StatusOK, envelope(http.StatusOK, "Attachment sent!", m, ""))
}
