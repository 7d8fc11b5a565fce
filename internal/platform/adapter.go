package platform

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"time"
)

// Event is something a person said on a service, as the gateway sees it.
type Event struct {
	At       Address   // where it was said
	SenderID string    // platform user id; the router maps it to a user
	Sender   string    // display name, for logs and greetings
	Text     string    // the message (a file's caption); slash commands arrive as typed ("/handoff cli")
	ID       string    // platform message id, unique per platform, for dedupe
	Time     time.Time // when the service says it was sent
	// Attachments are the files sent with the message; their bytes are
	// read (Attachment.Open) when the event is stored. A message may be
	// only attachments, with no Text.
	Attachments []Attachment
}

// Receiver takes what an adapter's Run hears from its service.
type Receiver interface {
	// Receive takes one inbound event. It returns nil once the event is
	// stored durably (or deliberately dropped); only then may the adapter
	// acknowledge it to its service (advance an offset, ack an envelope).
	// An error means nothing was stored: the adapter lets the service
	// redeliver (or returns from Run, to be restarted).
	Receive(ctx context.Context, ev Event) error
	// Live says the service has accepted baton (credentials checked) and
	// events flow. Run calls it after every (re)connection; until then
	// the platform counts as starting, and handoffs to it are refused.
	Live()
}

// ReceiverFunc is a Receiver that calls f and ignores Live; for tests and
// tools that drive an adapter directly.
type ReceiverFunc func(ctx context.Context, ev Event) error

// Receive calls f.
func (f ReceiverFunc) Receive(ctx context.Context, ev Event) error { return f(ctx, ev) }

// Live does nothing.
func (f ReceiverFunc) Live() {}

// Adapter connects baton to one chat service.
type Adapter interface {
	// Name is the platform name used in addresses and config ("telegram").
	Name() string
	// Run connects to the service and hands what it hears to r until ctx
	// ends (then it returns nil) or the connection fails (then it returns
	// why, classified: Refused for credentials, anything else is
	// transient). It does not retry a failed connection itself: the
	// gateway's supervisor restarts it with backoff, so every platform
	// recovers the same way and its status is told the same way.
	Run(ctx context.Context, r Receiver) error
	// Send posts text to an address in one try. text is markdown; an
	// adapter renders it as its service allows (Telegram HTML, Slack
	// mrkdwn) or sends it as is. It returns the service's id for the
	// posted message. The gateway splits text to MaxMessageLen beforehand
	// when the adapter is a Limiter, and retries failures by their class
	// (see Classify): an adapter never retries on its own.
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

// Editor changes a message sent earlier. With it, the gateway streams a
// reply by editing the message as the model writes (see EditPacer).
type Editor interface {
	Edit(ctx context.Context, at Address, msgID, text string) error
}

// EditPacer tells how often one message may be edited without running
// into the service's rate limits; an Editor without it is edited at most
// once a second.
type EditPacer interface {
	EditEvery() time.Duration
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

// Linker gives an address people can open to reach a conversation (the
// web page, a Telegram topic's t.me link); "" where there is none.
type Linker interface {
	Link(at Address) string
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

// Redeliverer is offered by the Receiver an adapter's Run is given (look
// for it with a type assertion). An adapter whose places can be out of
// reach while the service is up (the web chat with no page open) says
// when one is reachable again, and what waits for it is sent at once
// rather than at the next background retry. An address with only
// Platform set stands for every place of that platform.
type Redeliverer interface {
	Redeliver(at Address)
}

// Mirror is a platform whose people connect to one gateway replica each
// (the web chat's pages): what another replica sent to those connected
// there, Mirror shows to those connected here, at once and without
// waiting for them, so every page sees every message as with one
// gateway. ctx carries the delivery's key (WithDeliveryKey), so a page
// shown it twice shows it once.
type Mirror interface {
	Mirror(ctx context.Context, to Address, m Message)
}

type deliveryKey struct{}

// WithDeliveryKey marks a Send as one try of the stored delivery key: every
// try of it carries the same key, in this run and after a restart. The
// gateway sets it; an adapter whose service can drop repeats uses it.
func WithDeliveryKey(ctx context.Context, key string) context.Context {
	return context.WithValue(ctx, deliveryKey{}, key)
}

// DeliveryKey is the key WithDeliveryKey put in ctx, or "".
func DeliveryKey(ctx context.Context) string {
	k, _ := ctx.Value(deliveryKey{}).(string)
	return k
}

// DeliveryToken is a token of n hex digits (at most 64) standing for one
// message of the delivery a Send is a try of: part counts the messages
// that one Send posts (0 for the first). It is the same for every try of
// that delivery, in this run and after a restart, and differs for another
// delivery, place or part, so an adapter can hand it to a service that
// drops a repeat by a key the sender chooses (a Matrix transaction id, a
// Discord nonce, a WhatsApp message id). ok is false when ctx carries no
// delivery key: the message is not stored, and nothing can repeat it.
func DeliveryToken(ctx context.Context, to Address, part, n int) (token string, ok bool) {
	key := DeliveryKey(ctx)
	if key == "" {
		return "", false
	}
	sum := sha256.Sum256([]byte(to.Key() + "\x00" + key + "\x00" + strconv.Itoa(part)))
	return hex.EncodeToString(sum[:])[:min(max(n, 1), 2*sha256.Size)], true
}
