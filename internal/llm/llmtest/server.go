// Package llmtest is a fake model server on loopback that speaks both the
// OpenAI chat-completions and the Anthropic messages wire protocols, so
// providers and everything above them can be tested over real HTTP.
//
// Each test scripts the answers as a FIFO of steps (Push); once the queue is
// empty the server falls back to a default reply, by default an echo of the
// last user text. Every request is recorded for assertions (Requests).
package llmtest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// Server is a running fake model server.
type Server struct {
	// URL is the base URL, e.g. http://127.0.0.1:41234. It works as-is as an
	// Anthropic base URL and as an OpenAI one (both /chat/completions and
	// /v1/chat/completions are served).
	URL string

	hs *httptest.Server

	mu    sync.Mutex
	queue []Step
	reqs  []Request
	def   func(Request) Step
	aside []aside
	seq   int
	conns int // TCP connections accepted

	transcriber    func(Transcription) Step
	transcriptions []Transcription
	speeches       []Speech
}

// aside answers requests a test does not script (see Server.Aside).
type aside struct {
	match  func(Request) bool
	answer func(Request) Step
}

// TB is the part of testing.TB that Start needs.
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
	Cleanup(func())
}

// Start runs a server on 127.0.0.1 with a free port, closed when the test ends.
func Start(t TB) *Server {
	t.Helper()
	s, err := Listen("127.0.0.1:0")
	if err != nil {
		t.Fatalf("llmtest: %v", err)
	}
	t.Cleanup(s.Close)
	return s
}

// Listen runs a server on addr (e.g. "127.0.0.1:0"); the caller closes it.
func Listen(addr string) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("llmtest: listen %s: %w", addr, err)
	}
	s := &Server{def: EchoReply}
	s.hs = httptest.NewUnstartedServer(http.HandlerFunc(s.serveHTTP))
	_ = s.hs.Listener.Close() // replaced by ours, bound where asked
	s.hs.Listener = ln
	s.hs.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			s.mu.Lock()
			s.conns++
			s.mu.Unlock()
		}
	}
	s.hs.Start()
	s.URL = s.hs.URL
	return s, nil
}

// Connections is how many TCP connections the server has accepted: a
// client that keeps its connections alive opens few.
func (s *Server) Connections() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.conns
}

// Close stops the server and waits for in-flight requests.
func (s *Server) Close() { s.hs.Close() }

// Push appends steps to the script; each request takes the next one.
func (s *Server) Push(steps ...Step) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queue = append(s.queue, steps...)
}

// Pending is how many scripted steps are not yet used.
func (s *Server) Pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.queue)
}

// SetDefault sets the answer used when the script is empty; nil restores
// EchoReply. f gets the request as the server decoded it and must not
// change it.
func (s *Server) SetDefault(f func(Request) Step) {
	if f == nil {
		f = EchoReply
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.def = f
}

// Aside answers the requests match picks with answer, before and apart
// from the script: such a request takes no scripted step. It is for side
// calls (a handoff note) that tests scripting the conversation leave
// alone. The newest aside that picks a request answers it. Aside requests
// are recorded like the others.
func (s *Server) Aside(match func(Request) bool, answer func(Request) Step) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.aside = append(s.aside, aside{match: match, answer: answer})
}

// EchoReply is the default answer: "echo: <last user text>".
func EchoReply(r Request) Step { return Reply{Text: "echo: " + r.LastUserText()} }

// Requests returns copies of every request received so far, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Request, len(s.reqs))
	for i, r := range s.reqs {
		out[i] = r.clone()
	}
	return out
}

// Forget drops the record of the requests received so far, for
// benchmarks that measure the memory of what the server answers.
func (s *Server) Forget() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reqs = nil
}

// next records req and picks its step. The record keeps req's raw body,
// which Requests decodes when asked: decoding every transcript again for
// the record was most of the server's work. The default handler gets req
// itself, which it must not change; asides get copies.
func (s *Server) next(req Request) (Step, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reqs = append(s.reqs, Request{Method: req.Method, Path: req.Path, Header: req.Header, Raw: req.Raw})
	s.seq++
	for i := len(s.aside) - 1; i >= 0; i-- { // the newest first
		if a := s.aside[i]; a.match(req.clone()) {
			return a.answer(req.clone()), s.seq
		}
	}
	if len(s.queue) > 0 {
		st := s.queue[0]
		s.queue = s.queue[1:]
		return st, s.seq
	}
	return s.def(req), s.seq
}

