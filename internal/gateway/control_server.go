package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/baton-agent/baton/internal/gateway/control"
	"github.com/baton-agent/baton/internal/place"
	"github.com/baton-agent/baton/internal/platform"
	"github.com/baton-agent/baton/internal/store"
)

// ErrAlreadyRunning is returned when another gateway answers on the socket.
var ErrAlreadyRunning = errors.New("another gateway is already running")

// Control socket bounds.
const (
	DefaultControlIdle  = 30 * time.Second
	DefaultControlConns = 32
)

// controlServer answers terminals on the control socket: status, kicks,
// handoff requests and their progress. It reads the other rooms and owns
// nothing of theirs.
type controlServer struct {
	st        store.Store
	log       *slog.Logger
	places    *platforms
	out       *outbox
	worker    *handoffWorker
	idle      time.Duration
	conns     int
	pollEvery time.Duration
	claimer   string
	webURL    string
	started   time.Time // set by Run before the socket is served
}

func newControlServer(cfg Config, places *platforms, out *outbox, worker *handoffWorker) *controlServer {
	return &controlServer{st: cfg.Store, log: cfg.Log, places: places, out: out, worker: worker,
		idle: cfg.ControlIdle, conns: cfg.ControlConns, pollEvery: cfg.PollEvery, claimer: cfg.Claimer, webURL: cfg.WebURL}
}

// status reports what runs.
func (c *controlServer) status(ctx context.Context) control.Status {
	homes, err := c.places.homeChats(ctx)
	if err != nil {
		c.log.Warn("status", "err", err)
	}
	s := control.Status{PID: os.Getpid(), Started: c.started, Claimer: c.claimer, WebURL: c.webURL}
	waiting, err := c.out.waiting(ctx)
	if err != nil {
		c.log.Warn("status", "err", err)
	}
	for _, name := range c.places.names() {
		st := c.places.statusOf(name)
		if st.State == "" {
			st.State = platform.StateStarting
		}
		p := control.Platform{
			Name: name, Display: c.places.displayName(name), Live: st.State == platform.StateLive,
			State: string(st.State), Since: st.Since, NextTry: st.NextTry, Error: st.Reason,
			Home: homes[name], Waiting: waiting[name],
		}
		if l, ok := c.places.rep.leadElsewhere(ctx, name); ok && !p.Live {
			p.LedBy = l.Holder
		}
		s.Platforms = append(s.Platforms, p)
	}
	reps, err := c.places.rep.view(ctx)
	if err != nil {
		c.log.Warn("status: replicas", "err", err)
	}
	for _, r := range reps {
		s.Replicas = append(s.Replicas, control.Replica{ID: r.ID, Host: r.Host, PID: r.PID, Started: r.Started, Seen: r.Seen,
			Leads: r.Leads, Self: r.Self, Gone: time.Since(r.Seen) > c.places.rep.ttl})
	}
	return s
}

// serve listens on the control socket (mode 0600 from the moment
// it can be reached) and returns a function that stops it. A connection
// idle for ControlIdle is closed; past ControlConns open connections a new
// one is told so and closed.
func (c *controlServer) serve(path string) (func(), error) {
	if _, err := control.NewClient(path).Status(context.Background()); err == nil {
		return nil, fmt.Errorf("%w on %s (stop it first, or see `baton gateway status`)", ErrAlreadyRunning, path)
	}
	_ = os.Remove(path) // a stale socket of a gateway that died
	ln, err := listenPrivate(path, nil)
	if err != nil {
		return nil, fmt.Errorf("control socket %s: %w", path, err)
	}
	idle, conns := c.idle, c.conns
	if idle <= 0 {
		idle = DefaultControlIdle
	}
	if conns <= 0 {
		conns = DefaultControlConns
	}
	srv := &http.Server{Handler: c.handler(), ReadHeaderTimeout: 5 * time.Second, IdleTimeout: idle}
	lim := &limitListener{Listener: ln, slots: make(chan struct{}, conns), log: c.log}
	go func() {
		if err := srv.Serve(lim); err != nil && !errors.Is(err, http.ErrServerClosed) {
			c.log.Error("control socket", "err", err)
		}
	}()
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		_ = os.Remove(path)
	}, nil
}

// listenPrivate listens on a unix socket at path that nobody else can
// reach at any moment: it is bound inside a fresh directory only this user
// may enter, made 0600 there, and only then renamed to path. (A socket
// bound at path directly is reachable with the umask's mode until a chmod
// catches up.) bound, if set, is called once the socket listens, before it
// is moved into place.
func listenPrivate(path string, bound func(tmp string)) (*net.UnixListener, error) {
	dir, err := os.MkdirTemp(filepath.Dir(path), ".s") // 0700; short: socket paths are limited
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	tmp := filepath.Join(dir, "s")
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: tmp, Net: "unix"})
	if err != nil {
		return nil, err
	}
	// The path moves; stop closes the listener and removes path itself.
	ln.SetUnlinkOnClose(false)
	if err := os.Chmod(tmp, 0o600); err != nil {
		ln.Close()
		return nil, err
	}
	if bound != nil {
		bound(tmp)
	}
	if err := os.Rename(tmp, path); err != nil {
		ln.Close()
		return nil, err
	}
	return ln, nil
}

