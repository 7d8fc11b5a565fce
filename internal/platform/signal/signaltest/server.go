// Package signaltest is a fake signal-cli daemon for tests, speaking what
// `signal-cli -a ACCOUNT daemon --http --receive-mode=on-connection`
// speaks: JSON-RPC 2.0 on POST /api/v1/rpc (send with text and
// attachments, sendTyping, getAttachment, version),
// the receive notifications as Server-Sent Events on GET /api/v1/events,
// and GET /api/v1/check. As that daemon does, it takes a message from
// Signal's servers only while an event stream is open: a message pushed
// while none is waits, and goes to the next stream; one written to a
// stream is gone from the daemon (no Last-Event-ID replay). It is built on fakekit: every call recorded, failures on
// demand (answered as signal-cli's JSON-RPC errors), unsupported methods,
// the daemon down behind its proxy, and the event stream cut.
package signaltest

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/platform/fakekit"
)

// Sent is a message the daemon was asked to send and accepted.
type Sent struct {
	Recipients []string // numbers or UUIDs; empty for a group
	GroupID    string
	Message    string
	TextStyle  []string // "start:length:STYLE"
	Timestamp  int64    // the id the fake gave it
	// Attachments are the files sent with it, as signal-cli read them
	// from their data URIs.
	Attachments []File
}

// File is an attachment: one a person sends (ContentType as their app
// claims, Size as told when it must differ from len(Data)), or one the
// daemon was asked to send.
type File struct {
	Filename    string
	ContentType string
	Data        []byte
	Size        int64
}

// Event is one event of the stream.
type Event struct {
	ID   int
	Data json.RawMessage
}

// Server is the fake daemon. Its methods are safe for concurrent use.
// The kit's are its own: URL, Wait, CallCount, FailNext by JSON-RPC
// method (answered as writeFailure says), Unsupported ("Method not
// implemented"), Down (the daemon behind its proxy: streams cut, every
// request answered 502 until Up) and Up.
type Server struct {
	*fakekit.Server
	tb      testing.TB
	account string

	mu       sync.Mutex
	events   []Event
	sent     []Sent
	typing   []map[string]any
	clock    int64 // the last timestamp handed out: every message gets a later one
	drops    chan struct{}
	streams  int // event streams open now
	opened   int // event streams ever opened
	taken    int // events[:taken] were written to a stream: gone from the daemon
	refusals map[string]int
	files    map[string][]byte // attachments the daemon downloaded, by id
}

// New starts a fake daemon for account on 127.0.0.1, closed when tb ends.
func New(tb testing.TB, account string) *Server {
	tb.Helper()
	s := &Server{tb: tb, account: account, clock: time.Now().UnixMilli(), drops: make(chan struct{}), refusals: map[string]int{}, files: map[string][]byte{}}
	s.Server = fakekit.New(tb, fakekit.Config{Method: methodOf, Failure: writeFailure}, http.HandlerFunc(s.serve))
	return s
}

// Account is the number the daemon runs as.
func (s *Server) Account() string { return s.account }

// methodOf names a request: the JSON-RPC method of a call, "events" for
// the stream, "check" for the health check.
func methodOf(r *http.Request) string {
	switch r.URL.Path {
	case "/api/v1/events":
		return "events"
	case "/api/v1/check":
		return "check"
	case "/api/v1/rpc":
		var req struct {
			Method string `json:"method"`
		}
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		_ = json.Unmarshal(body, &req)
		return req.Method
	}
	return r.URL.Path
}

// requestID reads a JSON-RPC request's id, leaving the body readable.
func requestID(r *http.Request) json.RawMessage {
	var req struct {
		ID json.RawMessage `json:"id"`
	}
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	_ = json.Unmarshal(body, &req)
	if len(req.ID) == 0 {
		return json.RawMessage("null")
	}
	return req.ID
}

