// Package control is the gateway's control API: how a terminal talks to a
// running `baton gateway` over a unix socket in BATON_HOME. It holds the
// wire types and the client; the server side lives in package gateway.
//
// The API is HTTP over the socket (mode 0600, so only the owner's
// processes reach it):
//
//	GET  /v1/status                  Status
//	POST /v1/handoffs                HandoffRequest → Handoff (202)
//	GET  /v1/handoffs/{id}/events    Progress, one JSON object per line,
//	                                 until a terminal state
//	POST /v1/kick                    look for pending handoffs now
package control

import (
	"errors"
	"path/filepath"
	"time"
)

// SocketName is the control socket's file name inside BATON_HOME.
const SocketName = "gateway.sock"

// SocketPath is the control socket of the gateway using home.
func SocketPath(home string) string { return filepath.Join(home, SocketName) }

// Status is what a running gateway reports about itself.
type Status struct {
	PID       int        `json:"pid"`
	Started   time.Time  `json:"started"`
	Claimer   string     `json:"claimer"`
	Platforms []Platform `json:"platforms"`
	WebURL    string     `json:"web_url,omitempty"` // with its token: keep it private
	// Replicas are the gateways sharing the store, this one among them,
	// when the store is shared (Postgres); none otherwise.
	Replicas []Replica `json:"replicas,omitempty"`
}

// Replica is one gateway sharing the store, as it last said.
type Replica struct {
	ID      string    `json:"id"`
	Host    string    `json:"host"`
	PID     int       `json:"pid"`
	Started time.Time `json:"started"`
	Seen    time.Time `json:"seen"`            // its last heartbeat
	Leads   []string  `json:"leads,omitempty"` // the platforms it reads for every replica
	Self    bool      `json:"self,omitempty"`  // the gateway answering
	Gone    bool      `json:"gone,omitempty"`  // no heartbeat for a lease: stopped, or cut off from the store
}

// Platform is one configured chat service.
type Platform struct {
	Name    string    `json:"name"`
	Display string    `json:"display,omitempty"` // "Telegram"
	Live    bool      `json:"live"`
	State   string    `json:"state,omitempty"`    // starting, live, down, refused, stopped
	Since   time.Time `json:"since,omitempty"`    // when it entered State
	NextTry time.Time `json:"next_try,omitempty"` // when down: the next restart
	Home    string    `json:"home,omitempty"`     // address key; "" if none set
	Error   string    `json:"error,omitempty"`    // why it is down or refused, one line
	Waiting int       `json:"waiting,omitempty"`  // replies stored and not yet sent
	LedBy   string    `json:"led_by,omitempty"`   // another replica reads it (Status.Replicas)
}

// Platform finds a platform by name.
func (s Status) Platform(name string) (Platform, bool) {
	for _, p := range s.Platforms {
		if p.Name == name {
			return p, true
		}
	}
	return Platform{}, false
}

// HandoffRequest asks the gateway to move a session to a platform.
type HandoffRequest struct {
	SessionID string `json:"session_id"`
	From      string `json:"from"` // where the session is now, e.g. "cli"
	To        string `json:"to"`   // destination platform
	// Home lands the session in the platform's home chat itself rather
	// than in a new thread there.
	Home bool `json:"home,omitempty"`
}

// Handoff is a handoff as the API reports it.
type Handoff struct {
	ID          int64  `json:"id"`
	SessionID   string `json:"session_id"`
	State       string `json:"state"`
	Platform    string `json:"platform"`
	Destination string `json:"destination,omitempty"`
	Error       string `json:"error,omitempty"`
}

// Progress is one step of a handoff, streamed to the terminal.
type Progress struct {
	HandoffID   int64  `json:"handoff_id"`
	State       string `json:"state"` // pending, running, completed, failed
	Step        string `json:"step"`  // what just happened, for people
	Destination string `json:"destination,omitempty"`
	// Link opens the destination (the web page, a Telegram topic), once
	// completed, where the service has one. It may carry the web token.
	Link  string `json:"link,omitempty"`
	Error string `json:"error,omitempty"`
}

// Terminal reports whether no further progress follows p.
func (p Progress) Terminal() bool { return p.State == "completed" || p.State == "failed" }

// Error codes the API answers with; the client maps them to the sentinel
// errors below.
const (
	CodeNoGateway      = "no_gateway"
	CodeNotLive        = "platform_not_live"
	CodeNoHome         = "no_home"
	CodeInFlight       = "in_flight"
	CodeNotFound       = "not_found"
	CodeBadRequest     = "bad_request"
	CodeInternal       = "internal"
	CodeShuttingDown   = "shutting_down"
	CodeUnknownSession = "unknown_session"
	CodeBusy           = "busy" // too many open connections
)

// Sentinel errors callers branch on.
var (
	ErrNoGateway      = errors.New("no gateway is running")
	ErrNotLive        = errors.New("platform is not live in the gateway")
	ErrNoHome         = errors.New("platform has no home channel")
	ErrInFlight       = errors.New("a handoff is already in flight for this session")
	ErrNotFound       = errors.New("not found")
	ErrUnknownSession = errors.New("unknown session")
	// ErrLostGateway is a gateway that went away while asked (the
	// connection closed before an answer): what it did meanwhile is in
	// the store, not in the error.
	ErrLostGateway = errors.New("the gateway went away before answering")
)

// APIError is an error the gateway answered with.
type APIError struct {
	Code    string `json:"code"`
	Message string `json:"error"`
}

func (e *APIError) Error() string { return e.Message }

// Unwrap maps the code to a sentinel error.
func (e *APIError) Unwrap() error {
	switch e.Code {
	case CodeNoGateway:
		return ErrNoGateway
	case CodeNotLive:
		return ErrNotLive
	case CodeNoHome:
		return ErrNoHome
	case CodeInFlight:
		return ErrInFlight
	case CodeNotFound:
		return ErrNotFound
	case CodeUnknownSession:
		return ErrUnknownSession
	}
	return nil
}
