package store

import (
	"context"
	"time"
)

// Inbound is a chat event as it arrived from a platform. The gateway stores
// it before acknowledging the platform, so a crash between the two loses
// nothing: the platform redelivers, or the stored row is processed on start.
type Inbound struct {
	ID            int64
	Platform      string // "telegram", …
	PlatformMsgID string // the platform's id for the event; "" if it has none
	AddressKey    string // where it was said
	SenderID      string // platform user id
	Sender        string // display name
	Text          string
	// Attachments are the files that came with the event, put with
	// Files.PutFile before it is stored; their bytes are kept while the
	// event is pending or parked, and after as long as a message names
	// them.
	Attachments []Attachment
	ReceivedAt  time.Time // set to now when zero
	DoneAt      time.Time // zero until MarkInboundDone
	// ClaimedBy is the replica handling the event, until ClaimedUntil
	// (Replicas); "" when none claimed it. AddInbound stores the claim
	// given, so the gateway that heard an event handles it.
	ClaimedBy    string
	ClaimedUntil time.Time
}

// Delivery is one outgoing message. The gateway stores it before sending,
// and marks it sent after, so every reply is sent once even across crashes
// and retried handoffs.
type Delivery struct {
	ID         int64
	Key        string // dedupe key, e.g. "handoff:12:part:0"; "" never deduplicates
	AddressKey string // where it goes
	Text       string
	CreatedAt  time.Time
	SentAt     time.Time // zero while unsent
	Attempts   int       // failed sends so far
	LastError  string    // cut to MaxHandoffError bytes
	// PlatformMsgID is the platform's id for the sent message; while
	// unsent, the message it is to replace by an edit (a reply streamed
	// there as it was written), if any.
	PlatformMsgID string
	Abandoned     bool // given up on: SentAt is when, LastError why
	// Kind says what the delivery is beyond its text, and Data what that
	// kind carries, so a place that shows it better (an approval
	// question as buttons) does so from them, never from the wording.
	Kind DeliveryKind
	Data DeliveryData
	// Attachments are files sent with the text, put with Files.PutFile
	// before the delivery is stored; their bytes are kept while it is
	// unsent, and after as long as a message names them.
	Attachments []Attachment
	// ClaimedBy is the replica sending it, until ClaimedUntil
	// (Replicas); "" when none claimed it. EnqueueDeliveries stores the
	// claim given with a new delivery.
	ClaimedBy    string
	ClaimedUntil time.Time
}

// DeliveryKind says what a delivery is. The empty kind is an ordinary
// answer.
type DeliveryKind string

// Delivery kinds.
const (
	// DeliveryApproval asks whether a tool may run (Data: Tool, Subject,
	// Choices, Expires).
	DeliveryApproval DeliveryKind = "approval"
	// DeliveryApprovalExpired tells that nobody answered an approval
	// question in time, so the tool did not run (Data: Tool).
	DeliveryApprovalExpired DeliveryKind = "approval-expired"
	// DeliveryElsewhere tells a place that the conversation is held in
	// another place (Data: Place), or on its way there: what is said
	// here meanwhile is kept.
	DeliveryElsewhere DeliveryKind = "elsewhere"
	// DeliveryGreeting is a handoff's first message at its destination.
	DeliveryGreeting DeliveryKind = "greeting"
	// DeliveryNotice is something baton tells about the conversation (it
	// moved, a handoff could not open a thread).
	DeliveryNotice DeliveryKind = "notice"
)

// DeliveryData is what a delivery's kind carries beyond its text; each
// kind uses the fields its constant names. Stored as JSON text.
type DeliveryData struct {
	Tool    string    `json:"tool,omitempty"`    // the tool an approval question is about
	Subject string    `json:"subject,omitempty"` // what the call acts on: a command line, a path, its arguments
	Choices []string  `json:"choices,omitempty"` // the answers offered, as commands without the slash
	Expires time.Time `json:"expires,omitzero"`  // when an unanswered question is denied
	Place   string    `json:"place,omitempty"`   // the place holding the conversation, as people name it
}

