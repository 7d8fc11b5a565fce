package platform

import (
	"context"
	"time"
)

// MessageKind says what a message is beyond its text. The empty kind is
// an ordinary answer.
type MessageKind string

// Message kinds.
const (
	// MessageApproval asks whether a tool may run (Message.Approval).
	MessageApproval MessageKind = "approval"
	// MessageApprovalExpired tells that an approval question went
	// unanswered, so the tool did not run (Message.Approval.Tool).
	MessageApprovalExpired MessageKind = "approval-expired"
	// MessageElsewhere tells a place that the conversation is held in
	// another place, or on its way there (Message.Place): what is said
	// here meanwhile is kept until /continue.
	MessageElsewhere MessageKind = "elsewhere"
	// MessageGreeting is a handoff's first message at its destination.
	MessageGreeting MessageKind = "greeting"
	// MessageNotice is something baton tells about the conversation.
	MessageNotice MessageKind = "notice"
)

// Message is a message with what it is. Text is always set: the markdown
// a place shows that does not tell kinds apart; a MessageSender may show
// the kind from its data instead, never from the words.
type Message struct {
	Text string
	Kind MessageKind
	// Approval is the question a MessageApproval asks, or the one a
	// MessageApprovalExpired says went unanswered.
	Approval Approval
	// Place names, for people, where the conversation is (or is going)
	// for a MessageElsewhere.
	Place string
}

// Approval is an approval question's data.
type Approval struct {
	Tool    string    // the tool asking to run
	Subject string    // what the call acts on: a command line, a path, its arguments
	Choices []string  // the answers offered (ApprovalAnswers), without the slash
	Expires time.Time // when the question is denied unanswered; zero: not told
}

// MessageSender sends a message knowing its kind, in one try, as Send
// does (the same failure classes, the same splitting beforehand). The
// gateway calls it instead of Send on an adapter that has it.
type MessageSender interface {
	SendMessage(ctx context.Context, to Address, m Message) (msgID string, err error)
}
