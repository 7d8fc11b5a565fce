package telegram_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/platform"
	"github.com/baton-agent/baton/internal/platform/telegram"
	"github.com/baton-agent/baton/internal/platform/telegram/telegramtest"
	"github.com/baton-agent/baton/internal/retry"
	"github.com/baton-agent/baton/internal/testutil"
)

const token = "123456:TEST-secret-token-value"

var owner = telegramtest.User{ID: 5001, FirstName: "Ada", Username: "ada"}

type fixture struct {
	srv    *telegramtest.Server
	tg     *telegram.Adapter
	logs   *testutil.SyncBuffer
	states states
}

// states records what the supervisor reported.
type states struct {
	mu  sync.Mutex
	all []platform.Status
}

func (s *states) add(st platform.Status) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.all = append(s.all, st)
}

func (s *states) list() []platform.Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]platform.Status(nil), s.all...)
}

func setup(t *testing.T) *fixture {
	t.Helper()
	srv := telegramtest.New(t, token)
	logs := &testutil.SyncBuffer{}
	tg, err := telegram.New(telegram.Config{
		Token:       token,
		ServerURL:   srv.URL(),
		PollTimeout: time.Second,
		Logger:      slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if strings.Contains(logs.String(), "TEST-secret") {
			t.Errorf("the bot token appears in the logs:\n%s", logs.String())
		}
	})
	return &fixture{srv: srv, tg: tg, logs: logs}
}

// run supervises the adapter's Run with h, as the gateway does (restarts
// made quick), and stops it when the test ends.
func (f *fixture) run(t *testing.T, h platform.ReceiverFunc) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		platform.Supervise(ctx, f.tg, h, retry.Policy{First: 5 * time.Millisecond, Max: 20 * time.Millisecond}, func(s platform.Status) {
			f.states.add(s)
		})
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
}

// collector is a Handler that records events and lets a test wait for them.
type collector struct {
	mu     sync.Mutex
	events []platform.Event
	wake   chan struct{}
}

func newCollector() *collector { return &collector{wake: make(chan struct{})} }

func (c *collector) handle(_ context.Context, ev platform.Event) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.events = append(c.events, ev)
	close(c.wake)
	c.wake = make(chan struct{})
	return nil
}

// waitFor blocks until an event satisfying pred has arrived.
func (c *collector) waitFor(t *testing.T, pred func(platform.Event) bool) platform.Event {
	t.Helper()
	ctx := testutil.Context(t, 0)
	for {
		c.mu.Lock()
		for _, ev := range c.events {
			if pred(ev) {
				c.mu.Unlock()
				return ev
			}
		}
		wake := c.wake
		c.mu.Unlock()
		select {
		case <-ctx.Done():
			t.Fatalf("no matching event; have %+v", c.all())
		case <-wake:
		}
	}
}

func (c *collector) all() []platform.Event {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]platform.Event(nil), c.events...)
}

func textIs(s string) func(platform.Event) bool {
	return func(ev platform.Event) bool { return ev.Text == s }
}

func dm(chat int64) platform.Address {
	return platform.Address{Platform: "telegram", Kind: platform.DM, Chat: strconv.FormatInt(chat, 10)}
}

func ctxT(t *testing.T) context.Context { return testutil.Context(t, 0) }

func TestAdapterCapabilities(t *testing.T) {
	f := setup(t)
	var a platform.Adapter = f.tg
	for name, ok := range map[string]bool{
		"Threader": is[platform.Threader](a), "Typer": is[platform.Typer](a), "Editor": is[platform.Editor](a),
		"Limiter": is[platform.Limiter](a), "Commander": is[platform.Commander](a),
	} {
		if !ok {
			t.Errorf("adapter is not a %s", name)
		}
	}
	if f.tg.Name() != "telegram" || f.tg.MaxMessageLen() != 4096 || f.tg.MessageLen("a😀") != 3 {
		t.Errorf("Name/MaxMessageLen/MessageLen = %q %d %d", f.tg.Name(), f.tg.MaxMessageLen(), f.tg.MessageLen("a😀"))
	}
}

func is[T any](a platform.Adapter) bool { _, ok := a.(T); return ok }

