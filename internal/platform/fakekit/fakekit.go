// Package fakekit is what every fake chat-service server in baton's tests
// is built on (telegramtest, discordtest, slacktest, signaltest,
// imessagetest and matrixtest's proxy): real HTTP on 127.0.0.1, every call recorded, waiting for
// a state without sleeps, and the failures a real service shows on demand
// — an error status for the next calls of a method, methods the server
// does not have, and the whole service down behind its proxy.
//
// A fake supplies the service's own parts: an http.Handler for what it
// answers when healthy, how to name a request's method, and how the
// service writes an error. The kit stands in front of the handler:
//
//	kit := fakekit.New(tb, fakekit.Config{Method: methodOf, Failure: writeError}, handler)
//
// and the handler reads the parsed parameters with Params and calls
// Changed whenever its own state changes, so Wait and long polls wake. A
// fake embeds the *Server, so the kit's methods are its own; it overrides
// one only where its service adds to it (dropping its websockets on Down).
// A fake whose service publishes a description of its API also gives
// Config.Spec and Config.Refuse (see package apispec): requests the
// description refuses are answered as the service does and fail the test.
package fakekit

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Call is one request the server received, answered or not.
type Call struct {
	Method string            // as Config.Method named it
	Path   string            // the URL path
	Params map[string]string // see ParseParams
	Status int               // HTTP status answered; 0 when the connection was closed unanswered
	Start  time.Time         // when the request arrived
	End    time.Time         // when it was answered (or given up)
	Note   string            // what the fake's handler said of it (Annotate), for request logs
}

// Failure is an error answer the kit makes a fake give.
type Failure struct {
	Method     string
	Status     int
	RetryAfter time.Duration // for a 429: the wait the service asks for
	// Unsupported is set when the method is one the server does not have
	// (see Server.Unsupported); Status is then 404.
	Unsupported bool
}

// DownMode is how the service looks while it is down.
type DownMode int

// The ways a service is down.
const (
	// BadGateway answers every request 502 with an HTML page, as a proxy
	// in front of a dead service does.
	BadGateway DownMode = iota
	// Hangup closes every connection without an answer.
	Hangup
)

// Config is what a fake tells the kit about its service.
type Config struct {
	// Method names a request's API method ("sendMessage", "POST
	// /channels/{id}/messages"); FailNext and Unsupported match it,
	// ignoring case. Default: the URL path.
	Method func(r *http.Request) string
	// Failure writes an error answer in the service's format. Default:
	// WriteError.
	Failure func(w http.ResponseWriter, r *http.Request, f Failure)
	// Spec checks a request against the service's published description
	// (see package apispec) before anything else answers it; nil checks
	// nothing. A Refusal it returns is answered with Refuse, recorded, and
	// fails the test when the server closes unless ExpectRefusals was
	// called: the fake refuses what the service would, and the test
	// learns that its client sent it.
	Spec func(r *http.Request, method string, params map[string]string) *Refusal
	// Refuse writes a refusal in the service's format. Default: 400 with
	// {"error": reason}.
	Refuse func(w http.ResponseWriter, r *http.Request, ref Refusal)
}

// Refusal is a request the service's published description does not
// allow: a method or route it does not have, a required field missing, a
// field of the wrong type or one it does not describe.
type Refusal struct {
	Method  string // as Config.Method named the request
	Unknown bool   // no such method or route
	Field   string // the field at fault; "" for the request as a whole
	Code    string // the service's own word for what is wrong, where it has one
	Reason  string // what is wrong, in words
}

func (r Refusal) String() string {
	if r.Field == "" {
		return r.Method + ": " + r.Reason
	}
	return r.Method + ": " + r.Field + ": " + r.Reason
}

// Server is a fake service's HTTP server. Its methods are safe for
// concurrent use.
type Server struct {
	tb      testing.TB
	cfg     Config
	handler http.Handler
	http    *httptest.Server

	mu          sync.Mutex
	wake        chan struct{} // closed and replaced on every change
	calls       []Call
	failures    map[string][]Failure
	unsupported map[string]bool
	down        bool
	downMode    DownMode
	closed      bool
	holds       map[string]chan struct{} // methods whose requests wait for release
	held        map[string]int           // requests waiting now, by method
	lose        map[string]int           // answers to cut, by method (LoseNext)
	refusals    []Refusal                // requests Config.Spec refused
	expectRefs  bool                     // ExpectRefusals: refusals are the test's point
}

