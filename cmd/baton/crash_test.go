package main

import (
	"context"
	"database/sql"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/agent"
	"github.com/baton-agent/baton/internal/gateway"
	"github.com/baton-agent/baton/internal/llm/llmtest"
	"github.com/baton-agent/baton/internal/note"
	"github.com/baton-agent/baton/internal/owner"
	"github.com/baton-agent/baton/internal/platform"
	"github.com/baton-agent/baton/internal/platform/telegram/telegramtest"
	"github.com/baton-agent/baton/internal/platform/web"
	"github.com/baton-agent/baton/internal/store"
	"github.com/baton-agent/baton/internal/store/sqlite"
	"github.com/baton-agent/baton/internal/testutil"
)

// crashPlan is one run of the crash harness.
type crashPlan struct {
	seed     uint64
	kills    int
	handoffs int
	inbound  int
	sessions int           // sessions the handoffs move, one in flight each
	maxLife  time.Duration // a gateway lives a random time up to this before its SIGKILL
}

// crashPlanFromEnv is the short form (every test run; BATON_CRASH=short
// names it too), or the long form with BATON_CRASH=long;
// BATON_CRASH_SEED replays a run.
func crashPlanFromEnv(t *testing.T) crashPlan {
	switch os.Getenv("BATON_CRASH") {
	case "", "short", "long":
	default:
		t.Fatalf("BATON_CRASH=%q: want short or long", os.Getenv("BATON_CRASH"))
	}
	p := crashPlan{seed: uint64(time.Now().UnixNano()), kills: 10, handoffs: 10, inbound: 100, sessions: 4, maxLife: 2 * time.Second}
	if os.Getenv("BATON_CRASH") == "long" {
		p.kills, p.handoffs, p.inbound, p.sessions = 100, 100, 1000, 10
	}
	if s := os.Getenv("BATON_CRASH_SEED"); s != "" {
		seed, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("BATON_CRASH_SEED=%q: %v", s, err)
		}
		p.seed = seed
	}
	return p
}

// Telegram ids of the harness: owners write in their private chats and
// in the forum group that is Telegram's home, where handoffs open topics.
const (
	crashToken     = "4242:crash-token"
	crashForum     = int64(-100777)
	crashFirstUser = int64(5001)
	// crashPerUser keeps every account under the gateway's burst of 20
	// messages, so the rate limit never refuses one of the harness's.
	crashPerUser = 15
)

// crashReply is the whole answer the fake model gives to text, after the
// tool call when text asks for one. Every inbound text carries a unique
// id (msg-NNNN), so its answer can be found in transcripts and chats.
func crashReply(text string, afterTool bool) string {
	id := crashID(text)
	if afterTool {
		return "done " + id + " after the tool"
	}
	if strings.HasPrefix(text, gateway.HandoffLead) {
		return "Hello again here."
	}
	if strings.Contains(text, "at length") {
		// Long enough (streamed over a second or two) for the gateway to
		// keep a draft that a kill cuts off.
		var b strings.Builder
		b.WriteString("echo: " + text + ":")
		for i := range 60 {
			fmt.Fprintf(&b, " w%02d", i)
		}
		return b.String()
	}
	return "echo: " + text
}

func crashID(text string) string {
	i := strings.Index(text, "msg-")
	if i < 0 {
		return ""
	}
	return text[i : i+len("msg-0000")]
}

// crashModel is the model: it echoes, calls the tick tool for texts
// ending in "please tick", writes handoff notes, and on the call that
// resumes a cut-off answer writes only the rest of it, as a real model
// told to continue would. Answers stream slowly (a few ms per word,
// fixed by the text) so that kills land mid-answer.
func crashModel(t *testing.T) *llmtest.Server {
	srv := llmtest.Start(t)
	srv.Aside(func(r llmtest.Request) bool { return strings.HasPrefix(r.LastUserText(), note.Lead) },
		func(llmtest.Request) llmtest.Step { return llmtest.Reply{Text: e2eNote} })
	srv.SetDefault(func(r llmtest.Request) llmtest.Step {
		text := r.LastUserText()
		h := fnv.New32a()
		h.Write([]byte(text))
		delay := time.Duration(5+h.Sum32()%30) * time.Millisecond
		msgs := r.Messages()
		last, _ := msgs[len(msgs)-1].(map[string]any)
		switch last["role"] {
		case "tool":
			return llmtest.Reply{Text: crashReply(text, true), Delay: delay}
		case "assistant": // a cut-off answer to continue
			partial, _ := last["content"].(string)
			full := crashReply(text, hasToolResult(msgs))
			return llmtest.Reply{Text: strings.TrimPrefix(full, partial), Delay: delay}
		}
		if strings.HasSuffix(text, "please tick") {
			return llmtest.Reply{ToolCalls: []llmtest.Call{{Name: "shell", Args: fmt.Sprintf(`{"command":"./tick %s"}`, crashID(text))}}}
		}
		return llmtest.Reply{Text: crashReply(text, false), Delay: delay}
	})
	return srv
}