func TestNewNeedsToken(t *testing.T) {
	if _, err := telegram.New(telegram.Config{}); err == nil {
		t.Fatal("New without a token succeeded")
	}
	t.Setenv(telegram.EnvToken, "from-env")
	if c := telegram.FromEnv(telegram.Config{}); c.Token != "from-env" {
		t.Errorf("FromEnv token = %q", c.Token)
	}
	if c := telegram.FromEnv(telegram.Config{Token: "from-config"}); c.Token != "from-config" {
		t.Errorf("FromEnv overrode the config token: %q", c.Token)
	}
	c := telegram.Config{Token: "123:secret"}
	var buf bytes.Buffer
	slog.New(slog.NewTextHandler(&buf, nil)).Info("cfg", "config", c)
	if strings.Contains(buf.String()+c.String(), "secret") {
		t.Errorf("config shows its token: %s / %s", buf.String(), c.String())
	}
}

func TestSendRendersHTML(t *testing.T) {
	f := setup(t)
	id, err := f.tg.Send(ctxT(t), dm(5001), "**Done.** Run `go test` & check <output>:\n\n```go\nx := 1 < 2\n```")
	if err != nil {
		t.Fatal(err)
	}
	sent := f.srv.Sent()
	if len(sent) != 1 {
		t.Fatalf("sent %d messages, want 1", len(sent))
	}
	m := sent[0]
	if id != strconv.Itoa(m.MessageID) {
		t.Errorf("Send returned id %q, server gave %d", id, m.MessageID)
	}
	if m.ParseMode != "HTML" || m.ChatID != "5001" || m.ThreadID != 0 {
		t.Errorf("sent %+v", m)
	}
	for _, want := range []string{"<b>Done.</b>", "<code>go test</code>", "&amp; check &lt;output&gt;", `<pre><code class="language-go">x := 1 &lt; 2</code></pre>`} {
		if !strings.Contains(m.Text, want) {
			t.Errorf("HTML %q lacks %q", m.Text, want)
		}
	}
	if !strings.Contains(m.Plain, "Run go test & check <output>:") {
		t.Errorf("displayed text = %q", m.Plain)
	}
}

func TestSendFallsBackToPlainWhenEntitiesRefused(t *testing.T) {
	f := setup(t)
	f.srv.RejectEntities(1)
	if _, err := f.tg.Send(ctxT(t), dm(5001), "**bold** move"); err != nil {
		t.Fatal(err)
	}
	sent := f.srv.Sent()
	if len(sent) != 1 || sent[0].ParseMode != "" || sent[0].Text != "**bold** move" {
		t.Fatalf("sent %+v, want the markdown once as plain text", sent)
	}
	if n := f.srv.CallCount("sendMessage"); n != 2 {
		t.Errorf("sendMessage called %d times, want 2 (HTML, then plain)", n)
	}
}

// longReply is about 10,000 characters of prose with emoji (two UTF-16
// units each) and paragraph breaks.
func longReply() string {
	var b strings.Builder
	for i := 0; b.Len() < 10000 || len([]rune(b.String())) < 10000; i++ {
		b.WriteString("Sentence " + strconv.Itoa(i) + " says something useful 🚀 about the work. ")
		if i%9 == 8 {
			b.WriteString("\n\n")
		}
	}
	return b.String()
}

func TestSendSplitsLongReplyInOrder(t *testing.T) {
	f := setup(t)
	text := longReply()
	if _, err := f.tg.Send(ctxT(t), dm(5001), text); err != nil {
		t.Fatal(err)
	}
	sent := f.srv.Sent()
	if len(sent) < 3 {
		t.Fatalf("sent %d parts, want at least 3", len(sent))
	}
	var got []string
	for i, m := range sent {
		if n := platform.UTF16Len(m.Plain); n > 4096 {
			t.Errorf("part %d is %d UTF-16 units", i, n)
		}
		got = append(got, m.Plain)
	}
	if strings.Join(strings.Fields(strings.Join(got, " ")), " ") != strings.Join(strings.Fields(text), " ") {
		t.Errorf("parts do not rejoin to the reply in order")
	}
}

