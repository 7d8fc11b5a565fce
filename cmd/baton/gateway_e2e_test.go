package main

import (
	"bufio"
	"context"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/baton-agent/baton/internal/gateway"
	"github.com/baton-agent/baton/internal/gateway/control"
	"github.com/baton-agent/baton/internal/llm/llmtest"
	"github.com/baton-agent/baton/internal/note"
	"github.com/baton-agent/baton/internal/store"
	"github.com/baton-agent/baton/internal/testutil"
	browsertest "github.com/baton-agent/baton/internal/testutil/browser"
)

// gatewayProc is `baton gateway` running as a real process.
type gatewayProc struct {
	cmd    *exec.Cmd
	webURL string
	exited chan struct{}
	mu     sync.Mutex
	log    strings.Builder
}

// startGateway runs `baton gateway` and waits until it answers on its
// control socket. Cleanup stops it with SIGTERM (SIGKILL if it hangs).
func startGateway(t testing.TB, env []string, batonHome string) *gatewayProc {
	t.Helper()
	cmd := exec.Command(batonBin, "gateway")
	cmd.Env = env
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	g := &gatewayProc{cmd: cmd, exited: make(chan struct{})}
	cmd.Stderr = writerFunc(func(p []byte) (int, error) {
		g.mu.Lock()
		defer g.mu.Unlock()
		return g.log.Write(p)
	})
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	urls := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			line := sc.Text()
			g.mu.Lock()
			g.log.WriteString(line + "\n")
			g.mu.Unlock()
			if u, ok := strings.CutPrefix(line, "Web chat: "); ok {
				select {
				case urls <- u:
				default:
				}
			}
		}
	}()
	go func() { _ = cmd.Wait(); close(g.exited) }()
	t.Cleanup(func() { g.stop(t) })

	select {
	case g.webURL = <-urls:
	case <-g.exited:
		t.Fatalf("gateway exited at start:\n%s", g.Log())
	case <-time.After(hangGuard):
		t.Fatalf("gateway printed no web address:\n%s", g.Log())
	}
	c := control.NewClient(control.SocketPath(batonHome))
	if !testutil.Poll(testutil.Context(t, hangGuard), func() bool {
		s, err := c.Status(context.Background())
		if err != nil {
			return false
		}
		p, ok := s.Platform("web")
		return ok && p.Live
	}) {
		t.Fatalf("gateway never answered on its socket:\n%s", g.Log())
	}
	return g
}

func (g *gatewayProc) Log() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.log.String()
}

func (g *gatewayProc) stop(t testing.TB) {
	select {
	case <-g.exited:
		return
	default:
	}
	_ = g.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-g.exited:
	case <-time.After(hangGuard):
		t.Errorf("gateway ignored SIGTERM; killing it")
		_ = g.cmd.Process.Kill()
		<-g.exited
	}
}

func (g *gatewayProc) kill() {
	_ = g.cmd.Process.Kill()
	<-g.exited
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

var _ io.Writer = writerFunc(nil)

// chromium finds Debian's Chromium, or skips (fails under CI) without it.
func chromium(t *testing.T) string { return browsertest.Chromium(t) }

// browser starts a headless Chromium for the test and returns a tab context.
func browser(t *testing.T) context.Context { return browsertest.Start(t) }

// pageText waits until the page's messages contain want, and returns them.
func pageText(ctx context.Context, t *testing.T, want string) string {
	t.Helper()
	wctx, cancel := context.WithTimeout(ctx, hangGuard)
	defer cancel()
	_, err := chromedp.Run(wctx, chromedp.Poll[bool](`document.getElementById("messages").innerText.includes(`+jsString(want)+`)`))
	text, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById("messages").innerText`))
	if err != nil {
		status, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.innerText`))
		t.Fatalf("the page never showed %q: %v\npage:\n%s", want, err, status)
	}
	return text
}

func jsString(s string) string { return browsertest.JSString(s) }

// e2eNote is the handoff note handoffModel writes.
const e2eNote = `{"task": "Check that the machine works", "progress": "The check printed baton-tool-ok.", "context": {"files": ["proof.txt"], "commands": [], "values": []}, "next_steps": ["Book it"], "open_questions": []}`

// handoffModel answers the synthetic handoff turn with a greeting, a
// handoff note's request with e2eNote, and everything else from the
// queue, then by echo.
func handoffModel(t *testing.T, greeting string) *llmtest.Server {
	srv := llmtest.Start(t)
	srv.Aside(func(r llmtest.Request) bool { return strings.HasPrefix(r.LastUserText(), note.Lead) },
		func(llmtest.Request) llmtest.Step { return llmtest.Reply{Text: e2eNote} })
	srv.SetDefault(func(r llmtest.Request) llmtest.Step {
		if strings.HasPrefix(r.LastUserText(), gateway.HandoffLead) {
			return llmtest.Reply{Text: greeting}
		}
		return llmtest.EchoReply(r)
	})
	return srv
}