// New starts a server on 127.0.0.1 (a free port) in front of h, closed
// when tb ends.
func New(tb testing.TB, cfg Config, h http.Handler) *Server {
	tb.Helper()
	if cfg.Method == nil {
		cfg.Method = func(r *http.Request) string { return r.URL.Path }
	}
	if cfg.Failure == nil {
		cfg.Failure = WriteError
	}
	if cfg.Refuse == nil {
		cfg.Refuse = func(w http.ResponseWriter, _ *http.Request, ref Refusal) {
			WriteJSON(w, http.StatusBadRequest, map[string]any{"error": ref.String()})
		}
	}
	s := &Server{
		tb: tb, cfg: cfg, handler: h,
		wake:        make(chan struct{}),
		failures:    map[string][]Failure{},
		unsupported: map[string]bool{},
		holds:       map[string]chan struct{}{},
		held:        map[string]int{},
		lose:        map[string]int{},
	}
	// Listen ourselves: tests may use loopback IPv4 only.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("fakekit: listen: %v", err)
	}
	s.http = httptest.NewUnstartedServer(http.HandlerFunc(s.serve))
	s.http.Listener.Close()
	s.http.Listener = l
	s.http.Start()
	tb.Cleanup(s.Close)
	return s
}

// URL is the server's base URL ("http://127.0.0.1:port").
func (s *Server) URL() string { return s.http.URL }

// Close stops the server: waiters wake, open connections (long polls) are
// cut. Closing twice is harmless.
func (s *Server) Close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	s.changedLocked()
	refused := s.refusals
	if s.expectRefs {
		refused = nil
	}
	s.mu.Unlock()
	s.http.CloseClientConnections()
	s.http.Close()
	if len(refused) > 0 {
		var b strings.Builder
		for _, r := range refused {
			b.WriteString("\n\t" + r.String())
		}
		s.tb.Errorf("fakekit: %d requests the service's published description refuses:%s", len(refused), b.String())
	}
}

// ExpectRefusals says the test sends requests the service's description
// refuses on purpose: they are answered as the service does and no longer
// fail the test.
func (s *Server) ExpectRefusals() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expectRefs = true
}

// Refusals returns the requests Config.Spec refused, in order.
func (s *Server) Refusals() []Refusal {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Refusal(nil), s.refusals...)
}

// Changed wakes everything waiting on the server's state; a fake calls it
// after each change to its own state.
func (s *Server) Changed() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.changedLocked()
}

func (s *Server) changedLocked() {
	close(s.wake)
	s.wake = make(chan struct{})
}

// Changes is closed at the next change. Take it before looking at the
// state, then wait on it: a change in between is not missed.
func (s *Server) Changes() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.wake
}

// Wait blocks until cond holds or ctx ends (then it returns ctx's error).
// cond is checked after every change; it does its own locking.
func (s *Server) Wait(ctx context.Context, cond func() bool) error {
	for {
		wake := s.Changes()
		if cond() {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-wake:
		}
	}
}

// Calls returns every request received, in order, failures included.
func (s *Server) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Call(nil), s.calls...)
}

// ForgetCalls drops the record of the requests received so far, for
// benchmarks that measure the memory of the client the server answers.
func (s *Server) ForgetCalls() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = nil
}

// CallCount is the number of requests received for method (any case).
func (s *Server) CallCount(method string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, c := range s.calls {
		if strings.EqualFold(c.Method, method) {
			n++
		}
	}
	return n
}

// FailNext makes the next call of method fail with status (a 429 asks for
// retryAfter). Failures queue: three FailNext calls fail the next three
// requests of the method.
func (s *Server) FailNext(method string, status int, retryAfter time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := strings.ToLower(method)
	s.failures[k] = append(s.failures[k], Failure{Method: method, Status: status, RetryAfter: retryAfter})
}

// LoseNext makes the service carry out the next call of method but never
// answer it: the connection is cut once the fake's handler is done, as when
// the network fails, or the client dies, right after the service accepted
// a message. Losses queue as FailNext's failures do. The call is recorded
// with status 0.
func (s *Server) LoseNext(method string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lose[strings.ToLower(method)]++
}

// Unsupported makes methods answer 404, as a server without them would.
func (s *Server) Unsupported(methods ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, m := range methods {
		s.unsupported[strings.ToLower(m)] = true
	}
}

// Hold makes requests of method (any case) wait, before the fake's
// handler sees them, until release is called or the client gives up (the
// request is then recorded unanswered): a slow service, for looking at
// the world while a call is in flight. Held tells how many wait.
func (s *Server) Hold(method string) (release func()) {
	k := strings.ToLower(method)
	gate := make(chan struct{})
	s.mu.Lock()
	s.holds[k] = gate
	s.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			if s.holds[k] == gate {
				delete(s.holds, k)
			}
			s.mu.Unlock()
			close(gate)
		})
	}
}

// Held is the number of requests of method waiting at a Hold now.
func (s *Server) Held(method string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.held[strings.ToLower(method)]
}

