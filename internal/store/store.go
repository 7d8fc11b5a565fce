// Package store defines baton's single source of truth: users and their
// identities, sessions and their transcripts, bindings of conversation
// addresses to sessions, the per-session handoff state machine, and the
// gateway's inbox, outbox and home channels, and handoff notes.
//
// Implementations live in subpackages (sqlite, postgres); storetest holds
// the conformance suite every implementation must pass.
package store

import (
	"context"
	"encoding/json"
	"errors"
	"time"
	"unicode/utf8"
)

// Sentinel errors callers branch on. Implementations wrap them with context.
var (
	ErrNotFound  = errors.New("not found")
	ErrConflict  = errors.New("conflict")
	ErrInvalid   = errors.New("invalid")
	ErrAmbiguous = errors.New("ambiguous")
	// ErrDamaged is a store whose file exists but cannot be used (empty,
	// not a database, corrupt). baton stops rather than start afresh on
	// top of someone's conversations.
	ErrDamaged = errors.New("the store is damaged")
	// ErrLost is a store that holds less than baton last recorded of it
	// (its write-ahead log lost, the file replaced by an older or partial
	// copy, or removed): baton stops rather than go on without the rest.
	ErrLost = errors.New("the store lost conversations it held")
)

// Transient reports whether err, from a store method, may pass when the
// call is made again: a busy or locked database, a full disk, a write
// that timed out. The sentinel errors above are answers, not failures,
// and a cancelled call was meant to stop; neither is transient.
func Transient(err error) bool {
	if err == nil {
		return false
	}
	for _, answer := range []error{ErrNotFound, ErrConflict, ErrInvalid, ErrAmbiguous, ErrDamaged, ErrLost, context.Canceled} {
		if errors.Is(err, answer) {
			return false
		}
	}
	return true
}

// ErrHandoffInFlight is returned by RequestHandoff while the session already
// has a pending or running handoff.
var ErrHandoffInFlight = &wrapped{msg: "a handoff is already in flight", kind: ErrConflict}

// ErrTitleTaken is returned when the owner already has a session with that title.
var ErrTitleTaken = &wrapped{msg: "title already used by another session", kind: ErrConflict}

type wrapped struct {
	msg  string
	kind error
}

func (w *wrapped) Error() string { return w.msg }
func (w *wrapped) Unwrap() error { return w.kind }

// User is a person who owns sessions; they reach baton through identities.
type User struct {
	ID        string
	Name      string
	CreatedAt time.Time
}

// Identity maps one account on one platform to a user.
type Identity struct {
	Platform       string // "cli", "telegram", …
	PlatformUserID string
	UserID         string
	DisplayName    string
	CreatedAt      time.Time
}

// Session is one conversation with the agent.
type Session struct {
	ID           string
	OwnerID      string
	Title        string // "" until set; unique per owner otherwise
	Model        string
	Platform     string // where it started
	ParentID     string // the session this one continues (compression lineage)
	CreatedAt    time.Time
	UpdatedAt    time.Time
	EndedAt      time.Time // zero while open
	EndReason    string
	InputTokens  int64
	OutputTokens int64
	MessageCount int // live transcript rows
	// Holder is the address key of the one place holding the session
	// (the destination of its last completed handoff, or where it
	// started); only the holder runs turns. "" for none recorded.
	Holder    string
	HeldSince time.Time
	// Voice says answers are also spoken, as a voice note (/voice on).
	Voice bool
}

// HeldElsewhere reports whether a place other than key holds the session
// (none recorded holds it nowhere else).
func (s Session) HeldElsewhere(key string) bool { return s.Holder != "" && s.Holder != key }

// Open reports whether the session has not been ended.
func (s Session) Open() bool { return s.EndedAt.IsZero() }

// Role of a stored message.
type Role string

const (
	RoleSystem    Role = "system"
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
)