// limitListener bounds open connections; one past the bound is answered
// 503 with the reason and closed.
type limitListener struct {
	net.Listener
	slots chan struct{}
	log   *slog.Logger
}

// tooMany is the whole answer to a connection past the bound.
const tooMany = "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s"

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		select {
		case l.slots <- struct{}{}:
			return &slotConn{Conn: c, free: func() { <-l.slots }}, nil
		default:
			body, _ := json.Marshal(control.APIError{Code: control.CodeBusy, Message: fmt.Sprintf("too many open control connections (%d); try again", cap(l.slots))})
			_ = c.SetWriteDeadline(time.Now().Add(time.Second))
			_, _ = fmt.Fprintf(c, tooMany, len(body), body)
			c.Close()
			l.log.Warn("control socket: connection refused, too many open", "limit", cap(l.slots))
		}
	}
}

// slotConn gives its slot back once, when closed.
type slotConn struct {
	net.Conn
	once sync.Once
	free func()
}

func (c *slotConn) Close() error {
	c.once.Do(c.free)
	return c.Conn.Close()
}

func (c *controlServer) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/status", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, c.status(r.Context()))
	})
	mux.HandleFunc("POST /v1/kick", func(w http.ResponseWriter, r *http.Request) {
		c.worker.wake()
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("POST /v1/handoffs", func(w http.ResponseWriter, r *http.Request) {
		var req control.HandoffRequest
		if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<10)).Decode(&req); err != nil || req.SessionID == "" || req.To == "" {
			writeError(w, http.StatusBadRequest, control.CodeBadRequest, "want JSON {session_id, from, to}")
			return
		}
		h, err := c.worker.request(r.Context(), req.SessionID, req.From, req.To, req.Home)
		if err != nil {
			status, code := http.StatusInternalServerError, control.CodeInternal
			switch {
			case errors.Is(err, ErrStopping):
				status, code = http.StatusServiceUnavailable, control.CodeShuttingDown
			case errors.Is(err, ErrNotLive):
				status, code = http.StatusConflict, control.CodeNotLive
			case errors.Is(err, ErrNoHome):
				status, code = http.StatusConflict, control.CodeNoHome
			case errors.Is(err, store.ErrHandoffInFlight):
				status, code = http.StatusConflict, control.CodeInFlight
			case errors.Is(err, store.ErrNotFound):
				status, code = http.StatusNotFound, control.CodeUnknownSession
			case errors.Is(err, place.ErrUnknown):
				status, code = http.StatusBadRequest, control.CodeBadRequest
			}
			writeError(w, status, code, err.Error())
			return
		}
		writeJSON(w, http.StatusAccepted, apiHandoff(h))
	})
	mux.HandleFunc("GET /v1/handoffs/{id}/events", c.watchHandoff)
	return mux
}

// watchHandoff streams a handoff's progress as JSON lines until it is
// completed or failed. It subscribes before reading the store, so no step
// falls between the two.
func (c *controlServer) watchHandoff(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil {
		writeError(w, http.StatusBadRequest, control.CodeBadRequest, "handoff id must be a number")
		return
	}
	ch, stop := c.worker.progress.subscribe(id)
	defer stop()
	h, err := c.st.GetHandoff(r.Context(), id)
	if errors.Is(err, store.ErrNotFound) {
		writeError(w, http.StatusNotFound, control.CodeNotFound, fmt.Sprintf("no handoff %d", id))
		return
	} else if err != nil {
		writeError(w, http.StatusInternalServerError, control.CodeInternal, err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	enc := json.NewEncoder(w)
	flush := func() {
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
	}
	first := control.Progress{HandoffID: id, State: string(h.State), Step: "current state", Destination: h.Destination, Error: h.Error}
	if h.State == store.HandoffCompleted {
		first.Link = c.places.linkFor(h.Destination)
	}
	if first.Terminal() {
		// Finished already: the steps this gateway saw, then the outcome.
		for {
			select {
			case p := <-ch:
				if !p.Terminal() {
					_ = enc.Encode(p)
				}
				continue
			default:
			}
			break
		}
		_ = enc.Encode(first)
		flush()
		return
	}
	_ = enc.Encode(first)
	flush()
	// The store is checked now and then too: a handoff finished by another
	// gateway publishes nothing here.
	tick := time.NewTicker(c.pollEvery)
	defer tick.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case p := <-ch:
			_ = enc.Encode(p)
			flush()
			if p.Terminal() {
				return
			}
		case <-tick.C:
			h, err := c.st.GetHandoff(r.Context(), id)
			if err == nil && h.State.Terminal() {
				_ = enc.Encode(control.Progress{HandoffID: id, State: string(h.State), Step: "finished", Destination: h.Destination, Error: h.Error, Link: c.places.linkFor(h.Destination)})
				flush()
				return
			}
		}
	}
}

func apiHandoff(h store.Handoff) control.Handoff {
	return control.Handoff{ID: h.ID, SessionID: h.SessionID, State: string(h.State), Platform: h.Platform, Destination: h.Destination, Error: h.Error}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, control.APIError{Code: code, Message: msg})
}
