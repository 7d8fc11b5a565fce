package platform

import (
	"context"
	"errors"
	"time"
)

// Event is something a person said on a service, as the gateway sees it.
type Event struct {
	At       Address   // where it was said
	SenderID string    // platform user id; the router maps it to a user
	Sender   string    // display name, for logs and greetings
	Text     string    // the message; slash commands arrive as typed ("/handoff cli")
	ID       string    // platform message id, unique per platform, for dedupe
	Time     time.Time // when the service says it was sent
}

// Handler takes inbound events. It returns nil once the event is stored
// durably (or deliberately dropped); only then may the adapter acknowledge
// it to its service (advance an offset, ack an envelope). An error means
// nothing was stored: the adapter should let the service redeliver.
type Handler func(ctx context.Context, ev Event) error

// Adapter connects baton to one chat service.
type Adapter interface {
	// Name is the platform name used in addresses and config ("telegram").
	Name() string
	// Run receives events until ctx ends, reconnecting inside as needed.
	// It returns nil when ctx ends, an error only when it cannot go on
	// (bad credentials, say).
	Run(ctx context.Context, h Handler) error
	// Send posts text to an address. text is markdown; an adapter renders
	// it as its service allows (Telegram HTML, Slack mrkdwn) or sends it
	// as is. It returns the service's id for the posted message. The
	// gateway splits text to MaxMessageLen beforehand when the adapter is
	// a Limiter; Send handles rate limits and transient errors itself as
	// far as the service says how, and returns an error otherwise.
	Send(ctx context.Context, to Address, text string) (msgID string, err error)
}

// Optional capabilities, discovered with a type assertion, as net/http does
// with Flusher and Hijacker.

// Threader can open a new thread (topic) under a home address; the returned
// address has exactly the key a person's later message in it will have.
// An adapter that cannot do it here (topics disabled, method refused)
// returns an error wrapping ErrUnsupported, and the caller falls back to
// the home address itself.
type Threader interface {
	NewThread(ctx context.Context, home Address, title string) (Address, error)
}

// Typer shows that the agent is working. The gateway calls it every few
// seconds while a turn runs; errors are logged once and otherwise ignored.
type Typer interface {
	Typing(ctx context.Context, at Address) error
}

// Editor changes a message sent earlier.
type Editor interface {
	Edit(ctx context.Context, at Address, msgID, text string) error
}

// Limiter reports the longest message the service takes, measured by
// MessageLen (Telegram counts UTF-16 code units, most services runes).
type Limiter interface {
	MaxMessageLen() int
	MessageLen(s string) int
}

// Streamer shows a reply while it is being written. Delta is called with
// each piece of text in order; the finished reply still arrives by Send.
type Streamer interface {
	Delta(ctx context.Context, at Address, text string) error
}

// Readier is an adapter that must first reach its service (check its
// credentials, learn its own name) before it can take handoffs; the
// gateway counts the platform as live only once Ready is closed.
type Readier interface {
	Ready() <-chan struct{}
}

// Command is a slash command as a service's command menu shows it.
type Command struct {
	Name        string // without the slash
	Description string
}

// Commander publishes the slash-command menu (Telegram setMyCommands).
type Commander interface {
	SetCommands(ctx context.Context, cmds []Command) error
}

// ErrUnsupported is wrapped by errors from optional capabilities the
// service (or this server of it) does not offer; callers degrade.
var ErrUnsupported = errors.New("not supported by this service")

// ErrPermanent is wrapped by Send errors that a retry cannot fix (the chat
// is gone, the bot was blocked); the gateway stops retrying.
var ErrPermanent = errors.New("permanent delivery failure")
