package agent

import (
	"context"
	"encoding/json"
	"strings"
)

// Decision is a person's answer to an ApprovalRequest. The zero value
// denies, so a forgotten answer is the safe one.
type Decision int

const (
	Deny             Decision = iota
	Once                      // run this call
	AlwaysForSession          // run this and every later call of the tool in the session
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

// shellMeta are characters that let one command line do more than its
// first words say (chaining, substitution, redirection), so a subject
// containing any of them never matches an allowlist prefix.
const shellMeta = ";&|`$<>(){}\\\n\r"

// allowed reports whether the allowlist lets a call run unasked. An entry
// "name" allows every call of the tool; "name:prefix" allows calls whose
// subject is prefix or starts with prefix followed by a space or slash
// (so "shell:git status" allows "git status -s" but not "git statusx"),
// provided the subject has no shell metacharacters ("git status; rm -rf ~"
// still asks).
func allowed(allow []string, tool, subject string) bool {
	subject = strings.TrimSpace(subject)
	for _, entry := range allow {
		name, prefix, hasPrefix := strings.Cut(strings.TrimSpace(entry), ":")
		if name != tool {
			continue
		}
		if !hasPrefix {
			return true
		}
		prefix = strings.TrimSpace(prefix)
		if prefix == "" || subject == "" || strings.ContainsAny(subject, shellMeta) {
			continue
		}
		rest, ok := strings.CutPrefix(subject, prefix)
		if !ok {
			continue
		}
		if rest == "" || strings.HasSuffix(prefix, "/") || rest[0] == ' ' || rest[0] == '/' {
			return true
		}
	}
	return false
}

// alwaysAllowed reports whether the person said "always" for this tool in
// this session.
func (a *Agent) alwaysAllowed(sessionID, tool string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.always[sessionTool{sessionID, tool}]
}

func (a *Agent) rememberAlways(sessionID, tool string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.always == nil {
		a.always = map[sessionTool]bool{}
	}
	a.always[sessionTool{sessionID, tool}] = true
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
