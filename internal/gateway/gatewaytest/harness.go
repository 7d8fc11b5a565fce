// Package gatewaytest is the gateway's scenario suite: the end-to-end
// behaviours the chat platforms share (a handoff there and back, a refused
// thread, a stranger, a dropped connection, a catch-up after a stop…),
// written once and run against each platform's loopback fake through a
// Harness. A new platform adds a Harness, not a test file.
package gatewaytest

import (
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/gateway/control"
	"github.com/baton-agent/baton/internal/llm/llmtest"
	"github.com/baton-agent/baton/internal/platform"
	"github.com/baton-agent/baton/internal/store"
)

// Harness is one platform as the suite drives it.
type Harness interface {
	// Caps says which scenarios the platform can take part in.
	Caps() Caps
	// Start starts the service's fake (stopped when t ends) before the
	// gateway starts.
	Start(t testing.TB) Service
}

// Caps are what a platform offers that some scenarios need.
type Caps struct {
	// Threads: a handoff opens a thread (the web chat: a conversation)
	// under the home chat.
	Threads bool
	// Refuses: RefuseThreads makes the service refuse the next thread.
	Refuses bool
	// ThreadRoot: a thread hangs from a message the bot posts in the home
	// chat (else the home chat shows nothing of it).
	ThreadRoot bool
	// Drops: the Service is a Dropper.
	Drops bool
	// CatchesUp: the Service is a CatchUp.
	CatchesUp bool
}

// Setup is what the gateway needs to run a platform's adapter.
type Setup struct {
	Platform string // the adapter's name: "telegram"
	Display  string // as people read it: "Telegram"
	// Adapters builds the adapters afresh for each run of the gateway;
	// mem is where the platform keeps what must outlive a run.
	Adapters func(mem platform.Memory) []platform.Adapter
	Owners   []string         // the owner's ids on the platform
	Home     platform.Address // where handoffs land
	// RefusalReason is what the notice of a refused thread must say to
	// tell the person what to fix; "" when the service gives no reason.
	RefusalReason string
	// Personal: baton runs on the owner's own account (the gateway is
	// told so); the home is the owner's chat with themselves.
	Personal bool
	// NotLive: the platform is not expected to come live; Start returns
	// once the gateway runs.
	NotLive bool
	// Grace is how long a stop waits for the turns in flight; 0: the
	// gateway's own tests choose.
	Grace time.Duration
}

// Person is who writes in a chat.
type Person int

const (
	Owner    Person = iota // the owner's own account on the platform
	Stranger               // someone the gateway does not know
)

// Shown is one message of the bot as people see it now (after edits).
type Shown struct {
	At   platform.Address // Chat and Thread are set; Kind may not be
	Text string           // plain text, as read
}

// Service is one running fake of a platform's service.
type Service interface {
	Setup() Setup
	// Say writes text as who at a chat or thread, and returns once the
	// service has handed it to the bot (at once while no gateway runs).
	// On a personal account a stranger cannot write in the owner's own
	// chat: their words come from their own chat with the owner.
	Say(t testing.TB, at platform.Address, who Person, text string)
	// Shown is everything the bot shows, in the order it was posted.
	Shown() []Shown
	// Command is line (a slash command) as a person types it to the bot
	// in a group.
	Command(line string) string
	// Mention is text addressed to the bot by name in a group.
	Mention(text string) string
	// RefuseThreads makes the service refuse the next new thread; on a
	// platform without threads it does nothing.
	RefuseThreads()
}

// PersonalAccount is a Service on the owner's own account, where the owner
// also writes to other people.
type PersonalAccount interface {
	// OwnerWritesElsewhere is the owner writing text to a friend.
	OwnerWritesElsewhere(t testing.TB, text string)
}

// Dropper is a Service whose connection can be dropped in the middle of a
// handoff.
type Dropper interface {
	// DropDuringHandoff is called before a handoff is requested; the
	// function it returns, called once it was, waits for the moment,
	// drops the connection and waits until the adapter is back.
	DropDuringHandoff(t testing.TB) (drop func(t testing.TB))
}

// ThreadCounter is a Service that can tell how many times the bot asked
// for a new thread.
type ThreadCounter interface {
	ThreadTries() int
}

// ThreadNamer is a Service that can tell how a thread is titled where
// people see it (a topic's or thread's name, a root message's text).
type ThreadNamer interface {
	ThreadName(at platform.Address) string
}

