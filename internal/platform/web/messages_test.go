package web

import (
	"time"

	"github.com/baton-agent/baton/internal/platform"
)

// question is an approval question as the gateway sends it.
func question(tool, subject string) platform.Message {
	return platform.Message{Text: platform.ApprovalQuestion(tool, subject), Kind: platform.MessageApproval,
		Approval: platform.Approval{Tool: tool, Subject: subject, Choices: platform.ApprovalAnswers()}}
}

// expired is the note that the question about tool went unanswered.
func expired(tool string, after time.Duration) platform.Message {
	return platform.Message{Text: platform.ApprovalExpired(tool, after), Kind: platform.MessageApprovalExpired,
		Approval: platform.Approval{Tool: tool}}
}

// elsewhere is the line saying the conversation is held in place.
func elsewhere(place, text string) platform.Message {
	return platform.Message{Text: text, Kind: platform.MessageElsewhere, Place: place}
}