// hold waits at method's gate, if any; false if the client gave up.
func (s *Server) hold(r *http.Request, key string) bool {
	s.mu.Lock()
	gate := s.holds[key]
	if gate != nil {
		s.held[key]++
		s.changedLocked()
	}
	s.mu.Unlock()
	if gate == nil {
		return true
	}
	defer func() {
		s.mu.Lock()
		s.held[key]--
		s.changedLocked()
		s.mu.Unlock()
	}()
	select {
	case <-gate:
		return true
	case <-r.Context().Done():
		return false
	}
}

// Down takes the service down in the BadGateway mode; see DownWith.
func (s *Server) Down() { s.DownWith(BadGateway) }

// DownWith takes the service down: open connections are cut (a long poll
// in flight fails) and every request until Up fails as mode says.
func (s *Server) DownWith(mode DownMode) {
	s.mu.Lock()
	s.down, s.downMode = true, mode
	s.changedLocked()
	s.mu.Unlock()
	s.http.CloseClientConnections()
}

// Up brings the service back.
func (s *Server) Up() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.down = false
	s.changedLocked()
}

// IsDown reports whether the service is down.
func (s *Server) IsDown() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.down
}

// badGatewayPage is what a proxy in front of a dead service answers.
const badGatewayPage = `<html>
<head><title>502 Bad Gateway</title></head>
<body>
<center><h1>502 Bad Gateway</h1></center>
<hr><center>nginx</center>
</body>
</html>
`

// paramsKey carries a request's parsed parameters to the fake's handler.
type paramsKey struct{}

// noteKey carries the note a fake's handler may leave on its call.
type noteKey struct{}

// Annotate notes on r's recorded call what the fake answered in its own
// terms ("updates 1001-1004"), so a request log tells what each call got.
// A later note replaces an earlier one.
func Annotate(r *http.Request, note string) {
	if n, ok := r.Context().Value(noteKey{}).(*string); ok {
		*n = note
	}
}

type parsed struct {
	params map[string]string
	err    error
}

// Params returns the parameters the kit parsed from r (see ParseParams),
// and the error if the body could not be parsed.
func Params(r *http.Request) (map[string]string, error) {
	if p, ok := r.Context().Value(paramsKey{}).(parsed); ok {
		return p.params, p.err
	}
	return ParseParams(r)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	method := s.cfg.Method(r)
	params, perr := ParseParams(r)
	if errors.Is(perr, ErrBodyCut) {
		// The sender went away mid-request (a process killed while it
		// wrote): the service never had it whole, so nothing is refused
		// and no handler runs. Recorded, for a test that counts calls.
		s.mu.Lock()
		s.calls = append(s.calls, Call{Method: method, Path: r.URL.Path, Params: params, Status: http.StatusBadRequest, Start: start, End: time.Now(), Note: perr.Error()})
		s.changedLocked()
		s.mu.Unlock()
		return
	}

	s.mu.Lock()
	down, mode := s.down, s.downMode
	s.mu.Unlock()
	var refusal *Refusal
	if !down && s.cfg.Spec != nil {
		refusal = s.cfg.Spec(r, method, params)
	}

	s.mu.Lock()
	key := strings.ToLower(method)
	var fail *Failure
	lose := false
	switch {
	case down:
	case refusal != nil:
		refusal.Method = method
		s.refusals = append(s.refusals, *refusal)
	case s.unsupported[key]:
		fail = &Failure{Method: method, Status: http.StatusNotFound, Unsupported: true}
	case len(s.failures[key]) > 0:
		f := s.failures[key][0]
		s.failures[key] = s.failures[key][1:]
		fail = &f
	case s.lose[key] > 0:
		s.lose[key]--
		lose = true
	}
	s.mu.Unlock()

	rec := &statusWriter{ResponseWriter: w}
	var note string // written by the handler's goroutine only, read after it returned
	record := func() {
		s.mu.Lock()
		s.calls = append(s.calls, Call{Method: method, Path: r.URL.Path, Params: params, Status: rec.status, Start: start, End: time.Now(), Note: note})
		s.changedLocked()
		s.mu.Unlock()
	}
	if !down && fail == nil && refusal == nil && !s.hold(r, key) {
		record()
		return
	}
	switch {
	case down && mode == Hangup:
		// Recorded before the hang-up: the client may look at the calls as
		// soon as its request fails.
		record()
		if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
			conn.Close()
		}
		return
	case down:
		w.Header().Set("Content-Type", "text/html")
		rec.WriteHeader(http.StatusBadGateway)
		_, _ = io.WriteString(rec, badGatewayPage)
	case refusal != nil:
		note = "refused: " + refusal.String()
		s.cfg.Refuse(rec, r, *refusal)
	case fail != nil:
		s.cfg.Failure(rec, r, *fail)
	default:
		ctx := context.WithValue(r.Context(), paramsKey{}, parsed{params, perr})
		ctx = context.WithValue(ctx, noteKey{}, &note)
		if lose {
			// Done, but the answer goes nowhere; recorded before the
			// hang-up, as for a service down in Hangup mode.
			s.handler.ServeHTTP(httptest.NewRecorder(), r.WithContext(ctx))
			record()
			if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
				conn.Close()
			}
			return
		}
		s.handler.ServeHTTP(rec, r.WithContext(ctx))
	}
	record()
}

