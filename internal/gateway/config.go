package gateway

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/baton-agent/baton/internal/agent"
	"github.com/baton-agent/baton/internal/command"
	"github.com/baton-agent/baton/internal/platform"
	"github.com/baton-agent/baton/internal/retry"
	"github.com/baton-agent/baton/internal/store"
)

// Defaults for zero-valued Config fields.
const (
	DefaultLease       = 30 * time.Second
	DefaultPollEvery   = 2 * time.Second
	DefaultOfferWithin = 12 * time.Hour
	// DefaultMaxSessionFiles is the bytes of files a conversation keeps
	// unless Config says otherwise: some twenty documents at the per-file
	// bound.
	DefaultMaxSessionFiles = 500 << 20
	DefaultShutdownGrace   = 10 * time.Second
	DefaultApprovalTimeout = 10 * time.Minute
)

// Config is what a Gateway is made of. Store, Agent and OwnerID are required.
type Config struct {
	Store store.Store
	// Agent runs the turns. Its Approver is replaced by the gateway's own,
	// and its StoreRetry by Rerecord: a turn whose store fails keeps what
	// the model said and waits for the store as long as the gateway runs.
	Agent    *agent.Agent
	Adapters []platform.Adapter
	OwnerID  string // the user every session the gateway creates belongs to
	// Owners lists, per platform, the platform user ids that are the owner;
	// anyone else is ignored (and logged). A platform listed in
	// TrustedPlatforms needs none: its own access control (the web chat's
	// token) already proves the owner.
	Owners           map[string][]string
	TrustedPlatforms []string
	// PersonalPlatforms run on the owner's own account (platform.Spec's
	// Personal): strangers there are ignored without a word.
	PersonalPlatforms []string
	// Homes are the configured home channels (platform → address key);
	// one set by /sethome, kept in the store, wins.
	Homes map[string]string
	// Socket is where the control API listens; "" runs none.
	Socket string
	// ControlIdle closes a control connection that sends no request for
	// this long; 0: DefaultControlIdle.
	ControlIdle time.Duration
	// ControlConns bounds open control connections; 0: DefaultControlConns.
	ControlConns  int
	Claimer       string // who claims handoffs, and the replica's id; default host:pid
	Lease         time.Duration
	PollEvery     time.Duration
	ShutdownGrace time.Duration
	Log           *slog.Logger
	// WebURL is reported by Status (the web chat's address with token).
	WebURL string
	// Commands are the slash commands understood in chats; nil: command.Default().
	Commands *command.Registry
	// ApprovalTimeout is how long a tool waits for /approve in a chat
	// before it is denied; 0: DefaultApprovalTimeout.
	ApprovalTimeout time.Duration
	// Rate bounds how fast one person's messages are taken, per platform
	// account; zero: DefaultRate.
	Rate Rate
	// Turns is how many conversations' messages are handled at once (a
	// conversation's own run one at a time in any case); 0: DefaultTurns.
	Turns int
	// OfferWithin is how recently another session must have been active
	// for a place holding none to offer it (/continue); 0:
	// DefaultOfferWithin, negative: never.
	OfferWithin time.Duration
	// Transcriber hears voice notes; nil: they are kept unheard, and the
	// person is told once per conversation what to set.
	Transcriber Transcriber
	// Speaker speaks the answers of sessions with /voice on; nil: /voice
	// on says what to set.
	Speaker Speaker
	// Spoken are the platforms whose new conversations start with /voice
	// on (config voice.spoken), where a Speaker is set.
	Spoken []string
	// MaxSessionFiles bounds, in bytes, the files one conversation keeps
	// (config files.max_session_bytes): a file past it is refused in one
	// line; 0: DefaultMaxSessionFiles.
	MaxSessionFiles int64
	// Display names platforms for people ("Telegram"); a platform not
	// listed is shown by its name.
	Display map[string]string
	// Places are every platform baton has, set up or not, so a handoff
	// to a name that is none is told apart from one to a platform not
	// set up here; nil tells them apart by nothing.
	Places []string
	// Restart is how a platform whose connection failed is restarted;
	// zero: platform.DefaultRestart().
	Restart retry.Policy
	// Send is the retry series of one delivery attempt (the adapter tries
	// each call once); zero: DefaultSend().
	Send retry.Policy
	// Resend is how replies left unsent by a failed series are tried again
	// in the background until they are sent; zero: DefaultResend().
	Resend retry.Policy
	// Rerecord is how what the store could not record (busy, locked, disk
	// full) is written again until the store recovers: a turn's messages,
	// a message handled again in its place in the conversation, a reply
	// recorded as sent; zero: DefaultRerecord().
	Rerecord retry.Policy
	// Shared says other gateways (replicas) may share the store: what is
	// heard, sent and run is claimed there under a Lease, and each
	// platform not in SharedPlatforms is read by one replica at a time.
	Shared bool
	// SharedPlatforms may be read by every replica at once
	// (platform.Spec's Shared).
	SharedPlatforms []string
}