// MessageKind says what a message is beyond its role. The empty kind is
// what a person or the model said; the others are messages baton wrote
// itself, which people see as notes rather than as words someone said.
// Code branches on the kind, never on the content, so the content can be
// worded for the model freely.
type MessageKind string

const (
	// KindHandoff is the user message a handoff adds to tell the model
	// where the conversation now is.
	KindHandoff MessageKind = "handoff"
	// KindSummary is the user message that stands in for compressed turns.
	KindSummary MessageKind = "summary"
	// KindNotice is something baton told the person about the session.
	KindNotice MessageKind = "notice"
)

// Message is one transcript row.
type Message struct {
	ID            int64
	SessionID     string
	Seq           int64 // position in the session; increases with every append
	Role          Role
	Kind          MessageKind // "" for ordinary messages
	Content       string
	ToolCalls     json.RawMessage // assistant tool calls as JSON, nil if none
	ToolCallID    string          // tool results: the call answered
	ToolName      string
	Platform      string // where it was said
	PlatformMsgID string
	CreatedAt     time.Time
	Superseded    bool // replaced by ReplaceTranscript; kept for history
	// Attachments are the files the message carries, in order; each
	// names bytes put with Files.PutFile before the message is stored.
	Attachments []Attachment `json:",omitempty"`
}

// SessionFilter narrows ListSessions, which lists the most recently
// active first (a message stored makes a session active), sessions
// active at the same time newest made first. Zero values mean "any".
type SessionFilter struct {
	OwnerID  string
	Platform string
	Text     string // substring of the title, case-insensitive
	Limit    int    // 0: 50
	Offset   int
}

// SearchQuery is a full-text search over live message content. What every
// store finds (storetest's Search group holds each to it):
//
//   - Text is a person's words, never a query language: operators, quotes,
//     parentheses and column names mean nothing and never make an error.
//   - Content and query are cut into words the same way: runs of letters
//     and digits, matched without regard to case or to accents on Latin
//     letters (cafe finds CAFÉ); everything else separates words.
//   - Every word of Text must be found in the message. A word of Text that
//     cuts into several (col:val, near(x)) must be found as those words in
//     a row.
//   - A word ending in * matches any word it begins (kube* finds
//     kubernetes).
//   - Text without any letter or digit is ErrInvalid.
//   - Only live messages are found (not superseded ones, not those of
//     deleted sessions), best match first, at most Limit of them.
type SearchQuery struct {
	Text      string // a person's raw words; treated literally
	SessionID string
	Role      Role
	Limit     int // 0: 20
}

// SearchHit is one matching message with a highlighted snippet.
type SearchHit struct {
	Message Message
	Snippet string // a few words around the match, matched words wrapped in [ and ]
	Title   string // the session's title
}

// Binding attaches a conversation address key to a session.
type Binding struct {
	Key       string
	SessionID string
	UpdatedAt time.Time
}

// HandoffState is the per-session handoff state.
type HandoffState string

const (
	HandoffNone      HandoffState = "none"
	HandoffPending   HandoffState = "pending"
	HandoffRunning   HandoffState = "running"
	HandoffCompleted HandoffState = "completed"
	HandoffFailed    HandoffState = "failed"
)

// Terminal reports whether no further transition can happen from s.
func (s HandoffState) Terminal() bool {
	return s == HandoffCompleted || s == HandoffFailed
}

// MaxHandoffError is the longest failure reason kept, in bytes of UTF-8.
const MaxHandoffError = 500

// MaxHandoffAttempts is how many claims a handoff gets before an expired
// lease fails it instead of putting it back to pending.
const MaxHandoffAttempts = 3

// Handoff is one request to move a session to another place. A session's
// handoff state is that of its newest Handoff; older ones are history.
type Handoff struct {
	ID           int64
	SessionID    string
	State        HandoffState
	FromPlatform string
	Platform     string // destination platform
	Destination  string // destination address key, once known
	Error        string
	ClaimedBy    string
	LeaseUntil   time.Time
	Attempts     int
	RequestedAt  time.Time
	ClaimedAt    time.Time
	FinishedAt   time.Time
}

