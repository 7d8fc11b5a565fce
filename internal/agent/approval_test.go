package agent_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/baton-agent/baton/internal/agent"
	"github.com/baton-agent/baton/internal/llm/llmtest"
	"github.com/baton-agent/baton/internal/store"
)

func writeCall(name string) llmtest.Call {
	return call("write_file", `{"path":"`+name+`","content":"x"}`)
}

func (e *env) exists(name string) bool {
	_, err := os.Stat(filepath.Join(e.dir, name))
	return err == nil
}

func TestApproveOnce(t *testing.T) {
	e := newEnv(t)
	ap := &scripted{answers: []agent.Decision{agent.Once, agent.Once}}
	e.agent.Approver = ap
	e.srv.Push(llmtest.Reply{ToolCalls: []llmtest.Call{writeCall("a.txt")}}, llmtest.Reply{Text: "done"})
	_, evs := e.mustRun(e.sid, "write a")
	e.srv.Push(llmtest.Reply{ToolCalls: []llmtest.Call{writeCall("b.txt")}}, llmtest.Reply{Text: "done"})
	e.mustRun(e.sid, "write b")

	if got := ap.subjects(); !reflect.DeepEqual(got, []string{"write_file a.txt", "write_file b.txt"}) {
		t.Errorf("asked %v", got)
	}
	if !e.exists("a.txt") || !e.exists("b.txt") {
		t.Error("approved writes did not happen")
	}
	need := evs.of(agent.EventApprovalNeeded)
	if len(need) != 1 || need[0].Approval.Subject != "a.txt" || need[0].Approval.SessionID != e.sid || need[0].Call.Name != "write_file" {
		t.Errorf("approval events = %+v", need)
	}
}

// "Always" covers exactly what the prompt showed: the same tool with the
// same subject, in the same session. Saying it for one shell command does
// not let every later command run.
func TestApproveAlwaysForSession(t *testing.T) {
	e := newEnv(t)
	ap := &scripted{answers: []agent.Decision{agent.AlwaysForSession}}
	e.agent.Approver = ap
	e.srv.Push(llmtest.Reply{ToolCalls: []llmtest.Call{
		call("shell", `{"command":"echo safe > safe.txt"}`),
		call("shell", `{"command":"echo safe > safe.txt"}`),
		call("shell", `{"command":"touch pwned"}`),
	}}, llmtest.Reply{Text: "done"})
	e.mustRun(e.sid, "go")
	if got := ap.subjects(); !reflect.DeepEqual(got, []string{"shell echo safe > safe.txt", "shell touch pwned"}) {
		t.Errorf("asked %v", got)
	}
	if !e.exists("safe.txt") || e.exists("pwned") {
		t.Error("always covered another command, or not the same one")
	}
	// The same command later in the session runs unasked...
	if err := os.Remove(filepath.Join(e.dir, "safe.txt")); err != nil {
		t.Fatal(err)
	}
	e.srv.Push(llmtest.Reply{ToolCalls: []llmtest.Call{call("shell", `{"command":"echo safe > safe.txt"}`)}}, llmtest.Reply{Text: "done"})
	e.mustRun(e.sid, "again")
	if n := len(ap.subjects()); n != 2 || !e.exists("safe.txt") {
		t.Errorf("asked %d times; safe.txt there: %v", n, e.exists("safe.txt"))
	}
	// ...and a write of the same path is another tool: it asks.
	e.srv.Push(llmtest.Reply{ToolCalls: []llmtest.Call{writeCall("echo safe > safe.txt")}}, llmtest.Reply{Text: "done"})
	e.mustRun(e.sid, "write")
	// In another session it asks again; the scripted approver now denies.
	other := e.newSession()
	e.srv.Push(llmtest.Reply{ToolCalls: []llmtest.Call{call("shell", `{"command":"echo safe > safe.txt"}`)}}, llmtest.Reply{Text: "done"})
	e.mustRun(other, "again")
	want := []string{"shell echo safe > safe.txt", "shell touch pwned", "write_file echo safe > safe.txt", "shell echo safe > safe.txt"}
	if got := ap.subjects(); !reflect.DeepEqual(got, want) {
		t.Errorf("asked %v, want %v", got, want)
	}
	// Forgetting the session's answers makes it ask again.
	e.agent.ForgetApprovals(e.sid)
	e.srv.Push(llmtest.Reply{ToolCalls: []llmtest.Call{call("shell", `{"command":"echo safe > safe.txt"}`)}}, llmtest.Reply{Text: "done"})
	e.mustRun(e.sid, "once more")
	if n := len(ap.subjects()); n != 5 {
		t.Errorf("asked %d times", n)
	}
}