// assertNotes checks that every handoff of the session has its note
// stored, the model's, each handoff one, and returns them oldest first.
func assertNotes(t *testing.T, st store.Store, sessionID string, handoffs int) []store.Note {
	t.Helper()
	notes, err := st.SessionNotes(t.Context(), sessionID)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int64]bool{}
	for _, n := range notes {
		h, err := st.GetHandoff(t.Context(), n.HandoffID)
		if err != nil || h.SessionID != sessionID || seen[n.HandoffID] || n.Fallback != "" || !strings.Contains(n.Body, "Check that the machine works") {
			t.Errorf("note %+v of handoff %+v (%v)", n, h, err)
		}
		seen[n.HandoffID] = true
	}
	if len(notes) != handoffs {
		t.Fatalf("%d notes stored for %d handoffs: %+v", len(notes), handoffs, notes)
	}
	return notes
}

func writeConfig(t testing.TB, batonHome, yaml string) {
	t.Helper()
	if err := os.MkdirAll(batonHome, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(batonHome, "config.yaml"), []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestHandoffTerminalWebAndBack is the gateway's must-show, with real
// processes: `baton gateway` running; the REPL in a pty has three turns
// (one tool call); /handoff web; headless Chromium opens the page with its
// token, sees every earlier message and the agent's greeting, replies and
// gets an answer stored in the same session; /handoff cli from the page;
// the terminal picks the session up with the whole transcript in order.
func TestHandoffTerminalWebAndBack(t *testing.T) {
	chromium(t)
	srv := handoffModel(t, "Hello from the web chat! We had just run the check.")
	home, work := t.TempDir(), t.TempDir()
	env := cleanEnv(home, modelEnv(srv)...)
	batonHome := filepath.Join(home, "baton")
	writeConfig(t, batonHome, "web:\n  listen: 127.0.0.1:0\n")
	gw := startGateway(t, env, batonHome)
	status := exec.Command(batonBin, "gateway", "status")
	status.Env = env
	out, err := status.CombinedOutput()
	if err != nil {
		t.Fatalf("gateway status: %v\n%s", err, out)
	}
	for _, want := range []string{"Gateway running", "web", "live", "home: web:dm:main", "Web chat: " + gw.webURL} {
		if !strings.Contains(string(out), want) {
			t.Errorf("gateway status lacks %q:\n%s", want, out)
		}
	}
	second := exec.Command(batonBin, "gateway")
	second.Env = env
	if out, err := second.CombinedOutput(); err == nil || !strings.Contains(string(out), "another gateway is already running") {
		t.Errorf("a second gateway: %v\n%s", err, out)
	}

	tm := startTerm(t, env, work)
	threeTurns(srv, tm)
	tm.line("/handoff web")
	tm.expect("This conversation now continues in the web chat")
	// The address to open, token and all, is on the terminal's screen.
	tm.expect("Open it: " + gw.webURL)
	if err := tm.wait(); err != nil {
		t.Fatalf("the terminal did not detach cleanly: %v\n%s", err, tm.Screen())
	}
	if strings.Contains(tm.Screen(), "handoff failed") {
		t.Fatalf("the terminal reported the handoff both failed and done:\n%s", tm.Screen())
	}

	st := openStore(t, home)
	ss, err := st.ListSessions(t.Context(), store.SessionFilter{})
	if err != nil || len(ss) != 1 || !ss[0].Open() {
		t.Fatalf("after the handoff: sessions %+v %v", ss, err)
	}
	sessionID := ss[0].ID

	// The browser: the page with its token shows the whole conversation.
	ctx := browser(t)
	if err := chromedp.Do(ctx, chromedp.Navigate(gw.webURL)); err != nil {
		t.Fatal(err)
	}
	text := pageText(ctx, t, "Hello from the web chat!")
	assertInOrder(t, text, "hello there", "Hi! How can I help?", "please run the check",
		"shell", "echo baton-tool-ok > proof.txt && cat proof.txt", "baton-tool-ok",
		"The check printed baton-tool-ok.", "thanks", "You are welcome.",
		"Handoff note", "Check that the machine works", "Hello from the web chat!")
	if card, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`[...document.querySelectorAll("#messages li.tool .tool-name")].map(e => e.textContent).join("|")`)); card != "shell" {
		t.Errorf("the tool call is not one card: %q", card)
	}
	if bold, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`[...document.querySelectorAll("#messages strong")].map(e => e.textContent).join("|")`)); !strings.HasPrefix(bold, "baton-tool-ok|Handoff note|") {
		t.Errorf("markdown bold not shown as bold: %q", bold)
	}
	first := assertNotes(t, st, sessionID, 1)[0]
	if h, _ := st.GetHandoff(t.Context(), first.HandoffID); h.Platform != "web" {
		t.Errorf("the note is of handoff %+v", h)
	}
	url, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`location.href`))
	if strings.Contains(url, "token") {
		t.Errorf("the token stayed in the address bar: %s", url)
	}
	if dir := os.Getenv("BATON_SCREENSHOTS"); dir != "" { // to look at the page by eye
		if shot, err := chromedp.Run(ctx, chromedp.CaptureScreenshot()); err == nil {
			_ = os.WriteFile(filepath.Join(dir, "web-handoff.png"), shot, 0o644)
		}
	}

	// A reply typed in the page is answered and stored in the same session.
	if err := chromedp.Do(ctx, chromedp.SendKeys("#input", "great, book it"), chromedp.Click("#send")); err != nil {
		t.Fatal(err)
	}
	pageText(ctx, t, "echo: great, book it")
	// The page shows the answer as it streams, before the turn stores it
	// whole: wait for the store.
	var msgs []store.Message
	testutil.Eventually(t, hangGuard, func() bool {
		var err error
		msgs, err = st.Transcript(t.Context(), sessionID)
		return err == nil && len(msgs) >= 2 && msgs[len(msgs)-1].Content == "echo: great, book it"
	}, "the page's answer to be stored")
	if m := msgs[len(msgs)-2]; m.Content != "great, book it" || m.Platform != "web" {
		t.Fatalf("the page's message is not in the session: %+v", m)
	}

	// /handoff cli from the page.
	if err := chromedp.Do(ctx, chromedp.SendKeys("#input", "/handoff cli"), chromedp.Click("#send")); err != nil {
		t.Fatal(err)
	}
	pageText(ctx, t, "Handing off to the terminal")

	// The terminal offers the waiting session and continues it on Enter,
	// with the whole transcript in order.
	tm = startTerm(t, env, work)
	tm.expect("Waiting for you here")
	tm.expect("handed off from the web chat")
	tm.expect("Press Enter to continue it here")
	tm.answer("")
	tm.expect("Continuing")
	for _, want := range []string{"hello there", "Hi! How can I help?", "please run the check", "The check printed baton-tool-ok.",
		"thanks", "You are welcome.", "↪ This conversation was just handed off from the terminal to the web chat",
		"Hello from the web chat!", "great, book it", "echo: great, book it",
		"Handoff note", "Check that the machine works"} { // the note of the move here, after the transcript
		tm.expect(want)
	}
	tm.line("back at the desk")
	tm.expect("echo: back at the desk")
	tm.line("/quit")
	if err := tm.wait(); err != nil {
		t.Fatalf("baton exited with %v", err)
	}
	ss, _ = st.ListSessions(t.Context(), store.SessionFilter{})
	if len(ss) != 1 || ss[0].ID != sessionID {
		t.Fatalf("the conversation split into sessions: %+v", ss)
	}
	msgs, _ = st.Transcript(t.Context(), sessionID)
	var users []string
	for _, m := range msgs {
		if m.Role == store.RoleUser && m.Kind != store.KindHandoff {
			users = append(users, m.Platform+":"+m.Content)
		}
	}
	want := "cli:hello there|cli:please run the check|cli:thanks|web:great, book it|web:/handoff cli|cli:back at the desk"
	if got := strings.Join(users, "|"); got != want && got != strings.Replace(want, "web:/handoff cli|", "", 1) {
		t.Errorf("user turns %q", got)
	}
	last, _ := st.HandoffState(t.Context(), sessionID)
	if last.State != store.HandoffCompleted || last.Platform != "cli" {
		t.Errorf("last handoff %+v", last)
	}
	// Each move's note is stored with it.
	if notes := assertNotes(t, st, sessionID, 2); notes[1].HandoffID != last.ID {
		t.Errorf("the move back has no note of its own: %+v", notes)
	}
	// `baton sessions show` puts the latest note on top.
	show := exec.Command(batonBin, "sessions", "show", sessionID)
	show.Env = env
	out, err = show.CombinedOutput()
	if err != nil {
		t.Fatalf("sessions show: %v\n%s", err, out)
	}
	assertInOrder(t, string(out), "Written at the handoff from the web chat to the terminal", "**Task:** Check that the machine works", "hello there")
}