// Send tries once and classifies: the gateway alone retries.
func TestSendClassifiesFailuresWithoutRetrying(t *testing.T) {
	f := setup(t)
	f.srv.FailNext("sendMessage", 429, 3)
	_, err := f.tg.Send(ctxT(t), dm(5001), "hello")
	if cl, wait := platform.Classify(err); cl != platform.ClassRetryAfter || wait != 3*time.Second {
		t.Errorf("429: class %v, wait %v (%v); want retry-after 3s", cl, wait, err)
	}
	for _, status := range []int{500, 502, 503} {
		f.srv.FailNext("sendMessage", status, 0)
		_, err := f.tg.Send(ctxT(t), dm(5001), "hello")
		if cl, _ := platform.Classify(err); err == nil || cl != platform.ClassTransient {
			t.Errorf("%d: class %v (%v); want transient", status, cl, err)
		}
	}
	if n := f.srv.CallCount("sendMessage"); n != 4 {
		t.Errorf("sendMessage called %d times, want 4: one per Send", n)
	}
	if _, err := f.tg.Send(ctxT(t), dm(5001), "hello"); err != nil {
		t.Fatal(err)
	}
	if sent := f.srv.Sent(); len(sent) != 1 {
		t.Fatalf("sent %d, want 1", len(sent))
	}
}

func TestSendPermanentFailures(t *testing.T) {
	f := setup(t)
	f.srv.FailNext("sendMessage", 403, 0)
	if _, err := f.tg.Send(ctxT(t), dm(5001), "hi"); !errors.Is(err, platform.ErrPermanent) {
		t.Errorf("403: err = %v, want ErrPermanent", err)
	}
	bad := platform.Address{Platform: "telegram", Kind: platform.DM, Chat: "not-a-chat"}
	if _, err := f.tg.Send(ctxT(t), bad, "hi"); !errors.Is(err, platform.ErrPermanent) {
		t.Errorf("chat not found: err = %v, want ErrPermanent", err)
	}
	if _, err := f.tg.Send(ctxT(t), platform.Address{Platform: "slack", Kind: platform.DM, Chat: "1"}, "hi"); !errors.Is(err, platform.ErrPermanent) {
		t.Errorf("foreign address: err = %v, want ErrPermanent", err)
	}
	if _, err := f.tg.Send(ctxT(t), dm(5001), " \n "); !errors.Is(err, platform.ErrPermanent) {
		t.Errorf("empty text: err = %v, want ErrPermanent", err)
	}
	if n := f.srv.CallCount("sendMessage"); n != 2 {
		t.Errorf("sendMessage called %d times, want 2 (no retries of refusals)", n)
	}
}

func TestRunDeliversAddressesAndStripsBotName(t *testing.T) {
	f := setup(t)
	f.srv.AddChat(telegramtest.Chat{ID: -100777, Type: telegramtest.Supergroup, Title: "work", IsForum: true})
	f.srv.AddChat(telegramtest.Chat{ID: -4000, Type: telegramtest.Group, Title: "friends"})
	f.srv.PushMessage(5001, 0, owner, "hello from the DM")
	f.srv.PushMessage(-4000, 0, owner, "/handoff@"+f.srv.BotUsername()+" cli")
	f.srv.PushMessage(-4000, 0, owner, "/start@some_other_bot")
	f.srv.PushMessage(-100777, 42, owner, "in a topic")
	f.srv.PushMessage(-100777, 0, owner, "in General")
	c := newCollector()
	f.run(t, c.handle)

	ev := c.waitFor(t, textIs("hello from the DM"))
	if ev.At.Key() != "telegram:dm:5001" || ev.SenderID != "5001" || ev.Sender != "Ada" || ev.Time.IsZero() {
		t.Errorf("DM event %+v", ev)
	}
	if !strings.HasPrefix(ev.ID, "5001:") {
		t.Errorf("event id %q is not <chat>:<message>", ev.ID)
	}
	ev = c.waitFor(t, textIs("/handoff cli"))
	if ev.At.Key() != "telegram:group:-4000" {
		t.Errorf("group event at %s", ev.At.Key())
	}
	ev = c.waitFor(t, textIs("in a topic"))
	if ev.At.Key() != "telegram:thread:-100777:42" {
		t.Errorf("topic event at %s", ev.At.Key())
	}
	ev = c.waitFor(t, textIs("in General"))
	if ev.At.Key() != "telegram:group:-100777" {
		t.Errorf("General-topic event at %s", ev.At.Key())
	}
	for _, ev := range c.all() {
		if strings.Contains(ev.Text, "some_other_bot") {
			t.Errorf("a command for another bot was delivered: %+v", ev)
		}
	}
}

