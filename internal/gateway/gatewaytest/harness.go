// Package gatewaytest is the gateway's scenario suite: the end-to-end
// behaviours the chat platforms share (a handoff there and back, a refused
// thread, a stranger, a dropped connection, a catch-up after a stop…),
// written once and run against each platform's loopback fake through a
// Harness. A new platform adds a Harness, not a test file.
package gatewaytest

import (
	"testing"

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
	// Threads: a handoff opens a thread under the home chat.
	Threads bool
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

// Gateway is a running gateway for the suite: the store, the fake model
// and the control socket's client.
type Gateway interface {
	Store() store.Store
	Model() *llmtest.Server
	Control() *control.Client
	// TerminalSession is a session as the terminal leaves it, titled
	// "Trip planning #…": four messages about a train to Lisbon.
	TerminalSession(t testing.TB) store.Session
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