func assertInOrder(t *testing.T, text string, wants ...string) {
	t.Helper()
	pos := 0
	for _, w := range wants {
		i := strings.Index(text[pos:], w)
		if i < 0 {
			t.Fatalf("%q missing (or out of order) in:\n%s", w, text)
		}
		pos += i + len(w)
	}
}

// TestHandoffSurvivesGatewayKill: the gateway is SIGKILLed while it runs a
// handoff. The terminal says it lost contact and stays in the session;
// the restarted gateway takes the handoff back once its lease ends and
// finishes it, the first message posted once; only then does the terminal
// say the session moved.
func TestHandoffSurvivesGatewayKill(t *testing.T) {
	srv := llmtest.Start(t)
	var handoffCalls atomic.Int32
	srv.SetDefault(func(r llmtest.Request) llmtest.Step {
		if strings.HasPrefix(r.LastUserText(), gateway.HandoffLead) || r.LastUserText() == "" {
			if handoffCalls.Add(1) == 1 {
				// The first attempt is slow: the gateway dies mid-answer.
				return llmtest.Reply{Text: "this answer never finishes because the gateway dies", Delay: 2 * time.Second}
			}
			return llmtest.Reply{Text: "Hello after the restart."}
		}
		return llmtest.EchoReply(r)
	})
	home, work := t.TempDir(), t.TempDir()
	env := cleanEnv(home, modelEnv(srv)...)
	batonHome := filepath.Join(home, "baton")
	writeConfig(t, batonHome, "web:\n  listen: 127.0.0.1:0\ngateway:\n  handoff_lease: 1s\n")
	gw := startGateway(t, env, batonHome)

	tm := startTerm(t, env, work)
	tm.line("remember the number 7")
	tm.expect("echo: remember the number 7")
	tm.line("/handoff web")
	tm.expect("Handing off to web")
	if !testutil.Poll(testutil.Context(t, hangGuard), func() bool { return handoffCalls.Load() > 0 }) {
		t.Fatalf("the gateway never started the handoff turn:\n%s", gw.Log())
	}
	gw.kill()
	tm.expect("Lost contact with the gateway")

	st := openStore(t, home)
	ss, _ := st.ListSessions(t.Context(), store.SessionFilter{})
	if len(ss) != 1 {
		t.Fatalf("sessions %+v", ss)
	}
	if h, _ := st.HandoffState(t.Context(), ss[0].ID); h.State != store.HandoffRunning || h.Attempts != 1 {
		t.Fatalf("after the kill the handoff is %+v", h)
	}

	gw = startGateway(t, env, batonHome)
	tm.expect("This conversation now continues in the web chat")
	if err := tm.wait(); err != nil {
		t.Fatalf("terminal exit: %v", err)
	}
	screen := tm.Screen()
	if strings.Contains(screen, "handoff failed") || strings.Contains(screen, "not confirmed") {
		t.Fatalf("the terminal reported the handoff both moved and not:\n%s", screen)
	}
	h, _ := st.HandoffState(t.Context(), ss[0].ID)
	if h.State != store.HandoffCompleted || h.Attempts != 2 || !strings.HasPrefix(h.Destination, "web:") {
		t.Fatalf("handoff after the restart: %+v", h)
	}
	// The first message waits for a page to show it; it is sent once one
	// is open.
	ctx := browser(t)
	if err := chromedp.Do(ctx, chromedp.Navigate(gw.webURL)); err != nil {
		t.Fatal(err)
	}
	pageText(ctx, t, "Hello after the restart.")
	var pending []store.Delivery
	if !testutil.Poll(testutil.Context(t, 0), func() bool {
		pending, _ = st.PendingDeliveries(t.Context(), "", 0)
		return len(pending) == 0
	}) {
		t.Errorf("deliveries left unsent: %+v", pending)
	}
	msgs, _ := st.Transcript(t.Context(), ss[0].ID)
	synthetic, greetings := 0, 0
	for _, m := range msgs {
		if m.Kind == store.KindHandoff {
			synthetic++
		}
		if m.Content == "Hello after the restart." {
			greetings++
		}
	}
	if synthetic != 1 || greetings != 1 {
		t.Errorf("transcript has %d handoff notes and %d greetings, want 1 and 1", synthetic, greetings)
	}
}

