package platform

import (
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"
)

// An approval question is sent as a message of kind MessageApproval: its
// text words it for every service, and its data (Message.Approval) lets a
// place with buttons (the web page) offer the answers instead. Nothing
// reads the question back from its words.

// The answers to an approval question, each typed as a slash command.
const (
	AnswerApprove = "approve" // this once
	AnswerAlways  = "always"  // exactly this call, for the rest of the session
	AnswerDeny    = "deny"
)

// ApprovalAnswers are the answers to an approval question, in the order
// they are offered.
func ApprovalAnswers() []string { return []string{AnswerApprove, AnswerAlways, AnswerDeny} }

// ApprovalAliases are the other words that give answer ("/yes" approves).
// The command registry names its commands so, and ApprovalAnswer reads
// them, so a place that shows who answered agrees with the gateway.
func ApprovalAliases(answer string) []string {
	switch answer {
	case AnswerApprove:
		return []string{"yes", "once"}
	case AnswerDeny:
		return []string{"no"}
	}
	return nil
}

// ApprovalAnswer is the answer a typed line gives to an approval question
// ("/approve", "/Yes", " /no "), as the gateway's command parser reads it;
// ok is false for anything else (arguments after it included).
func ApprovalAnswer(text string) (answer string, ok bool) {
	name, ok := strings.CutPrefix(strings.TrimSpace(text), "/")
	if !ok || name == "" || strings.ContainsFunc(name, unicode.IsSpace) {
		return "", false
	}
	name = strings.ToLower(name)
	for _, a := range ApprovalAnswers() {
		if name == a || slices.Contains(ApprovalAliases(a), name) {
			return a, true
		}
	}
	return "", false
}

const approvalTail = "\nReply /approve (this once), /always (exactly this, for this session) or /deny."

// ApprovalQuestion words the question whether tool may run on subject (a
// command line, a path, or the call's arguments), for a place that shows
// text.
func ApprovalQuestion(tool, subject string) string {
	return fmt.Sprintf("May I run **%s**?\n```\n%s\n```%s", tool, subject, approvalTail)
}

// ApprovalExpired words the note that nobody answered the question about
// tool within after, so it did not run.
func ApprovalExpired(tool string, after time.Duration) string {
	return "No answer within " + after.String() + ", so " + tool + " did not run. Ask again when you are back."
}