func TestApproveDeny(t *testing.T) {
	e := newEnv(t)
	ap := &scripted{answers: []agent.Decision{agent.Deny}}
	e.agent.Approver = ap
	e.srv.Push(
		llmtest.Reply{ToolCalls: []llmtest.Call{{ID: "c1", Name: "shell", Args: `{"command":"touch pwned"}`}}},
		llmtest.Reply{Text: "OK, I won't."},
	)
	res, evs := e.mustRun(e.sid, "touch it")
	if res.Text != "OK, I won't." {
		t.Errorf("text = %q", res.Text)
	}
	if e.exists("pwned") {
		t.Error("denied command ran")
	}
	if got := ap.subjects(); !reflect.DeepEqual(got, []string{"shell touch pwned"}) {
		t.Errorf("asked %v", got)
	}
	sameRows(t, e.transcript(e.sid), []row{
		{Role: store.RoleUser, Content: "touch it"},
		{Role: store.RoleAssistant, Calls: "shell"},
		{Role: store.RoleTool, Content: agent.DeniedResult, CallID: "c1"},
		{Role: store.RoleAssistant, Content: "OK, I won't."},
	})
	if len(evs.of(agent.EventToolStarted)) != 0 {
		t.Error("a denied tool was reported as started")
	}
}

func TestApproveAllowlist(t *testing.T) {
	e := newEnv(t)
	ap := &scripted{}
	e.agent.Approver = ap
	e.agent.Allow = []string{"shell:echo hi", "shell:ls *", "write_file"}
	e.srv.Push(
		llmtest.Reply{ToolCalls: []llmtest.Call{
			call("shell", `{"command":"echo hi"}`),
			writeCall("free.txt"),
			call("shell", `{"command":"echo hi; touch pwned"}`),
			call("shell", `{"command":"echo hi there"}`),
			call("shell", `{"command":"ls -a"}`),
			call("edit_file", `{"path":"free.txt","old_string":"x","new_string":"y"}`),
			writeCall(".git/config"),
			writeCall("../outside.txt"),
		}},
		llmtest.Reply{Text: "done"},
	)
	e.mustRun(e.sid, "go")
	want := []string{"shell echo hi; touch pwned", "shell echo hi there", "edit_file free.txt", "write_file .git/config",
		"write_file " + filepath.Join(filepath.Dir(e.dir), "outside.txt")}
	if got := ap.subjects(); !reflect.DeepEqual(got, want) {
		t.Errorf("asked %v, want %v", got, want)
	}
	msgs := e.transcript(e.sid)
	if msgs[2].Content != "hi\n[exit code 0]" || !e.exists("free.txt") || e.exists("pwned") || e.exists(".git/config") {
		t.Errorf("shell result %q", msgs[2].Content)
	}
}

