package slack_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/platform"
	"github.com/baton-agent/baton/internal/platform/slack"
	"github.com/baton-agent/baton/internal/platform/slack/slacktest"
	"github.com/baton-agent/baton/internal/retry"
	"github.com/baton-agent/baton/internal/testutil"
)

// inbox is a Receiver that keeps what arrives and what the supervisor says.
type inbox struct {
	mu       sync.Mutex
	events   []platform.Event
	statuses []platform.Status
}

func (b *inbox) Receive(_ context.Context, ev platform.Event) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.events = append(b.events, ev)
	return nil
}

func (b *inbox) Live() {}

func (b *inbox) report(s platform.Status) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.statuses = append(b.statuses, s)
}

func (b *inbox) got() []platform.Event {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]platform.Event(nil), b.events...)
}

func (b *inbox) last() platform.Status {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.statuses) == 0 {
		return platform.Status{}
	}
	return b.statuses[len(b.statuses)-1]
}

// event waits for the event with id.
func (b *inbox) event(t *testing.T, id string) platform.Event {
	t.Helper()
	var ev platform.Event
	testutil.Eventually(t, testutil.Patience, func() bool {
		for _, e := range b.got() {
			if e.ID == id {
				ev = e
				return true
			}
		}
		return false
	}, "the event "+id)
	return ev
}

// supervise runs a as the gateway does until the test ends.
func supervise(t *testing.T, a platform.Adapter, b *inbox) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		platform.Supervise(ctx, a, b, retry.Policy{First: 5 * time.Millisecond, Max: 50 * time.Millisecond}, b.report)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
}

func say(fake *slacktest.Server, m slacktest.Message) string {
	ts, _ := fake.PushMessage(m)
	return m.Channel + ":" + ts
}

func TestMessagesDecoded(t *testing.T) {
	fake := slacktest.New(t, botToken, appToken)
	a := newAdapter(t, fake)
	b := &inbox{}
	supervise(t, a, b)

	// A mention of the bot that starts a message is taken off; Slack's
	// markup becomes what the person typed.
	ev := b.event(t, say(fake, slacktest.Message{Channel: channel, User: owner,
		Text: "<@" + slacktest.BotUserID + "> /handoff cli &amp; see <https://example.com/a?b=1&amp;c=2|the docs> or <https://x.org>, cc <@U0OTHER>"}))
	if want := "/handoff cli & see the docs (https://example.com/a?b=1&c=2) or https://x.org, cc @U0OTHER"; ev.Text != want {
		t.Errorf("text %q, want %q", ev.Text, want)
	}
	if ev.At != (platform.Address{Platform: "slack", Kind: platform.Group, Chat: channel}) || ev.SenderID != owner {
		t.Errorf("event %+v", ev)
	}
	if ev.Time.Unix() < 1_700_000_000 {
		t.Errorf("time %v not read from ts", ev.Time)
	}

	// A DM, a thread in a channel and a thread in a DM.
	dm := b.event(t, say(fake, slacktest.Message{Channel: "D0DM", User: owner, Text: "in the DM"}))
	if dm.At != (platform.Address{Platform: "slack", Kind: platform.DM, Chat: "D0DM"}) {
		t.Errorf("DM at %+v", dm.At)
	}
	th := b.event(t, say(fake, slacktest.Message{Channel: channel, User: owner, Text: "in a thread", ThreadTS: "1700000000.000100"}))
	if th.At != (platform.Address{Platform: "slack", Kind: platform.Thread, Chat: channel, Thread: "1700000000.000100"}) {
		t.Errorf("thread at %+v", th.At)
	}
	dmth := b.event(t, say(fake, slacktest.Message{Channel: "D0DM", User: owner, Text: "DM thread", ThreadTS: "1700000000.000200"}))
	if dmth.At != (platform.Address{Platform: "slack", Kind: platform.DM, Chat: "D0DM", Thread: "1700000000.000200"}) {
		t.Errorf("DM thread at %+v", dmth.At)
	}

	// A mention delivered as both a message and an app_mention is handed
	// over once; the bot's own posts and edits never.
	id := say(fake, slacktest.Message{Channel: channel, User: owner, Text: "<@" + slacktest.BotUserID + "> twice?", Mention: true})
	if _, err := a.Send(testutil.Context(t, 0), platform.Address{Platform: "slack", Kind: platform.Group, Chat: channel}, "my own words"); err != nil {
		t.Fatal(err)
	}
	fake.PushEnvelope("events_api", map[string]any{"type": "event_callback", "event": map[string]any{
		"type": "message", "subtype": "message_changed", "channel": channel, "ts": "1.2", "user": owner}})
	marker := say(fake, slacktest.Message{Channel: channel, User: owner, Text: "marker"})
	b.event(t, marker)
	testutil.Eventually(t, testutil.Patience, func() bool { return fake.Unacked() == 0 }, "every envelope acknowledged")
	n := 0
	for _, e := range b.got() {
		if e.ID == id {
			n++
		}
		if strings.Contains(e.Text, "my own words") || e.SenderID == slacktest.BotUserID {
			t.Errorf("the bot's own message was handed over: %+v", e)
		}
	}
	if n != 1 {
		t.Errorf("a mention arrived %d times, want 1", n)
	}

	// A slash command configured in the app arrives as the command typed.
	fake.PushEnvelope("slash_commands", map[string]any{"command": "/handoff", "text": "cli", "channel_id": "D0DM",
		"user_id": owner, "user_name": "owner", "trigger_id": "trig-1"})
	cmd := b.event(t, "slash:trig-1")
	if cmd.Text != "/handoff cli" || cmd.At.Kind != platform.DM || cmd.SenderID != owner {
		t.Errorf("slash command %+v", cmd)
	}
}