// DefaultTurns handles 64 conversations' messages at once: far more than
// one person keeps busy, and few enough that a burst across thousands of
// conversations is answered at the pace of a few, each turn as quick as
// alone, rather than all at once, each slower than the chat services
// wait for an answer to be shown.
const DefaultTurns = 64

// DefaultSend is the retry series of a delivery while someone waits for
// the answer: a few quick tries, at most 15 seconds.
func DefaultSend() retry.Policy {
	return retry.Policy{First: 500 * time.Millisecond, Max: 4 * time.Second, Tries: 4, Within: 15 * time.Second}
}

// DefaultResend is how unsent replies are tried again in the background:
// for as long as it takes, at least every half minute (retry's cap). A
// platform that comes back live sends what waits for it at once.
func DefaultResend() retry.Policy { return retry.Policy{First: 5 * time.Second} }

// DefaultRerecord tries a message again soon, then every half minute,
// for as long as the gateway runs.
func DefaultRerecord() retry.Policy { return retry.Policy{First: time.Second, Max: 30 * time.Second} }

// Transcriber turns a voice note's audio into what it says
// (voice.Transcriber).
type Transcriber interface {
	Transcribe(ctx context.Context, name, mediaType string, open func(context.Context) (io.ReadCloser, error)) (string, error)
}

// Speaker turns an answer (markdown) into a voice note, Ogg Opus
// (voice.Speaker).
type Speaker interface {
	Speak(ctx context.Context, markdown string) ([]byte, error)
}

// withDefaults fills cfg's zero fields.
func withDefaults(cfg Config) Config {
	if cfg.Lease <= 0 {
		cfg.Lease = DefaultLease
	}
	if cfg.PollEvery <= 0 {
		cfg.PollEvery = DefaultPollEvery
	}
	if cfg.ShutdownGrace <= 0 {
		cfg.ShutdownGrace = DefaultShutdownGrace
	}
	if cfg.ApprovalTimeout <= 0 {
		cfg.ApprovalTimeout = DefaultApprovalTimeout
	}
	if cfg.Turns <= 0 {
		cfg.Turns = DefaultTurns
	}
	if cfg.OfferWithin == 0 {
		cfg.OfferWithin = DefaultOfferWithin
	}
	if cfg.MaxSessionFiles <= 0 {
		cfg.MaxSessionFiles = DefaultMaxSessionFiles
	}
	if cfg.Claimer == "" {
		host, _ := os.Hostname()
		cfg.Claimer = fmt.Sprintf("gateway@%s:%d", host, os.Getpid())
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.Restart == (retry.Policy{}) {
		cfg.Restart = platform.DefaultRestart()
	}
	if cfg.Send == (retry.Policy{}) {
		cfg.Send = DefaultSend()
	}
	if cfg.Rate == (Rate{}) {
		cfg.Rate = DefaultRate()
	}
	if cfg.Rerecord == (retry.Policy{}) {
		cfg.Rerecord = DefaultRerecord()
	}
	if cfg.Resend == (retry.Policy{}) {
		cfg.Resend = DefaultResend()
	}
	return cfg
}