// TestHandoffWithoutGateway: with no gateway running, /handoff offers to
// start one; declining explains how and keeps the session; accepting
// starts one in the background and the handoff goes through.
func TestHandoffWithoutGateway(t *testing.T) {
	srv := handoffModel(t, "Hello from a gateway started for you.")
	home, work := t.TempDir(), t.TempDir()
	env := cleanEnv(home, modelEnv(srv)...)
	batonHome := filepath.Join(home, "baton")
	writeConfig(t, batonHome, "web:\n  listen: 127.0.0.1:0\n")
	status := exec.Command(batonBin, "gateway", "status")
	status.Env = env
	if out, err := status.CombinedOutput(); err == nil || !strings.Contains(string(out), "No gateway is running. Start one with: baton gateway") {
		t.Errorf("gateway status with none running: %v\n%s", err, out)
	}

	tm := startTerm(t, env, work)
	tm.line("hello")
	tm.expect("echo: hello")
	tm.line("/handoff web")
	tm.expect("No gateway is running. Start one in the background now? [y/N]")
	tm.answer("n")
	tm.expect("handoff failed: no gateway is running: start one with `baton gateway`")
	tm.line("/handoff web")
	tm.expect("Start one in the background now? [y/N]")
	t.Cleanup(func() { stopBackgroundGateway(t, batonHome) })
	tm.answer("y")
	tm.expect("Starting the gateway")
	tm.expect("This conversation now continues in the web chat")
	if err := tm.wait(); err != nil {
		t.Fatalf("terminal exit: %v", err)
	}
	st := openStore(t, home)
	ss, _ := st.ListSessions(t.Context(), store.SessionFilter{})
	if len(ss) != 1 || !ss[0].Open() {
		t.Fatalf("sessions %+v", ss)
	}
	if h, _ := st.HandoffState(t.Context(), ss[0].ID); h.State != store.HandoffCompleted {
		t.Fatalf("handoff %+v", h)
	}
}