func TestRunAdvancesOffsetOnlyAfterHandlerSucceeds(t *testing.T) {
	f := setup(t)
	upd, _ := f.srv.PushMessage(5001, 0, owner, "store me")
	var mu sync.Mutex
	calls := 0
	var confirmedDuring []int64
	done := make(chan struct{})
	f.run(t, func(_ context.Context, ev platform.Event) error {
		mu.Lock()
		defer mu.Unlock()
		calls++
		confirmedDuring = append(confirmedDuring, f.srv.Confirmed())
		if calls == 1 {
			return errors.New("database is locked")
		}
		if calls == 2 {
			close(done)
		}
		return nil
	})
	testutil.Receive(t, done, "the update to be redelivered after the handler failed")
	ctx := ctxT(t)
	if err := f.srv.WaitConfirmed(ctx, upd+1); err != nil {
		t.Fatalf("offset never advanced past the stored update: %v", err)
	}
	mu.Lock()
	for i, c := range confirmedDuring {
		if c > upd {
			t.Errorf("call %d: update %d already confirmed (offset %d) while being handled", i, upd, c)
		}
	}
	mu.Unlock()
	// Nothing more arrives: the handled update is not handed over again.
	next, _ := f.srv.PushMessage(5001, 0, owner, "next")
	if err := f.srv.WaitConfirmed(ctx, next+1); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if calls != 3 {
		t.Errorf("handler called %d times, want 3 (fail, store, next)", calls)
	}
}

func TestRunAnswersARepeatedUpdateOnce(t *testing.T) {
	f := setup(t)
	// The same update twice (a server that lost our acknowledgement), and
	// the same message again under a new update id.
	msg := map[string]any{
		"message_id": 77, "date": time.Now().Unix(), "text": "only once",
		"chat": map[string]any{"id": 5001, "type": "private"},
		"from": map[string]any{"id": 5001, "is_bot": false, "first_name": "Ada"},
	}
	f.srv.PushUpdate(map[string]any{"update_id": 5000, "message": msg})
	f.srv.PushUpdate(map[string]any{"update_id": 5000, "message": msg})
	f.srv.PushMessageID(5001, 0, owner, "only once", 77)
	f.srv.PushMessage(5001, 0, owner, "sentinel")
	c := newCollector()
	f.run(t, c.handle)
	c.waitFor(t, textIs("sentinel"))
	n := 0
	for _, ev := range c.all() {
		if ev.Text == "only once" {
			n++
		}
	}
	if n != 1 {
		t.Errorf("repeated message handled %d times, want 1", n)
	}
}

func TestNewThreadKeyMatchesLaterMessages(t *testing.T) {
	cases := []struct {
		name string
		chat telegramtest.Chat
		home platform.Address
		kind platform.Kind
	}{
		{"forum supergroup", telegramtest.Chat{ID: -100777, Type: telegramtest.Supergroup, Title: "work", IsForum: true},
			platform.Address{Platform: "telegram", Kind: platform.Group, Chat: "-100777"}, platform.Thread},
		{"private chat with topics", telegramtest.Chat{ID: 5001, Type: telegramtest.Private, IsForum: true},
			dm(5001), platform.DM},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := setup(t)
			f.srv.AddChat(tc.chat)
			title := strings.Repeat("Refactor the store ", 10) // longer than 128
			addr, err := f.tg.NewThread(ctxT(t), tc.home, title)
			if err != nil {
				t.Fatal(err)
			}
			topics := f.srv.Topics()
			if len(topics) != 1 || !strings.HasPrefix(topics[0].Name, "Refactor the store") || platform.UTF16Len(topics[0].Name) > 128 {
				t.Fatalf("topics = %+v", topics)
			}
			if addr.Kind != tc.kind || addr.Thread != strconv.Itoa(topics[0].ThreadID) {
				t.Errorf("NewThread = %+v", addr)
			}
			if _, err := f.tg.Send(ctxT(t), addr, "Handed off here."); err != nil {
				t.Fatal(err)
			}
			if s := f.srv.Sent(); s[0].ThreadID != topics[0].ThreadID {
				t.Errorf("confirmation went to thread %d, want %d", s[0].ThreadID, topics[0].ThreadID)
			}
			f.srv.PushMessage(tc.chat.ID, topics[0].ThreadID, owner, "my reply in the topic")
			c := newCollector()
			f.run(t, c.handle)
			ev := c.waitFor(t, textIs("my reply in the topic"))
			if ev.At.Key() != addr.Key() {
				t.Errorf("later message key %q, NewThread key %q", ev.At.Key(), addr.Key())
			}
			if ev.At != addr {
				t.Errorf("later message address %+v, NewThread address %+v", ev.At, addr)
			}
		})
	}
}