// writeFailure answers a failure the kit was asked for as signal-cli
// does: a 429 is its rate-limit error (-5) with the wait in the send
// results, other 4xx a user error (-1) or invalid parameters (-32602), an
// unsupported method -32601; 5xx stay HTTP errors, as a proxy or a
// crashing daemon gives them.
func writeFailure(w http.ResponseWriter, r *http.Request, f fakekit.Failure) {
	if r.URL.Path != "/api/v1/rpc" || f.Status >= 500 {
		fakekit.WriteError(w, r, f)
		return
	}
	id := requestID(r)
	e := map[string]any{"code": -1, "message": "Failed to send message: Unregistered user", "data": nil}
	switch {
	case f.Unsupported:
		e = map[string]any{"code": -32601, "message": "Method not implemented", "data": nil}
	case f.Status == http.StatusTooManyRequests:
		secs := int((f.RetryAfter + time.Second - 1) / time.Second)
		e = map[string]any{"code": -5, "message": "Failed to send message due to rate limiting", "data": map[string]any{
			"response": map[string]any{"timestamp": 0, "results": []map[string]any{{"type": "RATE_LIMIT_FAILURE", "retryAfterSeconds": secs}}},
		}}
	case f.Status == http.StatusBadRequest:
		e = map[string]any{"code": -32602, "message": "Invalid params", "data": nil}
	}
	fakekit.WriteJSON(w, http.StatusOK, map[string]any{"jsonrpc": "2.0", "error": e, "id": id})
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/api/v1/check":
		w.WriteHeader(http.StatusOK)
	case "/api/v1/events":
		if r.Method != http.MethodGet {
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		s.stream(w, r)
	case "/api/v1/rpc":
		if r.Method != http.MethodPost {
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		s.rpc(w, r)
	default:
		http.NotFound(w, r)
	}
}

// stream sends the events no stream has taken yet, then each new event as
// it comes, until the client leaves, the server closes or DropStreams
// cuts it. What it writes is taken: no later stream sends it again.
func (s *Server) stream(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.opened++
	s.streams++
	drops := s.drops
	s.mu.Unlock()
	s.Changed()
	defer func() {
		s.mu.Lock()
		s.streams--
		s.mu.Unlock()
		s.Changed()
	}()

	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	flush := func() { _ = http.NewResponseController(w).Flush() }
	flush()
	for {
		wake := s.Changes()
		s.mu.Lock()
		pending := append([]Event(nil), s.events[s.taken:]...)
		s.taken = len(s.events)
		s.mu.Unlock()
		for _, e := range pending {
			if _, err := fmt.Fprintf(w, "id:%d\nevent:receive\ndata:%s\n\n", e.ID, e.Data); err != nil {
				return
			}
		}
		if len(pending) > 0 {
			flush()
		}
		select {
		case <-r.Context().Done():
			return
		case <-drops:
			return
		case <-wake:
			if s.IsDown() {
				return
			}
		}
	}
}

func (s *Server) rpc(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
		ID     json.RawMessage `json:"id"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		fakekit.WriteJSON(w, http.StatusOK, map[string]any{"jsonrpc": "2.0", "id": nil,
			"error": map[string]any{"code": -32700, "message": "Parse error: " + err.Error()}})
		return
	}
	answer := func(result any) {
		fakekit.WriteJSON(w, http.StatusOK, map[string]any{"jsonrpc": "2.0", "result": result, "id": req.ID})
	}
	fail := func(code int, msg string) {
		fakekit.WriteJSON(w, http.StatusOK, map[string]any{"jsonrpc": "2.0", "error": map[string]any{"code": code, "message": msg}, "id": req.ID})
	}
	var p struct {
		Recipient   json.RawMessage `json:"recipient"`
		GroupID     string          `json:"groupId"`
		Message     string          `json:"message"`
		TextStyle   json.RawMessage `json:"textStyle"`
		Attachments json.RawMessage `json:"attachments"`
		Attachment  json.RawMessage `json:"attachment"`
		ID          string          `json:"id"`
		Account     string          `json:"account"`
	}
	if len(req.Params) > 0 {
		if err := json.Unmarshal(req.Params, &p); err != nil {
			fail(-32602, "Invalid params: "+err.Error())
			return
		}
	}
	if p.Account != "" {
		// Single-account mode: an account parameter is not expected.
		fail(-32602, "Unrecognized field \"account\"")
		return
	}
	recipients := stringList(p.Recipient)
	switch req.Method {
	case "version":
		answer(map[string]any{"version": "0.13.x-fake"})
	case "send":
		if len(recipients) == 0 && p.GroupID == "" {
			fail(-32602, "No recipients given")
			return
		}
		var files []File
		for _, a := range append(stringList(p.Attachments), stringList(p.Attachment)...) {
			f, err := readAttachment(a)
			if err != nil {
				fail(-32603, "Failed to send message: "+err.Error()+" (UnexpectedErrorException)")
				return
			}
			files = append(files, f)
		}
		if p.Message == "" && len(files) == 0 {
			fail(-1, "Sending empty message is not allowed, either a message, attachment or sticker must be given.")
			return
		}
		s.mu.Lock()
		if n := s.refusals[p.Message]; n > 0 {
			s.refusals[p.Message] = n - 1
			s.mu.Unlock()
			fail(-1, "Failed to send message: Unregistered user")
			return
		}
		ts := s.tick()
		s.sent = append(s.sent, Sent{Recipients: recipients, GroupID: p.GroupID, Message: p.Message, TextStyle: stringList(p.TextStyle), Timestamp: ts, Attachments: files})
		s.mu.Unlock()
		s.Changed()
		answer(map[string]any{"timestamp": ts, "results": []map[string]any{{"type": "SUCCESS"}}})
	case "getAttachment":
		// Its id and exactly one of recipient or groupId, as the
		// command's arguments require; the bytes as one base64 string.
		if p.ID == "" {
			fail(-1, "Missing attachment id parameter")
			return
		}
		if (len(recipients) == 0) == (p.GroupID == "") {
			fail(-32602, "one of the arguments --recipient -g/--group-id is required")
			return
		}
		s.mu.Lock()
		data, ok := s.files[p.ID]
		s.mu.Unlock()
		if !ok {
			fail(-1, "Could not find attachment with ID: "+p.ID)
			return
		}
		answer(map[string]any{"data": base64.StdEncoding.EncodeToString(data)})
	case "sendTyping":
		var params map[string]any
		_ = json.Unmarshal(req.Params, &params)
		s.mu.Lock()
		s.typing = append(s.typing, params)
		s.mu.Unlock()
		s.Changed()
		answer(map[string]any{})
	default:
		fail(-32601, "Method not implemented")
	}
}

// dataURI is signal-cli's reading of a data URI (RFC 2397, with
// parameters such as a filename); anything else it takes for a file path.
var dataURI = regexp.MustCompile(`(?i)\Adata:(?P<type>.+?/.+?)?(?P<parameters>;.+?=.+?)?(?P<base64>;base64)?,(?P<data>.+)\z`)

// readAttachment reads an attachment argument as signal-cli does: a data
// URI, whose filename parameter is URL-decoded, or else a file path.
func readAttachment(arg string) (File, error) {
	m := dataURI.FindStringSubmatch(arg)
	if m == nil {
		data, err := os.ReadFile(arg)
		if err != nil {
			return File{}, fmt.Errorf("%s (NoSuchFileException)", arg)
		}
		return File{Filename: filepath.Base(arg), ContentType: "application/octet-stream", Data: data}, nil
	}
	get := func(name string) string { return m[dataURI.SubexpIndex(name)] }
	f := File{ContentType: get("type")}
	if f.ContentType == "" {
		f.ContentType = "text/plain"
	}
	// Its parameter pattern (\G;(?<key>.+)=(?<value>.+), greedy) takes
	// the parameters as one: the key runs to the last "=".
	if params := get("parameters"); params != "" {
		eq := strings.LastIndex(params, "=")
		if params[1:eq] == "filename" {
			name, err := url.QueryUnescape(params[eq+1:])
			if err != nil {
				return File{}, fmt.Errorf("filename %q: %w", params[eq+1:], err)
			}
			f.Filename = name
		}
	}
	var err error
	if get("base64") != "" {
		f.Data, err = base64.StdEncoding.DecodeString(get("data"))
	} else {
		var s string
		s, err = url.QueryUnescape(get("data"))
		f.Data = []byte(s)
	}
	if err != nil {
		return File{}, fmt.Errorf("data URI: %w", err)
	}
	f.Size = int64(len(f.Data))
	return f, nil
}

// HoldSends makes every send wait until release is called: a slow
// daemon, for looking at the world while a message is in flight.
func (s *Server) HoldSends() (release func()) { return s.Hold("send") }

// Held is how many sends wait now.
func (s *Server) Held() int { return s.Server.Held("send") }

// stringList reads a parameter given as one string or a list.
func stringList(raw json.RawMessage) []string {
	if len(raw) == 0 {
		return nil
	}
	var one string
	if json.Unmarshal(raw, &one) == nil {
		return []string{one}
	}
	var many []string
	_ = json.Unmarshal(raw, &many)
	return many
}

// tick hands out a fresh timestamp; s.mu is held.
func (s *Server) tick() int64 {
	s.clock = max(s.clock+1, time.Now().UnixMilli())
	return s.clock
}

// Push queues a raw receive notification (its "params") and returns its
// event id.
func (s *Server) Push(params map[string]any) int {
	data, err := json.Marshal(params)
	if err != nil {
		s.tb.Errorf("signaltest: marshal event: %v", err)
		return 0
	}
	s.mu.Lock()
	id := len(s.events) + 1
	s.events = append(s.events, Event{ID: id, Data: data})
	s.mu.Unlock()
	s.Changed()
	return id
}

// PushMessage queues a text message from a person (a number) to the
// account, in a group when groupID is set, and returns the message id the
// adapter gives it ("<sender>:<timestamp>").
func (s *Server) PushMessage(from, name, groupID, text string) string {
	s.mu.Lock()
	ts := s.tick()
	s.mu.Unlock()
	dm := map[string]any{"timestamp": ts, "message": text, "expiresInSeconds": 0, "viewOnce": false}
	if groupID != "" {
		dm["groupInfo"] = map[string]any{"groupId": groupID, "type": "DELIVER"}
	}
	s.Push(map[string]any{"account": s.account, "envelope": map[string]any{
		"source": from, "sourceNumber": from, "sourceUuid": uuidOf(from), "sourceName": name, "sourceDevice": 1,
		"timestamp": ts, "dataMessage": dm,
	}})
	return from + ":" + strconv.FormatInt(ts, 10)
}

// PushFiles queues a message from a person with files (and text, ""
// for none), as the daemon tells it once it has downloaded them: each
// file under a fresh id in the message's attachments, its bytes kept for
// getAttachment. It returns the message id the adapter gives it.
func (s *Server) PushFiles(from, name, groupID, text string, files ...File) string {
	s.mu.Lock()
	ts := s.tick()
	list := s.keep(ts, files)
	s.mu.Unlock()
	dm := map[string]any{"timestamp": ts, "message": nil, "expiresInSeconds": 0, "viewOnce": false, "attachments": list}
	if text != "" {
		dm["message"] = text
	}
	if groupID != "" {
		dm["groupInfo"] = map[string]any{"groupId": groupID, "type": "DELIVER"}
	}
	s.Push(map[string]any{"account": s.account, "envelope": map[string]any{
		"source": from, "sourceNumber": from, "sourceUuid": uuidOf(from), "sourceName": name, "sourceDevice": 1,
		"timestamp": ts, "dataMessage": dm,
	}})
	return from + ":" + strconv.FormatInt(ts, 10)
}

// PushSentFiles queues files (and text, "" for none) the account's own
// phone sent to destination, as PushSent does text.
func (s *Server) PushSentFiles(destination, text string, files ...File) string {
	s.mu.Lock()
	ts := s.tick()
	list := s.keep(ts, files)
	s.mu.Unlock()
	sent := map[string]any{"destination": destination, "destinationNumber": destination, "destinationUuid": uuidOf(destination),
		"timestamp": ts, "message": nil, "expiresInSeconds": 0, "viewOnce": false, "attachments": list}
	if text != "" {
		sent["message"] = text
	}
	s.Push(map[string]any{"account": s.account, "envelope": map[string]any{
		"source": s.account, "sourceNumber": s.account, "sourceUuid": uuidOf(s.account), "sourceName": "Me", "sourceDevice": 1,
		"timestamp": ts, "syncMessage": map[string]any{"sentMessage": sent},
	}})
	return s.account + ":" + strconv.FormatInt(ts, 10)
}

// keep stores files as downloaded attachments of the message at ts and
// returns how the daemon lists them; s.mu is held.
func (s *Server) keep(ts int64, files []File) []map[string]any {
	var list []map[string]any
	for i, f := range files {
		id := fmt.Sprintf("att%d%d", ts, i)
		s.files[id] = f.Data
		size := f.Size
		if size == 0 {
			size = int64(len(f.Data))
		}
		a := map[string]any{"contentType": f.ContentType, "id": id, "size": size, "uploadTimestamp": ts}
		if f.Filename != "" {
			a["filename"] = f.Filename
		}
		list = append(list, a)
	}
	return list
}

// Downloads is how many getAttachment calls the daemon has had.
func (s *Server) Downloads() int { return s.CallCount("getAttachment") }

// PushSent queues what the account's own phone sent to destination (a
// sync message); destination = the account is Note to Self.
func (s *Server) PushSent(destination, text string) string {
	s.mu.Lock()
	ts := s.tick()
	s.mu.Unlock()
	s.Push(map[string]any{"account": s.account, "envelope": map[string]any{
		"source": s.account, "sourceNumber": s.account, "sourceUuid": uuidOf(s.account), "sourceName": "Me", "sourceDevice": 1,
		"timestamp": ts, "syncMessage": map[string]any{"sentMessage": map[string]any{
			"destination": destination, "destinationNumber": destination, "destinationUuid": uuidOf(destination),
			"timestamp": ts, "message": text, "expiresInSeconds": 0, "viewOnce": false,
		}},
	}})
	return s.account + ":" + strconv.FormatInt(ts, 10)
}

func uuidOf(number string) string {
	return fmt.Sprintf("00000000-0000-4000-8000-%012s", number[len(number)-min(len(number), 12):])
}

// Sent returns what the daemon sent, in order.
func (s *Server) Sent() []Sent {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Sent(nil), s.sent...)
}

// Typing returns the parameters of every sendTyping call.
func (s *Server) Typing() []map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]map[string]any(nil), s.typing...)
}

// Refuse makes the next n sends of exactly text fail with signal-cli's
// user error (an unregistered recipient).
func (s *Server) Refuse(text string, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refusals[text] += n
}

// Streams is how many event streams are open now.
func (s *Server) Streams() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.streams
}

// Opened is how many event streams were ever opened.
func (s *Server) Opened() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.opened
}

// DropStreams cuts every open event stream, as a network blip does; the
// daemon stays up.
func (s *Server) DropStreams() {
	s.mu.Lock()
	close(s.drops)
	s.drops = make(chan struct{})
	s.mu.Unlock()
	s.Changed()
}