// stopBackgroundGateway stops a gateway the terminal started, by the pid it
// reports.
func stopBackgroundGateway(t *testing.T, batonHome string) {
	c := control.NewClient(control.SocketPath(batonHome))
	s, err := c.Status(context.Background())
	if err != nil {
		return
	}
	p, err := os.FindProcess(s.PID)
	if err != nil {
		return
	}
	_ = p.Signal(syscall.SIGTERM)
	if testutil.Poll(testutil.Context(t, hangGuard), func() bool {
		_, err := c.Status(context.Background())
		return err != nil
	}) {
		return
	}
	_ = p.Kill()
	t.Errorf("the background gateway ignored SIGTERM")
}

// TestWebPageResendsAfterReconnect: what is typed into the page while the
// gateway is down is sent when it is back, and stored once.
func TestWebPageResendsAfterReconnect(t *testing.T) {
	chromium(t)
	srv := handoffModel(t, "unused")
	home := t.TempDir()
	env := cleanEnv(home, modelEnv(srv)...)
	batonHome := filepath.Join(home, "baton")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // the gateway listens here, twice: the page must find it again
	writeConfig(t, batonHome, "web:\n  listen: "+addr+"\n")
	gw := startGateway(t, env, batonHome)

	ctx := browser(t)
	if err := chromedp.Do(ctx, chromedp.Navigate(gw.webURL)); err != nil {
		t.Fatal(err)
	}
	pollPage(ctx, t, "the page connected", `document.getElementById("title").innerText === "Home"`)
	gw.kill()
	pollPage(ctx, t, "the page noticed", `document.getElementById("status").innerText.includes("Disconnected")`)
	if err := chromedp.Do(ctx, chromedp.SendKeys("#input", "sent while away"), chromedp.Click("#send")); err != nil {
		t.Fatal(err)
	}
	pollPage(ctx, t, "the page said it waits", `document.getElementById("status").innerText.includes("Not connected")`)

	startGateway(t, env, batonHome)
	pageText(ctx, t, "echo: sent while away")
	st := openStore(t, home)
	ss, _ := st.ListSessions(t.Context(), store.SessionFilter{})
	if len(ss) != 1 {
		t.Fatalf("sessions %+v", ss)
	}
	msgs, _ := st.Transcript(t.Context(), ss[0].ID)
	n := 0
	for _, m := range msgs {
		if m.Content == "sent while away" {
			n++
		}
	}
	if n != 1 {
		t.Errorf("the message typed while away is stored %d times", n)
	}
}

func pollPage(ctx context.Context, t *testing.T, what, js string) {
	t.Helper()
	wctx, cancel := context.WithTimeout(ctx, hangGuard)
	defer cancel()
	if _, err := chromedp.Run(wctx, chromedp.Poll[bool](js)); err != nil {
		body, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.innerText`))
		t.Fatalf("waiting for %s: %v\npage:\n%s", what, err, body)
	}
}