func TestNewThreadWhereTopicsAreRefused(t *testing.T) {
	f := setup(t)
	f.srv.AddChat(telegramtest.Chat{ID: -4000, Type: telegramtest.Group})
	home := platform.Address{Platform: "telegram", Kind: platform.Group, Chat: "-4000"}
	if _, err := f.tg.NewThread(ctxT(t), home, "s"); !errors.Is(err, platform.ErrUnsupported) {
		t.Errorf("plain group: err = %v, want ErrUnsupported", err)
	}
	if _, err := f.tg.NewThread(ctxT(t), dm(5001), "s"); !errors.Is(err, platform.ErrUnsupported) {
		t.Errorf("private chat without topics: err = %v, want ErrUnsupported", err)
	}
	f.srv.AddChat(telegramtest.Chat{ID: -100555, Type: telegramtest.Supergroup, IsForum: true, NoTopicRights: true})
	noRights := platform.Address{Platform: "telegram", Kind: platform.Group, Chat: "-100555"}
	if _, err := f.tg.NewThread(ctxT(t), noRights, "s"); !errors.Is(err, platform.ErrUnsupported) {
		t.Errorf("forum without the right to make topics: err = %v, want ErrUnsupported", err)
	}
	// Each is refused in that chat only: another chat may have topics,
	// so none says the server lacks the method.
	for _, at := range []platform.Address{home, dm(5001), noRights} {
		if _, err := f.tg.NewThread(ctxT(t), at, "s"); errors.Is(err, platform.ErrNotOffered) {
			t.Errorf("%s: err = %v, a refusal of one chat read as the server's", at.Key(), err)
		}
	}
}

func TestOptionalMethodsUnsupported(t *testing.T) {
	f := setup(t)
	f.srv.AddChat(telegramtest.Chat{ID: -100777, Type: telegramtest.Supergroup, IsForum: true})
	f.srv.Unsupported("sendChatAction", "createForumTopic", "setMyCommands", "editMessageText")
	ctx := ctxT(t)
	forum := platform.Address{Platform: "telegram", Kind: platform.Group, Chat: "-100777"}
	for i := range 3 {
		if err := f.tg.Typing(ctx, dm(5001)); !errors.Is(err, platform.ErrNotOffered) {
			t.Errorf("Typing #%d: %v", i, err)
		}
	}
	if _, err := f.tg.NewThread(ctx, forum, "t"); !errors.Is(err, platform.ErrNotOffered) {
		t.Errorf("NewThread: %v", err)
	}
	if err := f.tg.SetCommands(ctx, []platform.Command{{Name: "help", Description: "help"}}); !errors.Is(err, platform.ErrNotOffered) {
		t.Errorf("SetCommands: %v", err)
	}
	id, err := f.tg.Send(ctx, forum, "sending still works")
	if err != nil {
		t.Fatal(err)
	}
	if err := f.tg.Edit(ctx, forum, id, "changed"); !errors.Is(err, platform.ErrNotOffered) {
		t.Errorf("Edit: %v", err)
	}
	if n := strings.Count(f.logs.String(), "method=sendChatAction"); n != 1 {
		t.Errorf("sendChatAction refusal logged %d times, want once", n)
	}
}