// Sessions stores sessions.
type Sessions interface {
	CreateSession(ctx context.Context, s Session) (Session, error)
	GetSession(ctx context.Context, id string) (Session, error)
	ListSessions(ctx context.Context, f SessionFilter) ([]Session, error)
	// SetTitle sanitizes the title (see SanitizeTitle) and stores it.
	SetTitle(ctx context.Context, id, title string) (Session, error)
	// ResolveSession finds a session of owner by exact id, exact title (the
	// newest "title #N" of its lineage), or unique id prefix.
	ResolveSession(ctx context.Context, ownerID, ref string) (Session, error)
	EndSession(ctx context.Context, id, reason string) error
	ReopenSession(ctx context.Context, id string) error
	DeleteSession(ctx context.Context, id string) error
	AddUsage(ctx context.Context, id string, u Usage) error
	SetModel(ctx context.Context, id, model string) error
	// SetVoice turns the session's spoken answers on or off (/voice).
	SetVoice(ctx context.Context, id string, on bool) error
}

// Usage is token counts to add to a session.
type Usage struct {
	InputTokens  int64
	OutputTokens int64
}

// TurnState is what a turn starts from (Messages.TurnStart).
type TurnState struct {
	Session    Session
	Draft      string
	Transcript []Message
}

// Messages stores transcripts.
type Messages interface {
	// AppendMessages stores msgs at the end of the session's transcript in
	// one transaction and returns them with ID, Seq and CreatedAt filled in.
	AppendMessages(ctx context.Context, sessionID string, msgs ...Message) ([]Message, error)
	// AppendMessagesWithUsage is AppendMessages that also adds u to the
	// session's token counts, in the same transaction: a model's answer
	// and what it cost are one write.
	AppendMessagesWithUsage(ctx context.Context, sessionID string, u Usage, msgs ...Message) ([]Message, error)
	// Transcript is the live transcript in order.
	Transcript(ctx context.Context, sessionID string) ([]Message, error)
	// TurnStart reads what a turn starts from, in one snapshot: the
	// session, its draft (SetDraft) and its live transcript.
	TurnStart(ctx context.Context, sessionID string) (TurnState, error)
	// History is every row ever written, superseded ones included, in order.
	History(ctx context.Context, sessionID string) ([]Message, error)
	// ReplaceTranscript atomically supersedes the live transcript with msgs
	// (for /undo and compression); the old rows stay in History.
	ReplaceTranscript(ctx context.Context, sessionID string, msgs []Message) ([]Message, error)
	// SetDraft keeps the partial answer of a model call as it is written,
	// so that a crash loses none of it; "" clears it. Storing any message
	// in the session, or replacing its transcript, clears it in the same
	// transaction: a draft is only ever the text of a call whose answer is
	// not stored. An unknown session is ErrNotFound.
	SetDraft(ctx context.Context, sessionID, text string) error
	// Draft is the session's kept partial answer; "" if none.
	Draft(ctx context.Context, sessionID string) (string, error)
	// FindPlatformMessage reports whether a message with that platform id was
	// stored already, for deduplicating redelivered events.
	FindPlatformMessage(ctx context.Context, platform, platformMsgID string) (Message, error)
	Search(ctx context.Context, q SearchQuery) ([]SearchHit, error)
}

// Bindings maps address keys to sessions.
type Bindings interface {
	// Bind attaches key to sessionID and returns the session it was bound to
	// before ("" if none).
	Bind(ctx context.Context, key, sessionID string) (previous string, err error)
	Unbind(ctx context.Context, key string) error
	LookupBinding(ctx context.Context, key string) (Binding, error)
	// BoundSession is the session bound at key, in one read; ErrNotFound
	// when key is unbound or its session is gone.
	BoundSession(ctx context.Context, key string) (Session, error)
	BindingsForSession(ctx context.Context, sessionID string) ([]Binding, error)
}

