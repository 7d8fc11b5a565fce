package agent

import (
	"context"
	"encoding/json"
)

// Decision is a person's answer to an ApprovalRequest. The zero value
// denies, so a forgotten answer is the safe one.
type Decision int

const (
	Deny             Decision = iota
	Once                      // run this call
	AlwaysForSession          // run this and every later call with the same subject in the session
)

func (d Decision) String() string {
	switch d {
	case Once:
		return "once"
	case AlwaysForSession:
		return "always"
	}
	return "deny"
}

// ApprovalRequest asks whether a tool call may run.
type ApprovalRequest struct {
	SessionID string
	Tool      string
	Subject   string          // what the call acts on: the command, the path; "" if unknown
	Arguments json.RawMessage // as the model sent them
	CallID    string
}

// Approver puts approval requests to a person. Approve should honour ctx:
// a cancelled turn must not wait for an answer.
type Approver interface {
	Approve(ctx context.Context, req ApprovalRequest) (Decision, error)
}

// ApproverFunc adapts a function to Approver.
type ApproverFunc func(ctx context.Context, req ApprovalRequest) (Decision, error)

// Approve calls f.
func (f ApproverFunc) Approve(ctx context.Context, req ApprovalRequest) (Decision, error) {
	return f(ctx, req)
}

// DeniedResult is the tool result the model gets when a person says no.
const DeniedResult = "denied by user"

// alwaysAllowed reports whether the person said "always" in this session
// for exactly this call: the same tool and the same subject, as the prompt
// showed it. A call with no subject is never covered.
func (a *Agent) alwaysAllowed(sessionID, tool, subject string) bool {
	if subject == "" {
		return false
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.always[approvedCall{sessionID, tool, subject}]
}

func (a *Agent) rememberAlways(sessionID, tool, subject string) {
	if subject == "" {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.always == nil {
		a.always = map[approvedCall]bool{}
	}
	a.always[approvedCall{sessionID, tool, subject}] = true
}

// ForgetApprovals drops the session's "always" answers, e.g. on /new.
func (a *Agent) ForgetApprovals(sessionID string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for k := range a.always {
		if k.session == sessionID {
			delete(a.always, k)
		}
	}
}