// hasToolResult reports whether the request's last user turn was
// followed by a tool result.
func hasToolResult(msgs []any) bool {
	for i := len(msgs) - 1; i >= 0; i-- {
		m, _ := msgs[i].(map[string]any)
		switch m["role"] {
		case "tool":
			return true
		case "user":
			return false
		}
	}
	return false
}

// crashGateway runs `baton gateway` processes one after another, each
// killed by SIGKILL, each writing its whole log to its own file in logs.
type crashGateway struct {
	env  []string
	dir  string
	logs string
	runs int
}

func (c *crashGateway) start(t *testing.T) (*exec.Cmd, chan struct{}) {
	t.Helper()
	c.runs++
	f, err := os.Create(c.logFile(c.runs))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(batonBin, "gateway")
	cmd.Env, cmd.Dir = c.env, c.dir
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		f.Close()
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); f.Close(); close(exited) }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-exited })
	return cmd, exited
}

// logFile is the log of the n-th gateway run (from 1).
func (c *crashGateway) logFile(n int) string {
	return filepath.Join(c.logs, fmt.Sprintf("gateway-%02d.log", n))
}

// digest is what a failure report shows of the gateway logs: every
// warning and error and every line about Telegram, of every run, and the
// last run's tail. The whole logs are in c.logs.
func (c *crashGateway) digest() string {
	var b strings.Builder
	for n := 1; n <= c.runs; n++ {
		data, err := os.ReadFile(c.logFile(n))
		if err != nil {
			fmt.Fprintf(&b, "run %d: %v\n", n, err)
			continue
		}
		var telling []string
		for _, line := range strings.Split(string(data), "\n") {
			if strings.Contains(line, "level=WARN") || strings.Contains(line, "level=ERROR") || strings.Contains(line, "platform=telegram") {
				telling = append(telling, "  "+line+"\n")
			}
		}
		if len(telling) > 0 {
			fmt.Fprintf(&b, "run %d:\n%s", n, strings.Join(telling, ""))
		}
		if n == c.runs {
			fmt.Fprintf(&b, "run %d, tail:\n%s\n", n, tailOf(string(data), 3000))
		}
	}
	return b.String()
}

// crashLogDir is where the harness keeps its full logs: under
// BATON_CRASH_LOGS when set (kept), else in a temporary directory kept
// only when the test fails.
func crashLogDir(t *testing.T, seed uint64) string {
	t.Helper()
	if root := os.Getenv("BATON_CRASH_LOGS"); root != "" {
		dir := filepath.Join(root, fmt.Sprintf("seed-%d-%s", seed, time.Now().Format("150405.000")))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	dir, err := os.MkdirTemp("", "baton-crash-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if !t.Failed() {
			os.RemoveAll(dir)
		}
	})
	return dir
}

// snapshotStore copies the store as it stands (VACUUM INTO: a consistent
// copy while the gateway writes) for a failure report.
func snapshotStore(from, to string) error {
	db, err := sql.Open("sqlite", from)
	if err != nil {
		return fmt.Errorf("snapshot %s: %w", from, err)
	}
	defer db.Close()
	if _, err := db.Exec("VACUUM INTO ?", to); err != nil {
		return fmt.Errorf("snapshot %s: %w", from, err)
	}
	return nil
}