// statusWriter remembers the status answered.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController reach the connection.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// WriteJSON answers status with v as JSON.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// WriteError is the default failure answer: {"error": "<status text>"}
// with the status, and a Retry-After header (whole seconds, rounded up)
// when the failure asks for a wait.
func WriteError(w http.ResponseWriter, _ *http.Request, f Failure) {
	if f.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int((f.RetryAfter+time.Second-1)/time.Second)))
	}
	msg := http.StatusText(f.Status)
	if f.Unsupported {
		msg = "method not supported"
	}
	WriteJSON(w, f.Status, map[string]any{"error": msg})
}

// ErrBodyCut is why ParseParams failed when the request's body ended
// before its length: the sender went away mid-request.
var ErrBodyCut = errors.New("the request's body was cut off")

// ParseParams reads a request's parameters however the client sent them —
// query string, multipart/form-data, x-www-form-urlencoded or a JSON
// object — as strings: JSON strings as they are, other JSON values as
// their JSON text. The body stays readable for the handler.
func ParseParams(r *http.Request) (map[string]string, error) {
	out := map[string]string{}
	for k, v := range r.URL.Query() {
		out[k] = v[0]
	}
	if r.Body == nil || r.Body == http.NoBody {
		return out, nil
	}
	body, err := io.ReadAll(r.Body)
	r.Body.Close()
	r.Body = io.NopCloser(bytes.NewReader(body))
	if err != nil {
		return out, fmt.Errorf("read body: %w: %w", ErrBodyCut, err)
	}
	ct, ctParams, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	switch ct {
	case "multipart/form-data":
		clone := r.Clone(r.Context())
		clone.Body = io.NopCloser(bytes.NewReader(body))
		if err := clone.ParseMultipartForm(32 << 20); err != nil {
			if errors.Is(err, io.EOF) {
				// An empty multipart body: a method without parameters,
				// as some client libraries send it.
				return out, nil
			}
			return out, fmt.Errorf("multipart (boundary %q): %w", ctParams["boundary"], err)
		}
		for k, v := range clone.MultipartForm.Value {
			out[k] = v[0]
		}
		// A file part counts as its parameter being there (a spec's
		// InputFile); its bytes are read with FormFile.
		for k, v := range clone.MultipartForm.File {
			if _, ok := out[k]; !ok {
				out[k] = "file:" + v[0].Filename
			}
		}
	case "application/x-www-form-urlencoded":
		clone := r.Clone(r.Context())
		clone.Body = io.NopCloser(bytes.NewReader(body))
		if err := clone.ParseForm(); err != nil {
			return out, fmt.Errorf("form: %w", err)
		}
		for k, v := range clone.PostForm {
			out[k] = v[0]
		}
	case "application/json":
		if len(bytes.TrimSpace(body)) == 0 {
			return out, nil
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(body, &m); err != nil {
			return out, fmt.Errorf("json: %w", err)
		}
		for k, v := range m {
			var str string
			if json.Unmarshal(v, &str) == nil {
				out[k] = str
			} else {
				out[k] = string(v)
			}
		}
	}
	return out, nil
}

// File is a file part of a multipart/form-data request.
type File struct {
	Name      string // the part's filename
	MediaType string // the part's Content-Type
	Data      []byte
}

// FormFile reads the file part called field of a multipart/form-data
// request (the body stays readable); ok is false when there is none.
func FormFile(r *http.Request, field string) (f File, ok bool, err error) {
	body, err := io.ReadAll(r.Body)
	r.Body.Close()
	r.Body = io.NopCloser(bytes.NewReader(body))
	if err != nil {
		return File{}, false, fmt.Errorf("read body: %w", err)
	}
	clone := r.Clone(r.Context())
	clone.Body = io.NopCloser(bytes.NewReader(body))
	if err := clone.ParseMultipartForm(32 << 20); err != nil {
		return File{}, false, fmt.Errorf("multipart: %w", err)
	}
	defer clone.MultipartForm.RemoveAll()
	fhs := clone.MultipartForm.File[field]
	if len(fhs) == 0 {
		return File{}, false, nil
	}
	part, err := fhs[0].Open()
	if err != nil {
		return File{}, false, err
	}
	defer part.Close()
	data, err := io.ReadAll(part)
	if err != nil {
		return File{}, false, err
	}
	return File{Name: fhs[0].Filename, MediaType: fhs[0].Header.Get("Content-Type"), Data: data}, true, nil
}