// Identities maps platform accounts to users.
type Identities interface {
	CreateUser(ctx context.Context, name string) (User, error)
	GetUser(ctx context.Context, id string) (User, error)
	// LinkIdentity attaches (platform, platform user id) to a user, replacing
	// any earlier link of that identity.
	LinkIdentity(ctx context.Context, id Identity) error
	// ClaimIdentity links (platform, platform user id) to id.UserID unless
	// it is linked already, and returns the link that holds: of processes
	// claiming one identity at once, the first wins and all are told so.
	ClaimIdentity(ctx context.Context, id Identity) (Identity, error)
	LookupIdentity(ctx context.Context, platform, platformUserID string) (Identity, error)
	IdentitiesForUser(ctx context.Context, userID string) ([]Identity, error)
}

// Handoffs is the per-session handoff state machine:
// none → pending → running → completed | failed.
type Handoffs interface {
	// RequestHandoff starts a handoff from none, completed or failed.
	// It returns ErrHandoffInFlight while one is pending or running.
	RequestHandoff(ctx context.Context, sessionID, fromPlatform, toPlatform string) (Handoff, error)
	// RequestHandoffTo is RequestHandoff to a destination known already
	// (the address key of the place that asked, for /continue).
	RequestHandoffTo(ctx context.Context, sessionID, fromPlatform, toPlatform, destination string) (Handoff, error)
	// HandoffState is the session's newest handoff; State is HandoffNone,
	// without error, for a session that has none or does not exist.
	HandoffState(ctx context.Context, sessionID string) (Handoff, error)
	GetHandoff(ctx context.Context, id int64) (Handoff, error)
	// PendingHandoffs lists pending handoffs oldest first, for the given
	// destination platforms (all if none given).
	PendingHandoffs(ctx context.Context, platforms ...string) ([]Handoff, error)
	// ClaimHandoff atomically moves a pending handoff to running for
	// claimer with a lease; ok is false if someone else got it first.
	ClaimHandoff(ctx context.Context, id int64, claimer string, lease time.Duration) (h Handoff, ok bool, err error)
	// RenewHandoff extends the lease; ok is false if claimer no longer holds it.
	RenewHandoff(ctx context.Context, id int64, claimer string, lease time.Duration) (ok bool, err error)
	// SetHandoffDestination records the address key the session moves to.
	SetHandoffDestination(ctx context.Context, id int64, claimer, destination string) (ok bool, err error)
	// CompleteHandoff and FailHandoff apply only for the current claimer and
	// only from running; ok says whether they did.
	CompleteHandoff(ctx context.Context, id int64, claimer string) (ok bool, err error)
	FailHandoff(ctx context.Context, id int64, claimer, reason string) (ok bool, err error)
	// ReapHandoffs takes back running handoffs whose lease ended before now:
	// back to pending, or failed once MaxHandoffAttempts claims were spent;
	// failed lists the ids of those, so their work can be taken back.
	ReapHandoffs(ctx context.Context, now time.Time) (requeued int, failed []int64, err error)
}

// Store is everything baton persists. Both the terminal and the gateway
// open the same store.
type Store interface {
	Sessions
	Messages
	Bindings
	Identities
	Handoffs
	Inbox
	Outbox
	Homes
	Pairings
	PlatformStates
	Notes
	Files
	Replicas
	Close() error
}

// TruncateReason cuts a failure reason to MaxHandoffError bytes
// without splitting a character.
func TruncateReason(reason string) string {
	if len(reason) <= MaxHandoffError {
		return reason
	}
	cut := MaxHandoffError
	for cut > 0 && !utf8.RuneStart(reason[cut]) {
		cut--
	}
	return reason[:cut]
}