// Reading and listing run freely inside the working directory and ask
// anywhere else.
func TestReadOutsideAsks(t *testing.T) {
	e := newEnv(t)
	ap := &scripted{}
	e.agent.Approver = ap
	secret := filepath.Join(t.TempDir(), "secret.txt")
	if err := os.WriteFile(secret, []byte("s3cret"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(e.dir, "here.txt"), []byte("here"), 0o600); err != nil {
		t.Fatal(err)
	}
	e.agent.Allow = []string{"read_file", "list_dir"} // bare names cover only the inside
	e.srv.Push(llmtest.Reply{ToolCalls: []llmtest.Call{
		call("read_file", `{"path":"here.txt"}`),
		call("read_file", `{"path":"`+secret+`"}`),
		call("list_dir", `{"path":"/"}`),
		call("list_dir", `{}`),
	}}, llmtest.Reply{Text: "done"})
	e.mustRun(e.sid, "look around")
	if got, want := ap.subjects(), []string{"read_file " + secret, "list_dir /"}; !reflect.DeepEqual(got, want) {
		t.Errorf("asked %v, want %v", got, want)
	}
	msgs := e.transcript(e.sid)
	if msgs[2].Content != "here" || msgs[3].Content != agent.DeniedResult || msgs[4].Content != agent.DeniedResult || !strings.Contains(msgs[5].Content, "here.txt") {
		t.Errorf("rows = %+v", rows(t, msgs))
	}
	// A rule naming the outside path lets that one through.
	e.agent.Allow = []string{"read_file:" + secret}
	e.srv.Push(llmtest.Reply{ToolCalls: []llmtest.Call{call("read_file", `{"path":"`+secret+`"}`)}}, llmtest.Reply{Text: "done"})
	e.mustRun(e.sid, "read it")
	if msgs := e.transcript(e.sid); msgs[len(msgs)-2].Content != "s3cret" {
		t.Errorf("named path: %q", msgs[len(msgs)-2].Content)
	}
}

// write_file:<dir> does not follow a symlink out of the directory.
func TestAllowedDirSymlinkEscape(t *testing.T) {
	e := newEnv(t)
	ap := &scripted{}
	e.agent.Approver = ap
	outside := t.TempDir()
	if err := os.MkdirAll(filepath.Join(e.dir, "docs"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(e.dir, "docs", "link")); err != nil {
		t.Fatal(err)
	}
	e.agent.Allow = []string{"write_file:docs/"}
	e.srv.Push(llmtest.Reply{ToolCalls: []llmtest.Call{writeCall("docs/ok.md"), writeCall("docs/link/escaped")}}, llmtest.Reply{Text: "done"})
	e.mustRun(e.sid, "write")
	if !e.exists("docs/ok.md") {
		t.Error("a write the rule allows did not happen")
	}
	if _, err := os.Stat(filepath.Join(outside, "escaped")); err == nil {
		t.Fatal("a write escaped write_file:docs/ through a symlink")
	}
	realOutside, _ := filepath.EvalSymlinks(outside)
	if got := ap.subjects(); !reflect.DeepEqual(got, []string{"write_file " + filepath.Join(realOutside, "escaped")}) {
		t.Errorf("asked %v", got)
	}
}

// Without an Approver, tools that need approval are denied.
func TestNoApproverDenies(t *testing.T) {
	e := newEnv(t)
	e.srv.Push(llmtest.Reply{ToolCalls: []llmtest.Call{writeCall("a.txt")}}, llmtest.Reply{Text: "done"})
	e.mustRun(e.sid, "go")
	if msgs := e.transcript(e.sid); msgs[2].Content != agent.DeniedResult || e.exists("a.txt") {
		t.Errorf("result %q", msgs[2].Content)
	}
}

// An approver that fails ends the turn; every call still gets a result.
func TestApproverError(t *testing.T) {
	e := newEnv(t)
	broken := errors.New("terminal closed")
	e.agent.Approver = agent.ApproverFunc(func(context.Context, agent.ApprovalRequest) (agent.Decision, error) {
		return agent.Deny, broken
	})
	e.srv.Push(llmtest.Reply{ToolCalls: []llmtest.Call{writeCall("a.txt"), call("list_dir", `{}`)}})
	_, _, err := e.run(context.Background(), e.sid, "go")
	if !errors.Is(err, broken) {
		t.Fatalf("err = %v", err)
	}
	msgs := e.transcript(e.sid)
	validTranscript(t, msgs)
	if len(msgs) != 4 || msgs[3].Content != "error: not run: ask approval for write_file: terminal closed" {
		t.Errorf("rows = %+v", rows(t, msgs))
	}
}

// Cancelling while the approver waits ends the turn at once.
func TestCancelDuringApproval(t *testing.T) {
	e := newEnv(t)
	e.agent.Approver = agent.ApproverFunc(func(ctx context.Context, _ agent.ApprovalRequest) (agent.Decision, error) {
		<-ctx.Done()
		return agent.Deny, ctx.Err()
	})
	e.srv.Push(llmtest.Reply{ToolCalls: []llmtest.Call{writeCall("a.txt"), writeCall("b.txt")}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	evs := &events{on: func(ev agent.Event) {
		if ev.Kind == agent.EventApprovalNeeded {
			cancel()
		}
	}}
	_, err := e.agent.Run(ctx, e.sid, store.Message{Role: store.RoleUser, Content: "go"}, evs.emit)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
	msgs := e.transcript(e.sid)
	validTranscript(t, msgs)
	if msgs[2].Content != agent.CancelledResult || msgs[3].Content != agent.CancelledResult || e.exists("a.txt") {
		t.Errorf("rows = %+v", rows(t, msgs))
	}
}
