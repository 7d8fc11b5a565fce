package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/llm/llmtest"
	"github.com/baton-agent/baton/internal/store"
	"github.com/baton-agent/baton/internal/store/sqlite"
)

// modelEnv points baton at the fake model server.
func modelEnv(srv *llmtest.Server) []string {
	return []string{"OPENAI_BASE_URL=" + srv.URL + "/v1", "OPENAI_API_KEY=test-key", "BATON_MODEL=fake-model"}
}

func openStore(t *testing.T, home string) *sqlite.Store {
	t.Helper()
	st, err := sqlite.Open(t.Context(), filepath.Join(home, "baton", sqlite.FileName))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// threeTurns scripts the model and drives the terminal through three turns,
// the middle one a shell command that asks approval and is allowed once.
func threeTurns(srv *llmtest.Server, tm *term) {
	tm.tb.Helper()
	srv.Push(
		llmtest.Reply{Text: "Hi! How can I help?"},
		llmtest.Reply{ToolCalls: []llmtest.Call{{Name: "shell", Args: `{"command":"echo baton-tool-ok > proof.txt && cat proof.txt"}`}}},
		llmtest.Reply{Text: "The check printed **baton-tool-ok**."},
		llmtest.Reply{Text: "You are welcome."},
	)
	tm.expect("baton · openai · fake-model")
	tm.line("hello there")
	tm.expect("Hi! How can I help?")
	tm.line("please run the check")
	tm.expect("baton wants to run shell: echo baton-tool-ok > proof.txt && cat proof.txt")
	tm.expect("allow? [o]nce, [a]lways (exactly this, this session), [d]eny")
	tm.answer("o")
	tm.expect("✓ shell: echo baton-tool-ok")
	tm.expect("The check printed baton-tool-ok.")
	tm.line("thanks")
	tm.expect("You are welcome.")
}

// TestTerminalChatAndContinue is the terminal's must-show: three turns in
// the real binary in a real terminal, one with a tool call that asks for
// approval, /title, /quit; then `baton -c` shows the same transcript and
// continues it in the same stored session.
func TestTerminalChatAndContinue(t *testing.T) {
	srv := llmtest.Start(t)
	home, work := t.TempDir(), t.TempDir()
	env := cleanEnv(home, modelEnv(srv)...)

	tm := startTerm(t, env, work)
	threeTurns(srv, tm)
	tm.line("/title e2e chat")
	tm.expect("Title set: e2e chat")
	tm.line("/quit")
	tm.expect("saved — continue it with `baton -c`")
	if err := tm.wait(); err != nil {
		t.Fatalf("baton exited with %v; screen:\n%s", err, tm.Screen())
	}
	if data, err := os.ReadFile(filepath.Join(work, "proof.txt")); err != nil || strings.TrimSpace(string(data)) != "baton-tool-ok" {
		t.Fatalf("the approved command did not run in the working directory: %q, %v", data, err)
	}

	// baton -c: the same transcript comes back and the conversation goes on.
	srv.Push(llmtest.Reply{Text: "Still here, same conversation."})
	tm = startTerm(t, env, work, "-c")
	tm.expect(`Continuing "e2e chat"`)
	tm.expect("hello there")
	tm.expect("Hi! How can I help?")
	tm.expect("please run the check")
	tm.expect("shell: echo baton-tool-ok")
	tm.expect("The check printed baton-tool-ok.")
	tm.expect("thanks")
	tm.expect("You are welcome.")
	tm.line("one more thing")
	tm.expect("Still here, same conversation.")
	tm.line("/exit")
	if err := tm.wait(); err != nil {
		t.Fatalf("baton -c exited with %v; screen:\n%s", err, tm.Screen())
	}

	// The store: one session, titled, holding all four turns in order.
	st := openStore(t, home)
	ss, err := st.ListSessions(t.Context(), store.SessionFilter{})
	if err != nil || len(ss) != 1 {
		t.Fatalf("sessions: %+v, %v", ss, err)
	}
	if ss[0].Title != "e2e chat" || ss[0].Platform != "cli" {
		t.Errorf("session %+v", ss[0])
	}
	msgs, err := st.Transcript(t.Context(), ss[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	var users []string
	var tool store.Message
	for _, m := range msgs {
		switch m.Role {
		case store.RoleUser:
			users = append(users, m.Content)
		case store.RoleTool:
			tool = m
		}
	}
	if got := strings.Join(users, "|"); got != "hello there|please run the check|thanks|one more thing" {
		t.Errorf("user turns %q", got)
	}
	if tool.ToolName != "shell" || !strings.Contains(tool.Content, "baton-tool-ok") {
		t.Errorf("tool result %+v", tool)
	}
	if last := msgs[len(msgs)-1]; last.Role != store.RoleAssistant || last.Content != "Still here, same conversation." {
		t.Errorf("last message %+v", last)
	}
	// And the model saw the earlier conversation when asked the new turn.
	reqs := srv.Requests()
	lastReq := reqs[len(reqs)-1]
	if n := len(lastReq.Messages()); n < len(msgs)-1 {
		t.Errorf("the continued turn sent %d messages to the model; the transcript has %d", n, len(msgs))
	}
	if lastReq.LastUserText() != "one more thing" {
		t.Errorf("last user text sent: %q", lastReq.LastUserText())
	}
}

// TestPrintMode is `baton -p` for scripts: the answer alone on stdout,
// stdin added to the prompt, approvals denied with a note, errors on
// stderr with a failing exit code.
func TestPrintMode(t *testing.T) {
	srv := llmtest.Start(t)
	home, work := t.TempDir(), t.TempDir()
	env := cleanEnv(home, modelEnv(srv)...)
	run := func(stdin string, args ...string) (string, string, error) {
		t.Helper()
		cmd := exec.Command(batonBin, args...)
		cmd.Env, cmd.Dir = env, work
		cmd.Stdin = strings.NewReader(stdin)
		var out, errOut strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err := cmd.Run()
		return out.String(), errOut.String(), err
	}

	out, errOut, err := run("", "-p", "what is two plus two")
	if err != nil || out != "echo: what is two plus two\n" {
		t.Fatalf("-p: stdout %q stderr %q err %v", out, errOut, err)
	}

	out, _, err = run("line one\nline two\n", "-p", "summarize this:")
	if err != nil || !strings.Contains(out, "summarize this:") || !strings.Contains(out, "line two") {
		t.Fatalf("-p with stdin: %q, %v", out, err)
	}

	out, _, err = run("only stdin")
	if err != nil || out != "echo: only stdin\n" {
		t.Fatalf("stdin alone: %q, %v", out, err)
	}

	srv.Push(
		llmtest.Reply{ToolCalls: []llmtest.Call{{Name: "write_file", Args: `{"path":"x.txt","content":"no"}`}}},
		llmtest.Reply{Text: "I could not write it."},
	)
	out, errOut, err = run("", "-p", "write x.txt")
	if err != nil || out != "I could not write it.\n" || !strings.Contains(errOut, "denied write_file: x.txt") {
		t.Fatalf("denied tool: stdout %q stderr %q err %v", out, errOut, err)
	}
	if _, err := os.Stat(filepath.Join(work, "x.txt")); !os.IsNotExist(err) {
		t.Fatalf("a denied write happened: %v", err)
	}

	srv.Push(llmtest.Fail{Status: 401})
	out, errOut, err = run("", "-p", "hello?")
	if err == nil || out != "" || !strings.Contains(errOut, "HTTP 401") || !strings.Contains(errOut, "check the API key") {
		t.Fatalf("401: stdout %q stderr %q err %v", out, errOut, err)
	}

	// -c -p continues the latest session: the model sees the earlier turn.
	out, _, err = run("", "-c", "-p", "and again")
	if err != nil || out != "echo: and again\n" {
		t.Fatalf("-c -p: %q, %v", out, err)
	}
	reqs := srv.Requests()
	if n := len(reqs[len(reqs)-1].Messages()); n < 3 {
		t.Errorf("-c -p sent %d messages; want the earlier turn too", n)
	}
}

// TestFreshMachineOffline: no key, no config: the chat starts with the
// offline responder and says so.
func TestFreshMachineOffline(t *testing.T) {
	home, work := t.TempDir(), t.TempDir()
	env := cleanEnv(home)
	tm := startTerm(t, env, work)
	tm.expect("No model is configured")
	tm.line("hi")
	tm.expect(`You said: "hi"`)
	tm.line("/sessions")
	tm.expect("the terminal since")
	tm.expect("› ")
	tm.waitFor("prompt drawn", func(raw string) bool {
		return strings.LastIndex(raw, "\x1b[?25h") > strings.LastIndex(raw, "\x1b[6n")
	})
	tm.send("\x04") // Ctrl-D
	tm.expect("saved")
	if err := tm.wait(); err != nil {
		t.Fatalf("exit: %v\n%s", err, tm.Screen())
	}
}

// TestTerminalCtrlC: Ctrl-C while the model is answering stops the turn,
// keeps the question, and the chat goes on.
func TestTerminalCtrlC(t *testing.T) {
	srv := llmtest.Start(t)
	home, work := t.TempDir(), t.TempDir()
	env := cleanEnv(home, modelEnv(srv)...)
	// A model that would take an hour to answer the slow question: only
	// Ctrl-C ends that turn. Other questions get the echo.
	asked := make(chan struct{})
	var once sync.Once
	srv.SetDefault(func(r llmtest.Request) llmtest.Step {
		if r.LastUserText() == "a slow question" {
			once.Do(func() { close(asked) })
			return llmtest.Reply{Text: "never finished", Delay: time.Hour}
		}
		return llmtest.EchoReply(r)
	})
	tm := startTerm(t, env, work)
	tm.line("a slow question")
	tm.expect("thinking…") // the turn runs; the terminal is back in cooked mode
	select {               // and the model has the question
	case <-asked:
	case <-time.After(hangGuard):
		t.Fatalf("the model never got the question:\n%s", tm.Screen())
	}
	tm.send("\x03")
	tm.expect("⏹ interrupted — everything said so far is kept")
	tm.line("still there?")
	tm.expect("echo: still there?")
	tm.line("/quit")
	if err := tm.wait(); err != nil {
		t.Fatalf("exit: %v\n%s", err, tm.Screen())
	}
	st := openStore(t, home)
	ss, err := st.ListSessions(t.Context(), store.SessionFilter{})
	if err != nil || len(ss) != 1 {
		t.Fatalf("sessions %+v, %v", ss, err)
	}
	msgs, _ := st.Transcript(t.Context(), ss[0].ID)
	var got []string
	for _, m := range msgs {
		got = append(got, string(m.Role)+":"+m.Content)
	}
	if strings.Join(got, "|") != "user:a slow question|user:still there?|assistant:echo: still there?" {
		t.Fatalf("transcript %q", got)
	}
}

// TestSessionsCommands drives `baton sessions …` on sessions made by -p.
func TestSessionsCommands(t *testing.T) {
	srv := llmtest.Start(t)
	home, work := t.TempDir(), t.TempDir()
	env := cleanEnv(home, modelEnv(srv)...)
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(batonBin, args...)
		cmd.Env, cmd.Dir = env, work
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("baton %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	run("-p", "the walrus said")
	st := openStore(t, home)
	ss, err := st.ListSessions(t.Context(), store.SessionFilter{})
	if err != nil || len(ss) != 1 {
		t.Fatalf("sessions %+v, %v", ss, err)
	}
	id := ss[0].ID[:8]
	if out := run("sessions", "list"); !strings.Contains(out, id) || !strings.Contains(out, "the terminal since") {
		t.Errorf("list:\n%s", out)
	}
	if out := run("sessions", "rename", id, "Walrus", "notes"); !strings.Contains(out, `Renamed "Walrus notes"`) {
		t.Errorf("rename:\n%s", out)
	}
	if out := run("sessions", "show", "Walrus notes"); !strings.Contains(out, "› the walrus said") || !strings.Contains(out, "echo: the walrus said") {
		t.Errorf("show:\n%s", out)
	}
	if out := run("sessions", "search", "walrus"); !strings.Contains(out, "[walrus]") || !strings.Contains(out, "Walrus notes") {
		t.Errorf("search:\n%s", out)
	}
	if out := run("sessions", "export", id); !strings.Contains(out, `"Title": "Walrus notes"`) || !strings.Contains(out, `"Content": "the walrus said"`) {
		t.Errorf("export:\n%s", out)
	}
	if out := run("sessions", "delete", id); !strings.Contains(out, "Deleted") {
		t.Errorf("delete:\n%s", out)
	}
	if out := run("sessions", "list"); !strings.Contains(out, "No sessions yet") {
		t.Errorf("list after delete:\n%s", out)
	}
	cmd := exec.Command(batonBin, "sessions", "show", "nope")
	cmd.Env, cmd.Dir = env, work
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), `session "nope": `) {
		t.Errorf("show of an unknown session: %v\n%s", err, out)
	}
}

// TestTerminalCompletionAndHistory: Tab completes a slash command, and the
// line history survives into the next run (Up recalls the last line).
func TestTerminalCompletionAndHistory(t *testing.T) {
	home, work := t.TempDir(), t.TempDir()
	env := cleanEnv(home)
	tm := startTerm(t, env, work)
	tm.expect("No model is configured")
	tm.line("remember this line")
	tm.expect(`You said: "remember this line"`)
	tm.expect("› ")
	tm.waitFor("prompt drawn", func(raw string) bool {
		return strings.LastIndex(raw, "\x1b[?25h") > strings.LastIndex(raw, "\x1b[6n")
	})
	tm.send("/sess\t")
	tm.waitFor("the completed command", func(raw string) bool {
		i := strings.LastIndex(raw, "/sess")
		return i >= 0 && strings.Contains(ansi.ReplaceAllString(raw[i:], ""), "/sessions")
	})
	tm.send("\r")
	tm.expect("/resume <id or title> switches to one.") // /sessions ran
	tm.line("/quit")
	if err := tm.wait(); err != nil {
		t.Fatalf("exit: %v\n%s", err, tm.Screen())
	}

	tm = startTerm(t, env, work)
	tm.expect("No model is configured")
	tm.expect("› ")
	tm.waitFor("prompt drawn", func(raw string) bool {
		return strings.LastIndex(raw, "\x1b[?25h") > strings.LastIndex(raw, "\x1b[6n")
	})
	tm.send("\x1b[A") // Up: the last line of the previous run
	tm.waitFor("the recalled line", func(raw string) bool {
		i := strings.LastIndex(raw, "\x1b[6n")
		return i >= 0 && strings.Contains(ansi.ReplaceAllString(raw[i:], ""), "/quit")
	})
	tm.send("\x1b[A") // and the one before it
	tm.waitFor("the line before", func(raw string) bool {
		i := strings.LastIndex(raw, "\x1b[6n")
		return i >= 0 && strings.Contains(ansi.ReplaceAllString(raw[i:], ""), "/sessions")
	})
	tm.send("\x03\x04")
}