// lastCalls is the tail of the Telegram fake's request log: its last n
// getUpdates calls and its last n other calls.
func lastCalls(log string, n int) string {
	var polls, others []string
	for _, line := range strings.Split(strings.TrimRight(log, "\n"), "\n") {
		if strings.Contains(line, " getUpdates ") {
			polls = append(polls, line)
		} else {
			others = append(others, line)
		}
	}
	return "getUpdates:\n" + strings.Join(polls[max(0, len(polls)-n):], "\n") +
		"\nother calls:\n" + strings.Join(others[max(0, len(others)-n):], "\n")
}

// inboundMsg is one message a person sends in the harness.
type inboundMsg struct {
	web    string // the web conversation it is said in; "" for Telegram
	chat   int64
	from   telegramtest.User
	text   string
	tick   bool
	answer string // the whole answer expected
}

// TestCrashHarness is issue 10's crash harness: the real gateway, as a
// process, against the Telegram fake, a web chat page (crashPage) and the
// model fake (with a tool that
// appends a line to a file), SIGKILLed at random moments while inbound
// messages arrive and handoffs are requested, restarted each time; then
// one last start lets it settle and everything is checked against the
// store, the fake's chats and the tool's file:
//
//   - no handoff is left pending or running;
//   - every inbound message is stored once and has exactly one whole
//     answer in its transcript (a cut-off answer is taken up once: over
//     OpenAI's protocol it is written anew and replaces the kept part);
//   - every answer, and every completed handoff's greeting, is shown in
//     its chat at least once — and the times it is shown twice are
//     counted and reported, not failed: the Bot API has no idempotency
//     key, so a kill after Telegram accepted a message and before the
//     store recorded it as sent leaves the gateway no way to know, and it
//     sends again (at least once is what can be guaranteed there);
//   - each tool call ran at most once (one line in the file per id);
//   - the fake has no unconfirmed update left.
//
// The short form runs in every test run; BATON_CRASH=long runs issue
// 10's 100 handoffs and 1,000 inbound messages. The seed is printed;
// BATON_CRASH_SEED=N replays a schedule (the kill times are the same,
// what they interrupt depends on the machine). A failure names the
// directory holding each gateway run's whole log, the Telegram fake's
// request log and a copy of the store; BATON_CRASH_LOGS=dir keeps them
// under dir for every run, passing or not.
func TestCrashHarness(t *testing.T) {
	p := crashPlanFromEnv(t)
	t.Logf("crash harness: seed %d (replay with BATON_CRASH_SEED=%d), %d kills, %d handoffs, %d inbound", p.seed, p.seed, p.kills, p.handoffs, p.inbound)
	rng := rand.New(rand.NewPCG(p.seed, p.seed^0x9e3779b97f4a7c15))

	fake := telegramtest.New(t, crashToken)
	fake.AddChat(telegramtest.Chat{ID: crashForum, Type: telegramtest.Supergroup, Title: "baton", IsForum: true})
	users := (p.inbound + crashPerUser - 1) / crashPerUser
	var owners []string
	for i := range users {
		id := crashFirstUser + int64(i)
		owners = append(owners, strconv.Quote(strconv.FormatInt(id, 10)))
		fake.AddChat(telegramtest.Chat{ID: id, Type: telegramtest.Private})
	}
	srv := crashModel(t)
	home, work := t.TempDir(), t.TempDir()
	batonHome := filepath.Join(home, "baton")
	toolLog := filepath.Join(work, "tools.log")
	if err := os.WriteFile(filepath.Join(work, "tick"), []byte("#!/bin/sh\nsleep 0.05\necho \"$1\" >> tools.log\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	// The web chat listens on one port across restarts, so that its page
	// can reconnect after every kill.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	webAddr := l.Addr().String()
	l.Close()
	writeConfig(t, batonHome, fmt.Sprintf(`web:
  listen: %s
telegram:
  token: %q
  server_url: %q
gateway:
  owners:
    telegram: [%s]
  homes:
    telegram: "telegram:group:%d"
  handoff_lease: 1s
  shutdown_grace: 1s
tools:
  allow: ["shell"] # the fake model only ever calls ./tick ID
`, webAddr, crashToken, fake.URL(), strings.Join(owners, ", "), crashForum))
	logs := crashLogDir(t, p.seed)
	gw := &crashGateway{env: cleanEnv(home, modelEnv(srv)...), dir: work, logs: logs}
	// fail reports the failure with what helps to explain it; the whole
	// gateway logs and the Telegram fake's request log stay in logs.
	fail := func(format string, args ...any) {
		t.Helper()
		var requests strings.Builder
		_ = fake.WriteLog(&requests)
		if err := os.WriteFile(filepath.Join(logs, "telegram-requests.log"), []byte(requests.String()), 0o644); err != nil {
			t.Error(err)
		}
		if err := snapshotStore(filepath.Join(batonHome, sqlite.FileName), filepath.Join(logs, "state.db")); err != nil {
			t.Error(err)
		}
		t.Fatalf("seed %d: "+format+"\n\nTelegram fake: %d updates unconfirmed (confirmed below %d); last requests:\n%s\n\ngateway logs:\n%s\nfull logs (each gateway run, the Telegram fake's requests, a copy of the store) in %s",
			append(append([]any{p.seed}, args...), fake.Pending(), fake.Confirmed(), lastCalls(requests.String(), 20), gw.digest(), logs)...)
	}

	page := newCrashPage(webAddr)
	pageCtx, stopPage := context.WithCancel(context.Background())
	pageDone := make(chan struct{})
	go func() {
		defer close(pageDone)
		page.run(pageCtx, func() string {
			b, _ := os.ReadFile(filepath.Join(batonHome, web.TokenFile))
			return strings.TrimSpace(string(b))
		})
	}()
	t.Cleanup(func() { stopPage(); <-pageDone })

	// The sessions the handoffs move start in the terminal, as `baton`
	// would make them; the first gateway's start creates the owner.
	cmd, exited := gw.start(t)
	st := openStore(t, home)
	ctx := t.Context()
	var me store.User
	testutil.Eventually(t, hangGuard, func() bool {
		u, err := owner.Current(ctx, st)
		me = u
		return err == nil
	}, "the owner to be stored")
	var moving []store.Session
	for i := range p.sessions {
		s, err := st.CreateSession(ctx, store.Session{OwnerID: me.ID, Platform: "cli", Holder: "cli:dm:" + me.ID})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.AppendMessages(ctx, s.ID,
			store.Message{Role: store.RoleUser, Content: fmt.Sprintf("session %d begins", i), Platform: "cli"},
			store.Message{Role: store.RoleAssistant, Content: "Noted.", Platform: "cli"}); err != nil {
			t.Fatal(err)
		}
		moving = append(moving, s)
	}

	// The inbound messages, in the order they are sent: a tenth ask for
	// the tool, a tenth for a long answer; one in ten goes to the forum group, the rest to private
	// chats.
	msgs := make([]inboundMsg, p.inbound)
	for i := range msgs {
		u := i % users
		m := inboundMsg{chat: crashFirstUser + int64(u), from: telegramtest.User{ID: crashFirstUser + int64(u), FirstName: fmt.Sprintf("Owner%d", u)}}
		switch rng.IntN(10) {
		case 0:
			m.chat = crashForum
		case 1, 2, 3:
			m.web = fmt.Sprintf("web:thread:main:crash%d", i%5)
		}
		m.text = fmt.Sprintf("msg-%04d from %d", i, u)
		switch rng.IntN(10) {
		case 0:
			m.tick = true
			m.text += " please tick"
		case 1:
			m.text += " at length"
		}
		m.answer = crashReply(m.text, m.tick)
		msgs[i] = m
	}

	// The chaos: each round sends its share of messages and asks for its
	// share of handoffs (for sessions not moving already), then kills the
	// gateway after a random time — during its start, its recovery, a
	// turn, a tool run, a handoff or a send — and starts another.
	requested := 0
	sent := 0
	var handoffIDs []int64
	for round := range p.kills {
		for ; sent < (round+1)*p.inbound/p.kills; sent++ {
			m := msgs[sent]
			if m.web != "" {
				page.say(m.web, fmt.Sprintf("m%d", sent), m.text)
				continue
			}
			fake.PushMessage(m.chat, 0, m.from, m.text)
		}
		for want := (round + 1) * p.handoffs / p.kills; requested < want; {
			s := moving[rng.IntN(len(moving))]
			h, err := st.HandoffState(ctx, s.ID)
			if err != nil {
				t.Fatal(err)
			}
			if !h.State.Terminal() && h.State != store.HandoffNone {
				if allBusy(ctx, t, st, moving) {
					break // every session is moving: ask in a later round
				}
				continue
			}
			from := "telegram"
			if h.State == store.HandoffNone {
				from = "cli"
			}
			nh, err := st.RequestHandoff(ctx, s.ID, from, "telegram")
			if err != nil {
				t.Fatalf("request handoff of %s: %v", s.ID, err)
			}
			handoffIDs = append(handoffIDs, nh.ID)
			requested++
		}
		life := time.Duration(rng.Int64N(int64(p.maxLife)))
		if round > 0 {
			cmd, exited = gw.start(t)
		}
		timer := time.NewTimer(life) // the chaos schedule itself, not a wait for something
		select {
		case <-timer.C:
		case <-exited:
			fail("the gateway exited on its own in round %d", round)
		}
		_ = cmd.Process.Kill()
		<-exited
	}
	// Settle: one last gateway, never killed, until the work is done;
	// handoffs a busy session could not take yet are asked for meanwhile.
	cmd, exited = gw.start(t)
	testutil.Eventually(t, hangGuard, func() bool {
		for _, s := range moving {
			if requested == p.handoffs {
				return true
			}
			if h, _ := st.HandoffState(ctx, s.ID); h.State.Terminal() {
				nh, err := st.RequestHandoff(ctx, s.ID, "telegram", "telegram")
				if err != nil {
					t.Fatal(err)
				}
				handoffIDs = append(handoffIDs, nh.ID)
				requested++
			}
		}
		return requested == p.handoffs
	}, "sessions free to move")
	settled := testutil.Poll(testutil.Context(t, 3*time.Minute), func() bool {
		select {
		case <-exited:
			return true
		default:
		}
		if fake.Pending() > 0 || page.pending() > 0 {
			return false
		}
		for _, id := range handoffIDs {
			if h, err := st.GetHandoff(ctx, id); err != nil || !h.State.Terminal() {
				return false
			}
		}
		// An answer is in the transcript a moment before its delivery is
		// stored, with its message marked done: done first, then nothing
		// left to send.
		if in, err := st.PendingInbound(ctx, 0, 1); err != nil || len(in) > 0 {
			return false
		}
		if d, err := st.PendingDeliveries(ctx, "", 0); err != nil || len(d) > 0 {
			return false
		}
		ts, err := allTranscripts(ctx, st, me.ID)
		if err != nil {
			return false
		}
		for _, m := range msgs {
			if !hasWholeAnswer(ts, m) && !folded(ts, m.text) {
				return false
			}
		}
		return true
	})
	select {
	case <-exited:
		fail("the last gateway exited on its own")
	default:
	}

	// The verdict.
	var stuck, completed, failed int
	for _, id := range handoffIDs {
		h, err := st.GetHandoff(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		switch h.State {
		case store.HandoffCompleted:
			completed++
		case store.HandoffFailed:
			failed++
		default:
			stuck++
		}
	}
	transcripts, err := allTranscripts(ctx, st, me.ID)
	if err != nil {
		t.Fatal(err)
	}
	userCount, answerCount := map[string]int{}, map[string]int{}
	for _, ms := range transcripts {
		for _, m := range ms {
			switch m.Role {
			case store.RoleUser:
				if m.Kind == "" {
					userCount[m.Content]++
				}
			case store.RoleAssistant:
				answerCount[m.Content]++
			}
		}
	}
	shown := fake.Shown()
	shownCount := map[string]int{}
	for _, s := range shown {
		shownCount[s.ChatID+"\x00"+withoutOffer(s.Plain)]++
	}
	var problems []string
	answered, foldedIn, deliveredTwice, lost := 0, 0, 0, 0
	webShown, webRepeats := 0, 0 // answers shown once on the page; frames it got again and showed once
	for _, m := range msgs {
		if n := userCount[m.text]; n != 1 {
			problems = append(problems, fmt.Sprintf("%q stored %d times", m.text, n))
		}
		if n := answerCount[m.answer]; n == 1 {
			answered++
		} else if n == 0 && m.chat == crashForum && folded(transcripts, m.text) {
			foldedIn++
			continue // answered together with a later message: nothing of its own to deliver
		} else {
			problems = append(problems, fmt.Sprintf("%q has %d whole answers; what follows it: %s", m.text, n, after(transcripts, m.text)))
		}
		if m.web != "" {
			// The page shows a frame once by its id; the same answer under
			// two ids would be a second delivery, which the web chat's
			// acknowledged delivery must never make.
			switch shownOnPage, frames := page.counts(m.answer); {
			case shownOnPage == 0:
				lost++
				problems = append(problems, fmt.Sprintf("the answer to %q was never shown on the page", m.text))
			case shownOnPage > 1:
				problems = append(problems, fmt.Sprintf("the answer to %q was shown %d times on the page", m.text, shownOnPage))
			default:
				webShown++
				webRepeats += frames - 1
			}
			continue
		}
		switch n := shownCount[strconv.FormatInt(m.chat, 10)+"\x00"+m.answer]; {
		case n == 0:
			lost++
			problems = append(problems, fmt.Sprintf("the answer to %q was never shown in chat %d", m.text, m.chat))
		case n > 1:
			deliveredTwice += n - 1
		}
	}
	// Each completed handoff's greeting is shown in its own topic.
	greetingsTwice := 0
	for _, id := range handoffIDs {
		h, _ := st.GetHandoff(ctx, id)
		if h.State != store.HandoffCompleted {
			continue
		}
		addr, err := platform.ParseKey(h.Destination)
		if err != nil {
			problems = append(problems, fmt.Sprintf("handoff %d destination %q: %v", id, h.Destination, err))
			continue
		}
		n := 0
		for _, s := range shown {
			if s.ChatID == addr.Chat && strconv.Itoa(s.ThreadID) == addr.Thread && strings.Contains(s.Plain, "Hello again here.") {
				n++
			}
		}
		switch {
		case n == 0:
			problems = append(problems, fmt.Sprintf("handoff %d: no greeting shown in %s", id, h.Destination))
		case n > 1:
			greetingsTwice += n - 1
		}
	}
	toolRuns, toolTwice := 0, 0
	if data, err := os.ReadFile(toolLog); err == nil {
		lines := map[string]int{}
		for _, l := range strings.Fields(string(data)) {
			lines[l]++
			toolRuns++
		}
		for id, n := range lines {
			if n > 1 {
				toolTwice++
				problems = append(problems, fmt.Sprintf("tool call %s ran %d times", id, n))
			}
		}
	} else if !os.IsNotExist(err) {
		t.Fatal(err)
	}
	ticks := 0
	for _, m := range msgs {
		if m.tick {
			ticks++
		}
	}
	// What the kills interrupted, as evidence that they landed mid-work:
	// answers taken up again (continued from a kept draft, or over
	// OpenAI's protocol asked for anew on the same transcript), tool
	// calls recorded as interrupted.
	continued, interrupted := 0, 0
	asked := map[string]bool{}
	for _, r := range srv.Requests() {
		ms := r.Messages()
		if last, _ := ms[len(ms)-1].(map[string]any); last["role"] == "assistant" {
			continued++
			continue
		}
		if strings.HasPrefix(r.LastUserText(), note.Lead) {
			continue
		}
		k := string(r.Raw) // the same transcript sent again
		if asked[k] {
			continued++
		}
		asked[k] = true
	}
	for _, ms := range transcripts {
		for _, m := range ms {
			if m.Role == store.RoleTool && strings.HasPrefix(m.Content, agent.InterruptedResult) {
				interrupted++
			}
		}
	}
	t.Logf("crash harness: seed %d, kills %d, handoffs %d (completed %d, failed %d, stuck %d), inbound %d (answered once %d, folded into a later message's turn %d, lost %d), "+
		"web answers shown once %d (frames re-sent %d), Telegram shown twice: %d answers + %d greetings, tool calls %d (runs %d, run twice %d, interrupted %d), answers taken up again after a kill %d",
		p.seed, p.kills, len(handoffIDs), completed, failed, stuck, len(msgs), answered, foldedIn, lost,
		webShown, webRepeats, deliveredTwice, greetingsTwice, ticks, toolRuns, toolTwice, interrupted, continued)
	if !settled {
		problems = append(problems, "the last gateway did not settle (some work still pending after 3 minutes)")
	}
	if stuck > 0 {
		problems = append(problems, fmt.Sprintf("%d handoffs stuck pending or running", stuck))
	}
	if len(problems) > 0 {
		if len(problems) > 40 {
			problems = append(problems[:40], fmt.Sprintf("… and %d more", len(problems)-40))
		}
		fail("%d problems:\n%s", len(problems), strings.Join(problems, "\n"))
	}
	gracefulStop(t, cmd, exited)
}

// allBusy reports whether every moving session has a handoff in flight.
func allBusy(ctx context.Context, t *testing.T, st *sqlite.Store, ss []store.Session) bool {
	t.Helper()
	for _, s := range ss {
		h, err := st.HandoffState(ctx, s.ID)
		if err != nil {
			t.Fatal(err)
		}
		if h.State == store.HandoffNone || h.State.Terminal() {
			return false
		}
	}
	return true
}

// allTranscripts is every live transcript of the owner's sessions.
func allTranscripts(ctx context.Context, st store.Store, ownerID string) ([][]store.Message, error) {
	var out [][]store.Message
	for offset := 0; ; offset += 200 {
		ss, err := st.ListSessions(ctx, store.SessionFilter{OwnerID: ownerID, Limit: 200, Offset: offset})
		if err != nil {
			return nil, err
		}
		for _, s := range ss {
			ms, err := st.Transcript(ctx, s.ID)
			if err != nil {
				return nil, err
			}
			out = append(out, ms)
		}
		if len(ss) < 200 {
			return out, nil
		}
	}
}

// hasWholeAnswer reports whether m's whole answer is stored.
func hasWholeAnswer(ts [][]store.Message, m inboundMsg) bool {
	for _, ms := range ts {
		for _, x := range ms {
			if x.Role == store.RoleAssistant && x.Content == m.answer {
				return true
			}
		}
	}
	return false
}

// folded reports whether the message text, in a chat people share, was
// followed in its transcript by another person's message before its own
// answer was stored: the turn then answers the transcript as it stands
// (the newest message), and a cut-off answer to text is kept as cut off
// (agent.InterruptedMarker) rather than continued. That is the agent's
// rule for new input; the harness counts these apart.
func folded(ts [][]store.Message, text string) bool {
	for _, ms := range ts {
		for i, m := range ms {
			if m.Role != store.RoleUser || m.Content != text {
				continue
			}
			for _, n := range ms[i+1:] {
				switch {
				case n.Role == store.RoleUser:
					return true
				case n.Role == store.RoleAssistant && strings.HasSuffix(n.Content, agent.InterruptedMarker):
					continue
				case n.Role == store.RoleTool, n.Role == store.RoleAssistant && n.Content == "":
					continue
				default:
					return false
				}
			}
			return false
		}
	}
	return false
}

// gracefulStop ends the last gateway with SIGTERM, as a person would.
func gracefulStop(t *testing.T, cmd *exec.Cmd, exited chan struct{}) {
	t.Helper()
	_ = cmd.Process.Signal(os.Interrupt)
	select {
	case <-exited:
	case <-time.After(hangGuard):
		t.Errorf("the gateway ignored the interrupt")
	}
}

// after describes what a transcript holds after the user message text.
func after(transcripts [][]store.Message, text string) string {
	for _, ms := range transcripts {
		for i, m := range ms {
			if m.Role != store.RoleUser || m.Content != text {
				continue
			}
			var parts []string
			for _, n := range ms[i+1 : min(len(ms), i+4)] {
				parts = append(parts, fmt.Sprintf("%s %q", n.Role, n.Content))
			}
			return strings.Join(parts, ", ")
		}
	}
	return "(not stored)"
}

// withoutOffer is an answer as the harness's model wrote it: the first
// answer in a place that holds no session ends with the offer of the
// session held elsewhere, in the same message.
func withoutOffer(text string) string {
	if i := strings.LastIndex(text, "\n\nYou were working on "); i >= 0 && strings.HasSuffix(text, "/continue to pick it up here.") {
		return text[:i]
	}
	return text
}
