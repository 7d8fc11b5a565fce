package platform

import (
	"testing"
	"time"
)

func TestApprovalWordsRoundTrip(t *testing.T) {
	for _, c := range []struct{ tool, subject string }{
		{"shell", "rm -rf build"},
		{"write_file", "a/b.txt"},
		{"shell", "printf '**?\\n```\\n'\nsecond line"}, // the markers inside the subject
	} {
		q := ApprovalQuestion(c.tool, c.subject)
		tool, subject, ok := ParseApprovalQuestion(q)
		if !ok || tool != c.tool || subject != c.subject {
			t.Errorf("ParseApprovalQuestion(%q) = %q %q %v", q, tool, subject, ok)
		}
	}
	for _, text := range []string{"May I run **shell**? please", "hello", ApprovalExpired("shell", time.Minute)} {
		if _, _, ok := ParseApprovalQuestion(text); ok {
			t.Errorf("%q taken for a question", text)
		}
	}
	note := ApprovalExpired("shell", 10*time.Minute)
	if tool, ok := ParseApprovalExpired(note); !ok || tool != "shell" {
		t.Errorf("ParseApprovalExpired(%q) = %q %v", note, tool, ok)
	}
	if _, ok := ParseApprovalExpired(ApprovalQuestion("shell", "ls")); ok {
		t.Error("a question taken for an expiry")
	}
}
