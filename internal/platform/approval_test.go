package platform

import (
	"strings"
	"testing"
	"time"
)

func TestApprovalAnswer(t *testing.T) {
	for text, want := range map[string]string{
		"/approve": AnswerApprove, "/Yes": AnswerApprove, " /once\n": AnswerApprove,
		"/always": AnswerAlways, "/deny": AnswerDeny, "/NO": AnswerDeny,
		"/approve now": "", "approve": "", "//approve": "", "/": "", "/approved": "", "/yes\tplease": "", "/handoff": "",
	} {
		got, ok := ApprovalAnswer(text)
		if got != want || ok != (want != "") {
			t.Errorf("ApprovalAnswer(%q) = %q %v, want %q", text, got, ok, want)
		}
	}
}

func TestApprovalWording(t *testing.T) {
	q := ApprovalQuestion("shell", "rm -rf build")
	for _, a := range ApprovalAnswers() {
		if !strings.Contains(q, "/"+a) {
			t.Errorf("the question %q does not offer /%s", q, a)
		}
	}
	if n := ApprovalExpired("shell", 10*time.Minute); !strings.Contains(n, "shell") || !strings.Contains(n, "10m0s") {
		t.Errorf("expired note %q", n)
	}
}
