package platform

import (
	"fmt"
	"strings"
	"time"
)

// An approval question is sent as an ordinary message, so every service
// shows it; these functions keep its wording in one place, so a place
// with buttons (the web page) can recognise it and offer them instead.

const (
	approvalLead = "May I run **"
	approvalTail = "\nReply /approve (this once), /always (exactly this, for this session) or /deny."
	expiredLead  = "No answer within "
	expiredMid   = ", so "
	expiredTail  = " did not run. Ask again when you are back."
)

// ApprovalQuestion asks the person whether tool may run on subject (a
// command line, a path, or the call's arguments).
func ApprovalQuestion(tool, subject string) string {
	return fmt.Sprintf("%s%s**?\n```\n%s\n```%s", approvalLead, tool, subject, approvalTail)
}

// ParseApprovalQuestion recognises an ApprovalQuestion.
func ParseApprovalQuestion(text string) (tool, subject string, ok bool) {
	rest, ok := strings.CutPrefix(text, approvalLead)
	if !ok {
		return "", "", false
	}
	rest, ok = strings.CutSuffix(rest, approvalTail)
	if !ok {
		return "", "", false
	}
	tool, rest, ok = strings.Cut(rest, "**?\n```\n")
	if !ok {
		return "", "", false
	}
	subject, ok = strings.CutSuffix(rest, "\n```")
	return tool, subject, ok
}

// ApprovalExpired tells that nobody answered the question about tool
// within after, so it did not run.
func ApprovalExpired(tool string, after time.Duration) string {
	return expiredLead + after.String() + expiredMid + tool + expiredTail
}

// ParseApprovalExpired recognises an ApprovalExpired note.
func ParseApprovalExpired(text string) (tool string, ok bool) {
	rest, ok := strings.CutPrefix(text, expiredLead)
	if !ok {
		return "", false
	}
	rest, ok = strings.CutSuffix(rest, expiredTail)
	if !ok {
		return "", false
	}
	_, tool, ok = strings.Cut(rest, expiredMid)
	return tool, ok
}
