package main

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/baton-agent/baton/internal/gateway/control"
	"github.com/baton-agent/baton/internal/platform/telegram/telegramtest"
	"github.com/baton-agent/baton/internal/store"
	"github.com/baton-agent/baton/internal/testutil"
)

// TestHandoffCommand: `baton handoff SESSION PLACE`, run as a process the
// way a script would (stdin not a terminal), moves a session through the
// running gateway with its Telegram fake and web chat: exit 0 and one
// line on stdout only once the gateway confirms, the session then held
// there and greeted; an unknown place, a platform not set up, a handoff
// the service refuses and no gateway at all each exit 1, say why on
// stderr, and leave the session where it was.
func TestHandoffCommand(t *testing.T) {
	const botToken = "123456:handoff-command"
	const forum = -100555
	fake := telegramtest.New(t, botToken)
	fake.AddChat(telegramtest.Chat{ID: forum, Type: telegramtest.Supergroup, Title: "baton", IsForum: true})
	srv := handoffModel(t, "Hello, picked up here.")
	home, work := t.TempDir(), t.TempDir()
	env := cleanEnv(home, modelEnv(srv)...)
	batonHome := filepath.Join(home, "baton")
	writeConfig(t, batonHome, fmt.Sprintf("web:\n  listen: 127.0.0.1:0\ntelegram:\n  token: %q\n  server_url: %q\n"+
		"gateway:\n  owners:\n    telegram: [\"1\"]\n  homes:\n    telegram: \"telegram:group:%d\"\n", botToken, fake.URL(), forum))

	// A session made by a one-shot, as a script would.
	if out, errOut, err := runBaton(t, env, work, "-p", "hello from a script"); err != nil {
		t.Fatalf("baton -p: %v\n%s%s", err, out, errOut)
	}
	st := openStore(t, home)
	ss, err := st.ListSessions(t.Context(), store.SessionFilter{})
	if err != nil || len(ss) != 1 {
		t.Fatalf("sessions %+v %v", ss, err)
	}
	sid := ss[0].ID
	holder := func() string {
		t.Helper()
		s, err := st.GetSession(t.Context(), sid)
		if err != nil {
			t.Fatal(err)
		}
		return s.Holder
	}
	handoffState := func() store.HandoffState {
		t.Helper()
		h, err := st.HandoffState(t.Context(), sid)
		if err != nil {
			t.Fatal(err)
		}
		return h.State
	}

	// No gateway, and nobody to ask: it says how to start one and records nothing.
	out, errOut, err := runBaton(t, env, work, "handoff", sid[:8], "telegram")
	if exitCode(err) != 1 || out != "" || !strings.Contains(errOut, "no gateway is running: start one with `baton gateway`") {
		t.Fatalf("with no gateway: exit %d\nstdout %q\nstderr %q", exitCode(err), out, errOut)
	}
	if s := handoffState(); s != store.HandoffNone {
		t.Fatalf("a handoff with no gateway left state %s", s)
	}

	// In a terminal it offers to start one; declined, it records nothing.
	tm := startTerm(t, env, work, "handoff", sid[:8], "telegram")
	tm.expect("No gateway is running. Start one in the background now? [y/N] ")
	tm.send("n\r")
	tm.expect("no gateway is running: start one with `baton gateway`")
	if err := tm.wait(); exitCode(err) != 1 {
		t.Fatalf("declined in a terminal: exit %d\n%s", exitCode(err), tm.Screen())
	}
	if s := handoffState(); s != store.HandoffNone {
		t.Fatalf("a declined handoff left state %s", s)
	}

	gw := startGateway(t, env, batonHome)
	c := control.NewClient(control.SocketPath(batonHome))
	testutil.Eventually(t, hangGuard, func() bool {
		s, err := c.Status(context.Background())
		p, ok := s.Platform("telegram")
		return err == nil && ok && p.Live
	}, "telegram to be live in the gateway")

	// To Telegram: confirmed, greeted in a new topic, held there.
	out, errOut, err = runBaton(t, env, work, "handoff", sid[:8], "telegram")
	if exitCode(err) != 0 || !strings.HasPrefix(out, fmt.Sprintf("Session %s continues in Telegram: https://t.me/", sid[:8])) || !strings.Contains(errOut, "Handing off to telegram") {
		t.Fatalf("handoff to telegram: exit %d\nstdout %q\nstderr %q\ngateway:\n%s", exitCode(err), out, errOut, gw.Log())
	}
	topics := fake.Topics()
	if len(topics) != 1 {
		t.Fatalf("topics %+v", topics)
	}
	waitSent(t, fake, "the greeting in the topic", func(m telegramtest.SentMessage) bool {
		return m.ThreadID == topics[0].ThreadID && strings.Contains(m.Plain, "Hello, picked up here.")
	})
	if h := holder(); h != fmt.Sprintf("telegram:thread:%d:%d", forum, topics[0].ThreadID) {
		t.Fatalf("holder after baton handoff telegram: %q", h)
	}

	// On to the web chat: the line on stdout has the address to open.
	out, errOut, err = runBaton(t, env, work, "handoff", sid[:8], "web")
	if exitCode(err) != 0 || !strings.HasPrefix(out, fmt.Sprintf("Session %s continues in the web chat: %s", sid[:8], gw.webURL)) {
		t.Fatalf("handoff to web: exit %d\nstdout %q\nstderr %q", exitCode(err), out, errOut)
	}
	if h := holder(); !strings.HasPrefix(h, "web:") {
		t.Fatalf("holder after baton handoff web: %q", h)
	}

	// --home: into the home chat itself, no new topic.
	out, errOut, err = runBaton(t, env, work, "handoff", "--home", sid[:8], "telegram")
	if exitCode(err) != 0 || !strings.HasPrefix(out, fmt.Sprintf("Session %s continues in Telegram", sid[:8])) {
		t.Fatalf("handoff --home to telegram: exit %d\nstdout %q\nstderr %q\ngateway:\n%s", exitCode(err), out, errOut, gw.Log())
	}
	if h := holder(); h != fmt.Sprintf("telegram:group:%d", forum) {
		t.Fatalf("holder after baton handoff --home telegram: %q", h)
	}
	if n := len(fake.Topics()); n != 1 {
		t.Errorf("--home opened a topic: %d topics", n)
	}
	waitSent(t, fake, "the greeting in the home chat", func(m telegramtest.SentMessage) bool {
		return m.ChatID == fmt.Sprint(forum) && m.ThreadID == 0 && strings.Contains(m.Plain, "Hello, picked up here.")
	})
	if _, errOut, err := runBaton(t, env, work, "handoff", "--home", "--thread", sid[:8], "telegram"); exitCode(err) != 1 || !strings.Contains(errOut, "home") {
		t.Errorf("--home with --thread: exit %d, %q", exitCode(err), errOut)
	}
	webHolder := holder()

	// Refusals: exit 1, why on stderr, nothing on stdout, the session stays.
	for place, want := range map[string]string{
		"nowhere":  `unknown place "nowhere": the places are cli (the terminal), web, telegram,`,
		"discord":  "Discord is not set up in the gateway",
		"terminal": "to continue it in the terminal, run `baton -r " + sid[:8] + "`",
	} {
		out, errOut, err := runBaton(t, env, work, "handoff", sid[:8], place)
		if exitCode(err) != 1 || out != "" || !strings.Contains(errOut, want) {
			t.Errorf("handoff to %s: exit %d\nstdout %q\nstderr %q", place, exitCode(err), out, errOut)
		}
	}
	if h := holder(); h != webHolder {
		t.Fatalf("a refused handoff moved the session to %q", h)
	}

	// The service refuses the greeting: the gateway fails the handoff,
	// and so does the command, with the reason.
	fake.Forbid("Hello, picked up here.")
	out, errOut, err = runBaton(t, env, work, "handoff", sid[:8], "telegram")
	if exitCode(err) != 1 || out != "" || !strings.Contains(errOut, "the handoff failed") {
		t.Fatalf("a refused handoff: exit %d\nstdout %q\nstderr %q\ngateway:\n%s", exitCode(err), out, errOut, gw.Log())
	}
	if h := holder(); h != webHolder {
		t.Fatalf("a failed handoff moved the session to %q", h)
	}
}