func TestReconnects(t *testing.T) {
	fake := slacktest.New(t, botToken, appToken)
	a := newAdapter(t, fake)
	b := &inbox{}
	supervise(t, a, b)
	b.event(t, say(fake, slacktest.Message{Channel: channel, User: owner, Text: "first"}))
	if n := fake.Connects(); n != 1 {
		t.Fatalf("%d connections before any trouble", n)
	}

	// A disconnect envelope: the client closes and opens a new connection.
	fake.Disconnect("refresh_requested")
	testutil.Eventually(t, testutil.Patience, func() bool { return fake.Connects() == 2 && fake.OpenSockets() == 1 }, "a second connection replacing the first")
	if r := b.last(); r.State == platform.StateRefused {
		t.Fatalf("a disconnect request counted as refused: %+v", r)
	}
	b.event(t, say(fake, slacktest.Message{Channel: channel, User: owner, Text: "after the refresh"}))

	// A socket dropped without a close frame.
	fake.DropSockets()
	testutil.Eventually(t, testutil.Patience, func() bool { return fake.Connects() == 3 && fake.OpenSockets() == 1 }, "a third connection after the drop")
	b.event(t, say(fake, slacktest.Message{Channel: channel, User: owner, Text: "after the drop"}))

	// Nothing arrived twice.
	seen := map[string]bool{}
	for _, e := range b.got() {
		if seen[e.ID] {
			t.Errorf("%q arrived twice", e.Text)
		}
		seen[e.ID] = true
	}
}

