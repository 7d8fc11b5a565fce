package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/baton-agent/baton/internal/llm/llmtest"
	"github.com/baton-agent/baton/internal/testutil"
)

// TestTerminalMultilineInput: the terminal is asked to bracket pastes, a
// pasted block of three lines is one message, and Alt+Enter (Esc Enter)
// and Ctrl+J break the line instead of sending it.
func TestTerminalMultilineInput(t *testing.T) {
	srv := llmtest.Start(t)
	home, work := t.TempDir(), t.TempDir()
	tm := startTerm(t, cleanEnv(home, modelEnv(srv)...), work)
	tm.expect("› ")
	tm.waitFor("bracketed paste turned on", func(raw string) bool {
		return strings.Contains(raw, "\x1b[?2004h") && strings.LastIndex(raw, "\x1b[?25h") > strings.LastIndex(raw, "\x1b[6n")
	})

	// What a terminal sends for a pasted block once bracketing is on; its
	// line breaks come as \r, like Enter.
	tm.answer("\x1b[200~first pasted line\rsecond pasted line\rthird pasted line\x1b[201~")
	tm.expect("echo: first pasted line")
	tm.expect("third pasted line")
	reqs := srv.Requests()
	if len(reqs) != 1 || reqs[0].LastUserText() != "first pasted line\nsecond pasted line\nthird pasted line" {
		t.Fatalf("the paste was not one message: %d requests, last %q", len(reqs), reqs[len(reqs)-1].LastUserText())
	}

	tm.expect("› ")
	tm.answer("alpha\x1b\rbeta\ngamma") // Alt+Enter, then Ctrl+J, then Enter
	tm.expect("echo: alpha")
	reqs = srv.Requests()
	if len(reqs) != 2 || reqs[1].LastUserText() != "alpha\nbeta\ngamma" {
		t.Fatalf("the newline keys sent the message: %d requests, last %q", len(reqs), reqs[len(reqs)-1].LastUserText())
	}
	if strings.Contains(tm.Screen(), "^[") {
		t.Errorf("Alt+Enter left a literal ^[:\n%s", tm.Screen())
	}
	tm.line("/quit")
	if err := tm.wait(); err != nil {
		t.Fatalf("exit: %v\n%s", err, tm.Screen())
	}
}

// TestContinuePicksTheLastChat: `baton -c` continues the conversation
// last chatted in, though another session was renamed and used by a
// one-shot since, and a new one-shot made a newer session; its banner
// shows that session's own model.
func TestContinuePicksTheLastChat(t *testing.T) {
	srv := llmtest.Start(t)
	home, work := t.TempDir(), t.TempDir()
	env := cleanEnv(home, modelEnv(srv)...)

	tm := startTerm(t, env, work)
	tm.line("about apples")
	tm.expect("echo: about apples")
	tm.line("/title apples")
	tm.expect("Title set: apples")
	tm.line("/quit")
	if err := tm.wait(); err != nil {
		t.Fatalf("exit: %v\n%s", err, tm.Screen())
	}

	tm = startTerm(t, env, work)
	tm.line("/model other-model")
	tm.expect("Model for this session: other-model")
	tm.line("about bananas")
	tm.expect("echo: about bananas")
	tm.line("/quit")
	if err := tm.wait(); err != nil {
		t.Fatalf("exit: %v\n%s", err, tm.Screen())
	}

	for _, args := range [][]string{
		{"sessions", "rename", "apples", "apples", "renamed"},
		{"-r", "apples renamed", "-p", "a one-shot in apples"},
		{"-p", "a fresh one-shot"},
	} {
		if out, errOut, err := runBaton(t, env, work, args...); err != nil {
			t.Fatalf("baton %q: %v\n%s%s", args, err, out, errOut)
		}
	}

	tm = startTerm(t, env, work, "-c")
	tm.expect("baton · openai · other-model ·")
	tm.expect("Continuing session ")
	tm.expect("about bananas")
	tm.expect("earlier messages above · new ones below")
	tm.line("still bananas?")
	tm.expect("echo: still bananas?")
	tm.line("/quit")
	if err := tm.wait(); err != nil {
		t.Fatalf("exit: %v\n%s", err, tm.Screen())
	}
	if strings.Contains(tm.Screen(), "apples") || strings.Contains(tm.Screen(), "one-shot") {
		t.Errorf("-c showed another session:\n%s", tm.Screen())
	}
	reqs := srv.Requests()
	last := reqs[len(reqs)-1]
	if last.Model() != "other-model" || !strings.Contains(string(last.Raw), "about bananas") {
		t.Errorf("the continued turn: model %q, body %s", last.Model(), last.Raw)
	}
}