func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	if isTranscription(r.URL.Path) {
		s.serveTranscription(w, r)
		return
	}
	if strings.HasSuffix(strings.TrimSuffix(r.URL.Path, "/"), "/audio/speech") {
		s.serveSpeech(w, r)
		return
	}
	var proto string
	switch strings.TrimSuffix(r.URL.Path, "/") {
	case RecordPath:
		s.serveRecord(w, r)
		return
	case "/v1/chat/completions", "/chat/completions":
		proto = ProtocolOpenAI
	case "/v1/messages", "/messages":
		proto = ProtocolAnthropic
	default:
		http.Error(w, `{"error":{"message":"llmtest: no such endpoint"}}`, http.StatusNotFound)
		return
	}
	if r.Method != http.MethodPost {
		http.Error(w, `{"error":{"message":"llmtest: POST only"}}`, http.StatusMethodNotAllowed)
		return
	}
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, "llmtest: read body", http.StatusBadRequest)
		return
	}
	req := Request{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Raw: raw}
	if err := json.Unmarshal(raw, &req.Body); err != nil {
		s.next(req) // still recorded: a test may want to see what was sent
		writeFail(w, proto, Fail{Status: http.StatusBadRequest, Body: `{"error":{"message":"llmtest: body is not JSON"}}`})
		return
	}
	if msg := badToolName(req); msg != "" {
		s.next(req)
		body, _ := json.Marshal(map[string]any{"error": map[string]any{"type": "invalid_request_error", "message": msg}})
		writeFail(w, proto, Fail{Status: http.StatusBadRequest, Body: string(body)})
		return
	}
	st, seq := s.next(req)
	switch st := st.(type) {
	case Fail:
		writeFail(w, proto, st)
	case Reply:
		serveReply(w, r, proto, req, st, seq, -1)
	case Disconnect:
		serveReply(w, r, proto, req, Reply{Text: st.Text}, seq, max(st.After, 0))
	default:
		writeFail(w, proto, Fail{Status: http.StatusInternalServerError, Body: fmt.Sprintf(`{"error":{"message":"llmtest: unknown step %T"}}`, st)})
	}
}

// serveReply answers with r; cut >= 0 hangs up after that many text chunks.
func serveReply(w http.ResponseWriter, hr *http.Request, proto string, req Request, r Reply, seq, cut int) {
	if r.Wait != nil {
		select {
		case <-r.Wait:
		case <-hr.Context().Done():
			return
		}
	}
	if r.Usage == (Usage{}) {
		r.Usage = Usage{Input: int64(len(req.Raw)/4 + 1), Output: int64(len(words(r.Text)) + 10*len(r.ToolCalls))}
	}
	idPrefix := "call_"
	if proto == ProtocolAnthropic {
		idPrefix = "toolu_"
	}
	r.ToolCalls = slices.Clone(r.ToolCalls) // the test may still hold the pushed slice
	for i := range r.ToolCalls {
		if r.ToolCalls[i].ID == "" {
			r.ToolCalls[i].ID = fmt.Sprintf("%s%d_%d", idPrefix, seq, i)
		}
		if r.ToolCalls[i].Args == "" {
			r.ToolCalls[i].Args = "{}"
		}
	}
	if !req.Streamed() {
		if !pause(hr.Context(), r.FirstToken) {
			return
		}
		if cut >= 0 {
			hangUp(w)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		var body any
		if proto == ProtocolAnthropic {
			body = anthropicMessage(req, r, seq)
		} else {
			body = openaiCompletion(req, r, seq)
		}
		_ = json.NewEncoder(w).Encode(body)
		return
	}
	sw := &sseWriter{w: w, ctx: hr.Context(), delay: r.Delay, first: r.FirstToken, cut: cut}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	if proto == ProtocolAnthropic {
		streamAnthropic(sw, req, r, seq)
	} else {
		streamOpenAI(sw, req, r, seq)
	}
	if sw.cutting() {
		hangUp(w)
		return
	}
	if r.HoldEnd > 0 {
		pause(hr.Context(), r.HoldEnd)
	}
}

// pause waits d; false if ctx ended first.
func pause(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

func writeFail(w http.ResponseWriter, proto string, f Fail) {
	body := f.Body
	if body == "" {
		body = defaultErrorBody(proto, f.Status)
	}
	if f.RetryAfter != "" {
		w.Header().Set("Retry-After", f.RetryAfter)
	}
	w.Header().Set("Content-Type", "application/json")
	status := f.Status
	if status == 0 {
		status = http.StatusInternalServerError
	}
	w.WriteHeader(status)
	_, _ = io.WriteString(w, body)
}

func defaultErrorBody(proto string, status int) string {
	msg := fmt.Sprintf("llmtest: scripted failure %d %s", status, http.StatusText(status))
	typ := map[int]string{401: "authentication_error", 403: "permission_error", 429: "rate_limit_error", 529: "overloaded_error"}[status]
	if typ == "" {
		typ = "invalid_request_error"
		if status >= 500 {
			typ = "api_error"
		}
	}
	var v any
	if proto == ProtocolAnthropic {
		v = map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": msg}}
	} else {
		v = map[string]any{"error": map[string]any{"message": msg, "type": typ, "code": nil}}
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// hangUp drops the connection mid-response, so the client sees a truncated
// body rather than a clean end.
func hangUp(w http.ResponseWriter) {
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic(http.ErrAbortHandler)
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	_ = conn.Close()
}

// words splits text into streamable pieces that concatenate back to it.
func words(text string) []string {
	if text == "" {
		return nil
	}
	return strings.SplitAfter(text, " ")
}

// halves splits s in two so tool arguments arrive over several deltas.
func halves(s string) []string {
	mid := len(s) / 2
	for mid > 0 && !utf8.RuneStart(s[mid]) {
		mid-- // never split a character: deltas must stay valid UTF-8
	}
	if mid == 0 {
		return []string{s}
	}
	return []string{s[:mid], s[mid:]}
}