// A connection that stops answering pings is given up, and a new one made.
func TestDeadSocketDetected(t *testing.T) {
	fake := slacktest.New(t, botToken, appToken)
	a, err := slack.New(slack.Config{BotToken: botToken, AppToken: appToken, APIURL: fake.APIURL(), PingEvery: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	fake.StopAnswering()
	b := &inbox{}
	supervise(t, a, b)
	testutil.Eventually(t, testutil.Patience, func() bool { return fake.Connects() >= 2 }, "a reconnection after unanswered pings")
	testutil.Eventually(t, testutil.Patience, func() bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		for _, s := range b.statuses {
			if s.State == platform.StateDown && strings.Contains(s.Reason, "ping") {
				return true
			}
		}
		return false
	}, "a down status naming the ping")
}

func TestRefusedTokens(t *testing.T) {
	fake := slacktest.New(t, botToken, appToken)
	for _, c := range []struct{ name, bot, app string }{
		{"bot token", "xoxb-wrong", appToken},
		{"app token", botToken, "xapp-wrong"},
	} {
		a, err := slack.New(slack.Config{BotToken: c.bot, AppToken: c.app, APIURL: fake.APIURL()})
		if err != nil {
			t.Fatal(err)
		}
		err = a.Run(testutil.Context(t, 0), &inbox{})
		if !errors.Is(err, platform.ErrRefused) {
			t.Errorf("%s refused: Run = %v, want ErrRefused", c.name, err)
		}
		if err != nil && (strings.Contains(err.Error(), "wrong") || strings.Contains(err.Error(), "xox")) {
			t.Errorf("%s: the token leaked into the error: %v", c.name, err)
		}
	}
	if _, err := slack.New(slack.Config{BotToken: botToken, AppToken: "xoxb-not-an-app-token"}); err == nil {
		t.Error("a bot token given as the app token was accepted")
	}
}

func TestSendAndClassify(t *testing.T) {
	fake := slacktest.New(t, botToken, appToken)
	a := newAdapter(t, fake)
	ctx := testutil.Context(t, 0)
	thread := platform.Address{Platform: "slack", Kind: platform.Thread, Chat: channel, Thread: "1700000000.000100"}

	// A long reply is split; every part stays in the thread.
	long := strings.Repeat("All work and no play makes a dull agent. ", 300)
	first, err := a.Send(ctx, thread, long)
	if err != nil || first == "" {
		t.Fatalf("Send = %q, %v", first, err)
	}
	posts := fake.Posts()
	if len(posts) < 3 {
		t.Fatalf("a %d-character reply came in %d posts", len(long), len(posts))
	}
	var joined []string
	for _, p := range posts {
		if p.ThreadTS != thread.Thread || p.Broadcast {
			t.Errorf("a part left the thread: %+v", p)
		}
		if n := len([]rune(p.Text)); n > slack.MaxMessageLen {
			t.Errorf("a part of %d characters", n)
		}
		joined = append(joined, p.Text)
	}
	if strings.Join(strings.Fields(strings.Join(joined, " ")), " ") != strings.TrimSpace(long) {
		t.Error("the parts do not rejoin to the reply")
	}
	if posts[0].TS != first {
		t.Errorf("Send returned %q, the first post is %q", first, posts[0].TS)
	}

	// Edits go through chat.update and keep the thread.
	if err := a.Edit(ctx, thread, first, "**done**"); err != nil {
		t.Fatal(err)
	}
	if shown := fake.Shown()[0]; shown.Text != "*done*" || shown.ThreadTS != thread.Thread {
		t.Errorf("edited message %+v", shown)
	}

	cases := []struct {
		code string
		want platform.Class
	}{
		{"channel_not_found", platform.ClassPermanent},
		{"not_in_channel", platform.ClassPermanent},
		{"invalid_auth", platform.ClassRefused},
		{"internal_error", platform.ClassTransient},
	}
	for _, c := range cases {
		fake.FailNextWith("chat.postMessage", c.code)
		_, err := a.Send(ctx, thread, "hello")
		if cl, _ := platform.Classify(err); err == nil || cl != c.want || !strings.Contains(err.Error(), c.code) {
			t.Errorf("Send answered %s: %v (class %v), want %v", c.code, err, cl, c.want)
		}
	}
	fake.FailNext("chat.postMessage", 429, 7*time.Second)
	_, err = a.Send(ctx, thread, "hello")
	if cl, wait := platform.Classify(err); cl != platform.ClassRetryAfter || wait != 7*time.Second {
		t.Errorf("429: %v, class %v wait %v", err, cl, wait)
	}
	fake.FailNextWith("chat.update", "message_not_found")
	if err := a.Edit(ctx, thread, first, "again"); !errors.Is(err, platform.ErrPermanent) {
		t.Errorf("edit of a vanished message: %v", err)
	}
}

func TestThreadsAndTyping(t *testing.T) {
	fake := slacktest.New(t, botToken, appToken)
	a := newAdapter(t, fake)
	ctx := testutil.Context(t, 0)
	home := platform.Address{Platform: "slack", Kind: platform.Group, Chat: channel}

	th, err := a.NewThread(ctx, home, "Trip *planning* <#1>")
	if err != nil {
		t.Fatal(err)
	}
	root := fake.Posts()[0]
	if th != (platform.Address{Platform: "slack", Kind: platform.Thread, Chat: channel, Thread: root.TS}) || root.ThreadTS != "" {
		t.Fatalf("thread %+v, root %+v", th, root)
	}
	if !strings.Contains(root.Text, "Trip *planning* &lt;#1&gt;") {
		t.Errorf("root text %q", root.Text)
	}
	dm, err := a.NewThread(ctx, platform.Address{Platform: "slack", Kind: platform.DM, Chat: "D0DM"}, "t")
	if err != nil || dm.Kind != platform.DM || dm.Chat != "D0DM" || dm.Thread == "" {
		t.Errorf("thread in a DM: %+v %v", dm, err)
	}

	// Typing: a status under a thread; nothing at the top level.
	if err := a.Typing(ctx, th); err != nil {
		t.Fatal(err)
	}
	if err := a.Typing(ctx, home); err != nil {
		t.Fatal(err)
	}
	if st := fake.Statuses(); len(st) != 1 || st[0].ThreadTS != th.Thread || st[0].Channel != channel || st[0].Status == "" {
		t.Errorf("statuses %+v", st)
	}

	// Refusals of the optional methods.
	fake.FailNextWith("assistant.threads.setStatus", "missing_scope")
	if err := a.Typing(ctx, th); !errors.Is(err, platform.ErrUnsupported) {
		t.Errorf("typing without the scope: %v", err)
	}
	fake.Unsupported("assistant.threads.setStatus")
	if err := a.Typing(ctx, th); !errors.Is(err, platform.ErrUnsupported) {
		t.Errorf("typing on a server without setStatus: %v", err)
	}
	fake.FailNextWith("chat.postMessage", "restricted_action_non_threadable_channel")
	if _, err := a.NewThread(ctx, home, "t"); !errors.Is(err, platform.ErrUnsupported) {
		t.Errorf("thread in a non-threadable channel: %v", err)
	}
	fake.FailNextWith("chat.postMessage", "not_in_channel")
	if _, err := a.NewThread(ctx, home, "t"); !errors.Is(err, platform.ErrPermanent) {
		t.Errorf("thread where the bot is not a member: %v", err)
	}
}