// exitCode is a finished command's exit status (0 for none).
func exitCode(err error) int {
	if err == nil {
		return 0
	}
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	return -1
}

// TestHandoffCommandStartsTheGateway: run in a terminal with no gateway,
// `baton handoff` offers to start one; yes starts it in the background,
// naming its log by its real path, and the handoff goes through.
func TestHandoffCommandStartsTheGateway(t *testing.T) {
	srv := handoffModel(t, "Hello from a gateway started for a script.")
	home, work := t.TempDir(), t.TempDir()
	env := cleanEnv(home, modelEnv(srv)...)
	batonHome := filepath.Join(home, "baton")
	writeConfig(t, batonHome, "web:\n  listen: 127.0.0.1:0\n")
	if out, errOut, err := runBaton(t, env, work, "-p", "hello"); err != nil {
		t.Fatalf("baton -p: %v\n%s%s", err, out, errOut)
	}
	st := openStore(t, home)
	ss, err := st.ListSessions(t.Context(), store.SessionFilter{})
	if err != nil || len(ss) != 1 {
		t.Fatalf("sessions %+v %v", ss, err)
	}
	sid := ss[0].ID

	tm := startTerm(t, env, work, "handoff", sid[:8], "web")
	tm.expect("No gateway is running. Start one in the background now? [y/N] ")
	t.Cleanup(func() { stopBackgroundGateway(t, batonHome) })
	tm.send("y\r")
	tm.expect("Starting the gateway (its log: " + filepath.Join(batonHome, "gateway.log") + ")")
	tm.expect(fmt.Sprintf("Session %s continues in the web chat: http://127.0.0.1:", sid[:8]))
	if err := tm.wait(); err != nil {
		t.Fatalf("exit: %v\n%s", err, tm.Screen())
	}
	if h, _ := st.HandoffState(t.Context(), sid); h.State != store.HandoffCompleted {
		t.Fatalf("handoff %+v", h)
	}
}