func TestTypingCommandsAndEdit(t *testing.T) {
	f := setup(t)
	f.srv.AddChat(telegramtest.Chat{ID: -100777, Type: telegramtest.Supergroup, IsForum: true})
	ctx := ctxT(t)
	topic := platform.Address{Platform: "telegram", Kind: platform.Thread, Chat: "-100777", Thread: "9"}
	if err := f.tg.Typing(ctx, topic); err != nil {
		t.Fatal(err)
	}
	var typing *telegramtest.Call
	for _, c := range f.srv.Calls() {
		if c.Method == "sendChatAction" {
			typing = &c
		}
	}
	if typing == nil || typing.Params["action"] != "typing" || typing.Params["message_thread_id"] != "9" || typing.Params["chat_id"] != "-100777" {
		t.Errorf("sendChatAction call = %+v", typing)
	}

	err := f.tg.SetCommands(ctx, []platform.Command{
		{Name: "/handoff", Description: "Move this session elsewhere"},
		{Name: "Resume", Description: ""},
		{Name: "bad-name", Description: "refused by Telegram"},
	})
	if err != nil {
		t.Fatal(err)
	}
	cmds := f.srv.Commands()
	var got []struct{ Command, Description string }
	if len(cmds) != 1 || json.Unmarshal(cmds[0], &got) != nil {
		t.Fatalf("setMyCommands calls = %s", cmds)
	}
	if len(got) != 2 || got[0].Command != "handoff" || got[1].Command != "resume" || got[1].Description == "" {
		t.Errorf("commands = %+v", got)
	}

	id, err := f.tg.Send(ctx, topic, "draft")
	if err != nil {
		t.Fatal(err)
	}
	if err := f.tg.Edit(ctx, topic, id, "**final**"); err != nil {
		t.Fatal(err)
	}
	sent := f.srv.Sent()
	last := sent[len(sent)-1]
	if last.Method != "editMessageText" || strconv.Itoa(last.MessageID) != id || last.Text != "<b>final</b>" {
		t.Errorf("edit = %+v", last)
	}
}

func TestRunRefusedToken(t *testing.T) {
	srv := telegramtest.New(t, token)
	tg, err := telegram.New(telegram.Config{Token: "999:wrong", ServerURL: srv.URL()})
	if err != nil {
		t.Fatal(err)
	}
	err = tg.Run(ctxT(t), platform.ReceiverFunc(func(context.Context, platform.Event) error { return nil }))
	if !errors.Is(err, platform.ErrRefused) {
		t.Fatalf("Run with a refused token: %v, want ErrRefused", err)
	}
	if strings.Contains(err.Error(), "wrong") {
		t.Errorf("the error shows the token: %v", err)
	}
	if want := "Telegram refused the bot token (401 Unauthorized)"; err.Error() != want {
		t.Errorf("error = %q, want %q", err, want)
	}
}

func TestRunReturnsWhenContextEnds(t *testing.T) {
	f := setup(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- f.tg.Run(ctx, platform.ReceiverFunc(func(context.Context, platform.Event) error { return nil }))
	}()
	// Wait until polling has begun, then cancel it.
	testutil.Eventually(t, testutil.Patience, func() bool { return f.srv.CallCount("getMe") > 0 }, "Run to call getMe")
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run = %v, want nil at ctx end", err)
	}
}