// EditCounter is a Service that streams a reply by editing one message,
// and can tell how many edits it received.
type EditCounter interface {
	Edits() int
}

// CatchUp is a Service that keeps what the owner wrote while the gateway
// was stopped only in its history, for the adapter to fetch.
type CatchUp interface {
	// Closed reports whether the stopped gateway's connection is gone.
	Closed() bool
	// Forget drops what the service would otherwise hand over again
	// (events never acknowledged, a session to resume). The function it
	// returns checks, once the gateway runs again, how the adapter came
	// back.
	Forget(t testing.TB) (after func(t testing.TB))
}

// The hooks below are what only some services do; a Service that has
// none leaves the interface out, and the scenarios that need it skip
// saying why.

// Linker is a Service whose places have an address the terminal is given
// to open.
type Linker interface {
	WantLink(at platform.Address) string
}

// Pinger is a Service that can tell whom the bot's posts could notify
// beyond the chat (everyone, a role, a person).
type Pinger interface {
	Pings() []string
}

// Typist is a Service that shows when the bot is typing.
type Typist interface {
	TypingShownAt(at platform.Address) bool
}

// Menu is a Service that keeps a menu of the bot's commands.
type Menu interface {
	CommandMenu() string
}

// RateLimiter is a Service that can ask the bot to slow down.
type RateLimiter interface {
	// RateLimitNextPost answers the bot's next post "too many requests,
	// retry after a moment".
	RateLimitNextPost()
}

// Repeater is a Service that may hand over a message again.
type Repeater interface {
	// SayRepeated says text as the owner at at; again hands the same
	// message over again, as the service does after a lost answer.
	SayRepeated(t testing.TB, at platform.Address, text string) (again func(t testing.TB))
}

// StrangerChats is a Service where strangers can write to the bot in a
// direct chat.
type StrangerChats interface {
	// StrangerSaysDirect is stranger n (0, 1, …) writing text to the bot
	// directly; it returns where the bot answers them.
	StrangerSaysDirect(t testing.TB, n int, text string) platform.Address
}

// ForGoodRefuser is a Service that can refuse a post for good (the bot
// was blocked, the chat is gone).
type ForGoodRefuser interface {
	// RefuseForGood refuses every post containing sub.
	RefuseForGood(sub string)
}

// CredentialRefuser is a Service that can refuse the bot's credentials.
type CredentialRefuser interface {
	// RefusedCredentials builds the adapters with credentials the service
	// refuses; secret is what must never show in the gateway's status.
	RefusedCredentials() (adapters func(platform.Memory) []platform.Adapter, secret string)
}

// OptionalRefuser is a Service that can answer none of its optional
// methods (threads, typing, commands, edits), as an older server would.
type OptionalRefuser interface {
	RefuseOptional()
}

// Loser is a Service that can carry out a call and lose its answer.
type Loser interface {
	// LoseNextPost carries out the bot's next post (a thread's root or
	// a message) and cuts the connection before the answer.
	LoseNextPost()
}

// AckWaiter is a Service that hands a message over until the bot
// acknowledges it.
type AckWaiter interface {
	// SayUnacked says text as the owner at at and returns at once; acked
	// tells whether the bot acknowledged it, deliveries how many times
	// the service handed it over.
	SayUnacked(t testing.TB, at platform.Address, text string) (acked func() bool, deliveries func() int)
}

// Gateway is a running gateway for the suite: the store, the fake model
// and the control socket's client.
type Gateway interface {
	Store() store.Store
	Model() *llmtest.Server
	Control() *control.Client
	// TerminalSession is a session as the terminal leaves it, titled
	// "Trip planning #…": four messages about a train to Lisbon.
	TerminalSession(t testing.TB) store.Session
	// WebURL is the running gateway's web chat, with its token.
	WebURL() string
	// HoldWrites takes the store's write lock, as another writer would,
	// until release is called.
	HoldWrites(t testing.TB) (release func())
	// Stop stops the gateway and waits until it has.
	Stop()
	// Again runs a new gateway on the stopped one's home and store, and
	// returns once the platform is live.
	Again(t testing.TB) Gateway
}

// Start runs a gateway with the web chat and the platform set up, and
// returns once the platform is live. The gateway's own tests provide it:
// they hold the rig.
type Start func(t testing.TB, s Setup) Gateway