// TestPrintModeWithoutModel: -p with no model configured answers nothing
// on stdout and says why on stderr, exiting non-zero.
func TestPrintModeWithoutModel(t *testing.T) {
	home, work := t.TempDir(), t.TempDir()
	out, errOut, err := runBaton(t, cleanEnv(home), work, "-p", "hello?")
	if err == nil || out != "" || !strings.Contains(errOut, "no model is configured") || !strings.Contains(errOut, "OPENAI_API_KEY") {
		t.Fatalf("stdout %q stderr %q err %v", out, errOut, err)
	}
}

// TestHomeIsAFile: a BATON_HOME that is a file is reported as that.
func TestHomeIsAFile(t *testing.T) {
	home, work := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(home, "baton"), []byte("not a directory"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, errOut, err := runBaton(t, cleanEnv(home), work, "-p", "hello?")
	if err == nil || !strings.Contains(errOut, "is a file, not a directory") || strings.Contains(errOut, ".env") {
		t.Fatalf("stderr %q err %v", errOut, err)
	}
}

// TestGatewayStopAndStatus: `baton gateway status` says "not running"
// once; `baton gateway stop` stops a running gateway and is a no-op
// without one.
func TestGatewayStopAndStatus(t *testing.T) {
	srv := llmtest.Start(t)
	home, work := t.TempDir(), t.TempDir()
	env := cleanEnv(home, modelEnv(srv)...)
	batonHome := filepath.Join(home, "baton")
	writeConfig(t, batonHome, "web:\n  listen: 127.0.0.1:0\n")

	out, errOut, err := runBaton(t, env, work, "gateway", "status")
	if err == nil || strings.Count(strings.ToLower(out+errOut), "no gateway is running") != 1 {
		t.Errorf("status with none running: err %v, said:\n%s%s", err, out, errOut)
	}

	gw := startGateway(t, env, batonHome)
	out, errOut, err = runBaton(t, env, work, "gateway", "stop")
	if err != nil || !strings.Contains(out, "Gateway stopped.") {
		t.Fatalf("stop: %v\n%s%s", err, out, errOut)
	}
	if _, ok := testutil.WaitFor(testutil.Context(t, hangGuard), gw.exited); !ok {
		t.Fatalf("the gateway process did not exit:\n%s", gw.Log())
	}
	out, _, err = runBaton(t, env, work, "gateway", "stop")
	if err != nil || !strings.Contains(out, "No gateway is running.") {
		t.Errorf("stop with none running: %v\n%s", err, out)
	}
}

// TestTerminalTabLists: Tab lists the matching commands with what they
// do; the one command matching is completed with a space after it; after
// /handoff, with no gateway running to ask, only the platforms set up
// (the web chat, those with a config section or a home) are offered.
func TestTerminalTabLists(t *testing.T) {
	home, work := t.TempDir(), t.TempDir()
	// Telegram has a section, Discord only a home (its token could be in
	// the environment), Slack is switched off.
	writeConfig(t, filepath.Join(home, "baton"), "telegram:\n  token: \"123:abc\"\nslack:\n  enabled: false\n"+
		"gateway:\n  homes:\n    discord: \"discord:group:42\"\n")
	tm := startTerm(t, cleanEnv(home), work)
	tm.expect("No model is configured")
	promptReady := func(raw string) bool {
		return strings.LastIndex(raw, "\x1b[?25h") > strings.LastIndex(raw, "\x1b[6n")
	}
	// shownSince is the text printed after the first start bytes.
	shownSince := func(raw string, start int) string { return ansi.ReplaceAllString(raw[start:], "") }
	tm.expect("› ")
	tm.waitFor("prompt drawn", promptReady)
	start := tm.rawLen()
	tm.send("/re\t")
	tm.waitFor("the listed commands", func(raw string) bool {
		shown := shownSince(raw, start)
		return strings.Contains(shown, "switch to an earlier session") && strings.Contains(shown, "answer your last message again")
	})
	tm.send("\x03") // Ctrl-C drops the line
	tm.expect("(Ctrl-D or /quit to leave)")
	tm.waitFor("prompt drawn", promptReady)

	// One command matches: it is completed, and a space follows, so the
	// argument typed next is an argument, not part of the name.
	tm.send("/hel\t")
	tm.waitFor("/help completed", func(raw string) bool { return strings.Contains(shownSince(raw, start), "/help") })
	tm.send("quit\r")
	tm.expect("/quit — ")
	tm.waitFor("prompt drawn", promptReady)

	start = tm.rawLen()
	tm.send("/handoff \t")
	tm.waitFor("the listed platforms", func(raw string) bool {
		shown := shownSince(raw, start)
		return strings.Contains(shown, "telegram") && strings.Contains(shown, "web") && strings.Contains(shown, "discord")
	})
	tm.send("\x03")
	tm.expect("(Ctrl-D or /quit to leave)")
	tm.waitFor("prompt drawn", promptReady)
	for _, absent := range []string{"whatsapp", "slack", "matrix"} {
		if shown := shownSince(tm.rawSince(start), 0); strings.Contains(shown, absent) {
			t.Errorf("/handoff Tab offered %s, which is not set up:\n%s", absent, shown)
		}
	}
	tm.send("\x04")
	if err := tm.wait(); err != nil {
		t.Fatalf("exit: %v\n%s", err, tm.Screen())
	}
}

// rawSince is what baton printed after the first start bytes.
func (tm *term) rawSince(start int) string {
	tm.mu.Lock()
	defer tm.mu.Unlock()
	return tm.raw.String()[start:]
}

// rawLen is how many bytes baton has printed so far.
func (tm *term) rawLen() int {
	tm.mu.Lock()
	defer tm.mu.Unlock()
	return tm.raw.Len()
}

// TestTerminalKeepsLineBreaks: in a real terminal, an answer quoting a
// command's output line by line keeps its lines, live and when `baton -c`
// replays it; a handoff note shows each of its fields on a line of its
// own; a message of several lines is replayed with its second and later
// lines under the first, their own indentation kept, as it was typed.
func TestTerminalKeepsLineBreaks(t *testing.T) {
	srv := llmtest.Start(t)
	home, work := t.TempDir(), t.TempDir()
	env := cleanEnv(home, modelEnv(srv)...)
	const answer = "hello from shell\nLinux\n[exit code 0]"
	srv.Push(
		llmtest.Reply{ToolCalls: []llmtest.Call{{Name: "shell", Args: `{"command":"printf 'hello from shell\\nLinux\\n'"}`}}},
		llmtest.Reply{Text: answer},
	)
	tm := startTerm(t, env, work)
	tm.expect("› ")
	tm.answer("run this:\x1b\r    printf hello\x1b\rplease") // Alt+Enter breaks the line
	tm.expect("allow?")
	tm.answer("o")
	tm.expect("[exit code 0]") // the tool's own output
	// The answer quoting it, line by line (as the status line previews
	// it first, what is awaited is the printed block).
	tm.expect("  hello from shell\n  Linux\n  [exit code 0]\n")
	tm.line("/save")
	tm.expect("Saved with the session")
	if s := tm.Screen(); !regexp.MustCompile(`\n  Task: [^\n]*\n(  [^\n]*\n)*  Progress: `).MatchString(s) {
		t.Errorf("the note's fields ran together:\n%s", s)
	}
	tm.line("/quit")
	if err := tm.wait(); err != nil {
		t.Fatalf("exit: %v\n%s", err, tm.Screen())
	}

	tm = startTerm(t, env, work, "-c")
	tm.expect("earlier messages above · new ones below")
	s := tm.Screen()
	for _, want := range []string{
		"› run this:\n      printf hello\n  please\n",
		"  hello from shell\n  Linux\n  [exit code 0]\n",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("the replay lacks %q:\n%s", want, s)
		}
	}
	tm.line("/quit")
	if err := tm.wait(); err != nil {
		t.Fatalf("exit: %v\n%s", err, tm.Screen())
	}
}