// A transport error quotes the request URL with the token replaced by a
// word that survives a one-line status (which strips anything tag-like).
func TestUnreachableServerKeepsTheTokenOut(t *testing.T) {
	const secret = "123456:very-secret"
	a, err := telegram.New(telegram.Config{Token: secret, ServerURL: "http://127.0.0.1:1", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	err = a.Run(t.Context(), platform.ReceiverFunc(func(context.Context, platform.Event) error { return nil }))
	if err == nil {
		t.Fatal("Run against a closed port returned nil")
	}
	line := platform.OneLine(err)
	if strings.Contains(err.Error(), secret) || strings.Contains(line, secret) {
		t.Fatalf("the token leaked: %q", err)
	}
	if !strings.Contains(line, "/botTOKEN/getMe") {
		t.Errorf("status line %q does not say which call failed", line)
	}
}

func TestLink(t *testing.T) {
	a, err := telegram.New(telegram.Config{Token: "1:t"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		at   platform.Address
		want string
	}{
		{platform.Address{Platform: "telegram", Kind: platform.Thread, Chat: "-1001234567890", Thread: "42"}, "https://t.me/c/1234567890/42"},
		{platform.Address{Platform: "telegram", Kind: platform.Group, Chat: "-1001234567890"}, "https://t.me/c/1234567890"},
		{platform.Address{Platform: "telegram", Kind: platform.DM, Chat: "42"}, ""},
		{platform.Address{Platform: "telegram", Kind: platform.Group, Chat: "-4567"}, ""},
	} {
		if got := a.Link(c.at); got != c.want {
			t.Errorf("Link(%s) = %q, want %q", c.at.Key(), got, c.want)
		}
	}
}

// Two programs polling one bot: Telegram ends the older long poll with 409
// Conflict. Run ends with what is going on and what to do, not the bare
// API error, and the other program's poll goes on.
func TestRunSaysAnotherProgramReadsTheBot(t *testing.T) {
	f := setup(t)
	// The first program's long poll outlasts the test, so it is the one
	// waiting when the second program polls: were it between polls then,
	// its next poll would end the second's instead.
	one, err := telegram.New(telegram.Config{Token: token, ServerURL: f.srv.URL(), PollTimeout: time.Minute, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	first := make(chan error, 1)
	go func() {
		first <- one.Run(t.Context(), platform.ReceiverFunc(func(context.Context, platform.Event) error { return nil }))
	}()
	testutil.Eventually(t, testutil.Patience, func() bool { return f.srv.Polls() > 0 }, "the first program to poll")

	other, err := telegram.New(telegram.Config{Token: token, ServerURL: f.srv.URL(), PollTimeout: time.Second, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	second := make(chan error, 1)
	go func() {
		second <- other.Run(ctx, platform.ReceiverFunc(func(context.Context, platform.Event) error { return nil }))
	}()
	err = testutil.Receive(t, first, "the first program's Run to end")
	if err == nil || !strings.Contains(err.Error(), "another program is reading this bot's updates") || !strings.Contains(err.Error(), "409") {
		t.Errorf("Run after another program polled: %v, want the conflict explained", err)
	}
	if errors.Is(err, platform.ErrRefused) {
		t.Errorf("a conflict is not a refused token: %v (it must be retried)", err)
	}
	select {
	case err := <-second:
		t.Errorf("the second program's Run ended too: %v", err)
	default:
	}
	cancel()
	if err := testutil.Receive(t, second, "the second program's Run to end"); err != nil {
		t.Errorf("second Run at its end: %v", err)
	}
}

// A server that answers an optional method with a web server's HTML error
// page (no Bot API JSON) does not have it: the status and the method say
// so, whatever the page's wording, and the refusal is final, not a
// failure to try again.
func TestOptionalMethodsAnsweredByAnErrorPage(t *testing.T) {
	for _, status := range []int{404, 405, 501} {
		t.Run(strconv.Itoa(status), func(t *testing.T) {
			f := setup(t)
			f.srv.AddChat(telegramtest.Chat{ID: -100777, Type: telegramtest.Supergroup, IsForum: true})
			f.srv.ErrorPage(status, "sendChatAction", "createForumTopic", "setMyCommands", "editMessageText")
			ctx := ctxT(t)
			forum := platform.Address{Platform: "telegram", Kind: platform.Group, Chat: "-100777"}
			if err := f.tg.Typing(ctx, dm(5001)); !errors.Is(err, platform.ErrNotOffered) {
				t.Errorf("Typing: %v", err)
			}
			if _, err := f.tg.NewThread(ctx, forum, "t"); !errors.Is(err, platform.ErrNotOffered) {
				t.Errorf("NewThread: %v", err)
			}
			if err := f.tg.SetCommands(ctx, []platform.Command{{Name: "help", Description: "help"}}); !errors.Is(err, platform.ErrNotOffered) {
				t.Errorf("SetCommands: %v", err)
			}
			id, err := f.tg.Send(ctx, forum, "sending still works")
			if err != nil {
				t.Fatal(err)
			}
			if err := f.tg.Edit(ctx, forum, id, "changed"); !errors.Is(err, platform.ErrNotOffered) {
				t.Errorf("Edit: %v", err)
			}
		})
	}
}

// The same pages for sendMessage, which every Bot API server has, are the
// trouble of whatever stands in front of it: tried again, never a refusal
// that would give the reply up.
func TestSendAnsweredByAnErrorPageIsTriedAgain(t *testing.T) {
	f := setup(t)
	for _, status := range []int{404, 405, 501, 502} {
		f.srv.ErrorPage(status, "sendMessage")
		_, err := f.tg.Send(ctxT(t), dm(5001), "hello")
		if cl, _ := platform.Classify(err); err == nil || cl != platform.ClassTransient {
			t.Errorf("%d page: class %v (%v), want transient", status, cl, err)
		}
	}
}