// Inbox stores inbound events until they have been handled.
type Inbox interface {
	// AddInbound stores in. When (Platform, PlatformMsgID) was stored before
	// it is a redelivery: nothing is written, the earlier row is returned and
	// isNew is false. An empty PlatformMsgID is never a duplicate.
	AddInbound(ctx context.Context, in Inbound) (stored Inbound, isNew bool, err error)
	// PendingInbound lists events not yet marked done with an id above
	// after, oldest (first stored) first; limit <= 0 means 100. Passing the
	// last id of one page as after gives the next.
	PendingInbound(ctx context.Context, after int64, limit int) ([]Inbound, error)
	// MarkInboundDone records that the event was handled. Marking it again
	// keeps the first time; an unknown id is ErrNotFound.
	MarkInboundDone(ctx context.Context, id int64) error
	// ParkInbound keeps an event that reached sessionID from a place not
	// holding it: marked done (it ran no turn) and listed by Parked for
	// its address until Unpark, so that /continue there carries it along.
	ParkInbound(ctx context.Context, id int64, sessionID, addressKey string) error
	// Parked lists the events parked at addressKey, first stored first.
	Parked(ctx context.Context, addressKey string) ([]Inbound, error)
	// Unpark forgets that an event is parked (it was handled).
	Unpark(ctx context.Context, id int64) error
}

// Answer is what AnswerInbound stored.
type Answer struct {
	Deliveries []Delivery // as EnqueueDeliveries returns them
	// Behind is true when an unsent delivery stored before them waits for
	// the same address: they are to be sent after it.
	Behind bool
}

// Outbox stores outgoing messages until they have been sent.
type Outbox interface {
	// EnqueueDeliveries stores ds in one transaction, in order. A delivery
	// whose non-empty Key is already stored (or appears earlier in ds) is not
	// stored again: the stored one is returned in its place, so a retried
	// handoff never enqueues a message twice.
	EnqueueDeliveries(ctx context.Context, ds ...Delivery) ([]Delivery, error)
	// AnswerInbound is EnqueueDeliveries that also marks inbound event id
	// done, in the same transaction: from then on the outbox keeps its
	// answer, so the event is not handled again. An unknown id stores
	// nothing and is ErrNotFound. ds are for one address.
	AnswerInbound(ctx context.Context, id int64, ds ...Delivery) (Answer, error)
	// PendingDeliveries lists unsent deliveries, oldest (lowest id) first,
	// for addressKey ("" means all); limit <= 0 means 100.
	PendingDeliveries(ctx context.Context, addressKey string, limit int) ([]Delivery, error)
	// WaitingDeliveries counts the unsent deliveries of every address that
	// has any, by address key.
	WaitingDeliveries(ctx context.Context) (map[string]int, error)
	// DeliveryByKey is the delivery stored under a non-empty key, sent or
	// not; ErrNotFound if none.
	DeliveryByKey(ctx context.Context, key string) (Delivery, error)
	// MarkDelivered records a successful send. Marking an already sent
	// delivery again changes nothing; an unknown id is ErrNotFound.
	MarkDelivered(ctx context.Context, id int64, platformMsgID string) error
	// RecordDeliveryFailure counts a failed send of an unsent delivery and
	// keeps the reason, cut like a handoff's. It does nothing to a delivery
	// already sent (a late failure cannot undo a success); an unknown id is
	// ErrNotFound.
	RecordDeliveryFailure(ctx context.Context, id int64, reason string) error
	// AbandonDelivery gives up on an unsent delivery that can never be sent
	// (the chat is gone, the bot was blocked), so it stops holding back
	// the ones after it: it is no longer pending, its reason is kept and
	// Abandoned is set. It does nothing to a delivery already sent; an
	// unknown id is ErrNotFound.
	AbandonDelivery(ctx context.Context, id int64, reason string) error
}

// Homes stores each platform's home channel: where handoffs land when no
// better place is given.
type Homes interface {
	// SetHomeChannel sets platform's home to addressKey; an empty
	// addressKey clears it.
	SetHomeChannel(ctx context.Context, platform, addressKey string) error
	// HomeChannels maps platform to home address key.
	HomeChannels(ctx context.Context) (map[string]string, error)
}

// PlatformStates is a small key/value memory per platform, for what an
// adapter must keep across restarts and cannot ask its service for (a
// Matrix sync token).
type PlatformStates interface {
	// PlatformState is the value stored under key for platform; "" when
	// none was set.
	PlatformState(ctx context.Context, platform, key string) (string, error)
	// SetPlatformState stores value under key for platform, replacing what
	// was there; an empty value clears it.
	SetPlatformState(ctx context.Context, platform, key, value string) error
}

// DefaultQueueLimit is how many rows PendingInbound and PendingDeliveries
// return when the caller gives no limit.
const DefaultQueueLimit = 100
