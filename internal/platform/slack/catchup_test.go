package slack_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/platform"
	"github.com/baton-agent/baton/internal/platform/platformtest"
	"github.com/baton-agent/baton/internal/platform/slack"
	"github.com/baton-agent/baton/internal/platform/slack/slacktest"
	"github.com/baton-agent/baton/internal/retry"
	"github.com/baton-agent/baton/internal/testutil"
)

// baton was away longer than Slack retries: what people said meanwhile,
// in the channel, the DM and the thread where they had spoken to baton
// before, is fetched from the history when baton connects again — every
// message once, oldest first, in its place, before anything said after —
// and a catch-up cut short by a failure is done again by the next
// connection.
func TestCatchUpAfterAnOutage(t *testing.T) {
	for _, fail := range []bool{false, true} {
		t.Run(fmt.Sprintf("failing once %v", fail), func(t *testing.T) {
			fake := slacktest.New(t, botToken, appToken)
			mem := platformtest.NewMemory()
			adapter := func() *slack.Adapter {
				a, err := slack.New(slack.Config{BotToken: botToken, AppToken: appToken, APIURL: fake.APIURL(),
					Logger: slog.New(slog.DiscardHandler), Memory: mem})
				if err != nil {
					t.Fatal(err)
				}
				return a
			}
			run := func(a *slack.Adapter, b *inbox) (stop func()) {
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan struct{})
				go func() {
					defer close(done)
					platform.Supervise(ctx, a, b, retry.Policy{First: 5 * time.Millisecond, Max: 50 * time.Millisecond}, b.report)
				}()
				stop = func() { cancel(); <-done }
				t.Cleanup(stop)
				return stop
			}

			first := &inbox{}
			stop := run(adapter(), first)
			rootTS, _ := fake.PushMessage(slacktest.Message{Channel: channel, User: owner, Text: "a thread's root"})
			first.event(t, channel+":"+rootTS)
			for _, m := range []slacktest.Message{
				{Channel: "D0DM", User: owner, Text: "in the DM"},
				{Channel: channel, User: owner, Text: "in the thread", ThreadTS: rootTS},
			} {
				first.event(t, say(fake, m))
			}
			stop()
			testutil.Eventually(t, testutil.Patience, func() bool { return fake.OpenSockets() == 0 }, "the first run's socket to close")

			// The outage: 120 messages at the channel's top level (two
			// pages), two in the DM, two in the thread, one where nobody
			// had spoken to baton; Slack gives up on all their envelopes.
			var gap []string
			for i := range 120 {
				gap = append(gap, say(fake, slacktest.Message{Channel: channel, User: owner, Text: fmt.Sprintf("top %d", i)}))
			}
			for i := range 2 {
				gap = append(gap, say(fake, slacktest.Message{Channel: "D0DM", User: owner, Text: fmt.Sprintf("dm %d", i)}))
			}
			for i := range 2 {
				gap = append(gap, say(fake, slacktest.Message{Channel: channel, User: owner, Text: fmt.Sprintf("thread %d", i), ThreadTS: rootTS}))
			}
			quiet := say(fake, slacktest.Message{Channel: "C0QUIET", User: owner, Text: "nobody spoke to baton here"})
			fake.ExpireUnacked()
			if fail {
				fake.FailNext("conversations.history", http.StatusInternalServerError, 0)
			}

			second := &inbox{}
			run(adapter(), second)
			for _, id := range gap {
				second.event(t, id)
			}
			after := say(fake, slacktest.Message{Channel: channel, User: owner, Text: "after the outage"})
			second.event(t, after)

			pos := map[string]int{}
			got := second.got()
			for i, e := range got {
				if _, dup := pos[e.ID]; dup {
					t.Errorf("%q came twice", e.Text)
				}
				pos[e.ID] = i
			}
			if _, ok := pos[quiet]; ok {
				t.Error("a channel nobody had spoken to baton in was caught up")
			}
			if _, ok := pos[channel+":"+rootTS]; ok {
				t.Error("the thread's root, handed over before the outage, came again")
			}
			for i := 1; i < len(gap); i++ {
				same := i != 120 && i != 122 // where the DM and the thread begin
				if same && pos[gap[i]] < pos[gap[i-1]] {
					t.Fatalf("%q came before %q", got[pos[gap[i]]].Text, got[pos[gap[i-1]]].Text)
				}
			}
			for _, id := range gap {
				if pos[after] < pos[id] {
					t.Fatalf("the message after the outage came before %q", got[pos[id]].Text)
				}
			}
			if at := got[pos[gap[0]]].At; at != (platform.Address{Platform: "slack", Kind: platform.Group, Chat: channel}) {
				t.Errorf("a caught-up top-level message is at %+v", at)
			}
			if at := got[pos[gap[120]]].At; at != (platform.Address{Platform: "slack", Kind: platform.DM, Chat: "D0DM"}) {
				t.Errorf("a caught-up DM is at %+v", at)
			}
			if at := got[pos[gap[122]]].At; at != (platform.Address{Platform: "slack", Kind: platform.Thread, Chat: channel, Thread: rootTS}) {
				t.Errorf("a caught-up thread reply is at %+v", at)
			}
			// Two history pages for the top level and one for the DM, the
			// thread's replies; cut short, all of it again.
			want := 3
			if fail {
				want = 4
			}
			if n := fake.CallCount("conversations.history"); n < want {
				t.Errorf("%d history requests, want at least %d", n, want)
			}
			if n := fake.CallCount("conversations.replies"); n < 1 {
				t.Errorf("%d replies requests, want at least 1", n)
			}
		})
	}
}

// A file shared while baton was away is caught up with its message, and
// read from the file host like one that came over the socket.
func TestCatchUpBringsFiles(t *testing.T) {
	fake := slacktest.New(t, botToken, appToken)
	mem := platformtest.NewMemory()
	adapter := func() *slack.Adapter {
		a, err := slack.New(slack.Config{BotToken: botToken, AppToken: appToken, APIURL: fake.APIURL(), FilesURL: fake.FilesURL(),
			Logger: slog.New(slog.DiscardHandler), Memory: mem})
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	first := &inbox{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		platform.Supervise(ctx, adapter(), first, retry.Policy{First: 5 * time.Millisecond, Max: 50 * time.Millisecond}, first.report)
	}()
	first.event(t, say(fake, slacktest.Message{Channel: channel, User: owner, Text: "hello"}))
	cancel()
	<-done
	testutil.Eventually(t, testutil.Patience, func() bool { return fake.OpenSockets() == 0 }, "the first run's socket to close")

	ts, _ := fake.PushFile(slacktest.Message{Channel: channel, User: owner}, slacktest.File{Name: "away.pdf", Mimetype: "application/pdf", Data: []byte("%PDF-1.4 away")})
	fake.ExpireUnacked()
	second := &inbox{}
	supervise(t, adapter(), second)
	ev := second.event(t, channel+":"+ts)
	if len(ev.Attachments) != 1 || ev.Attachments[0].Name != "away.pdf" || ev.Attachments[0].Kind != platform.KindDocument {
		t.Fatalf("the file caught up arrived as %+v", ev)
	}
	rc, err := ev.Attachments[0].Open(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	if data, err := io.ReadAll(rc); err != nil || string(data) != "%PDF-1.4 away" {
		t.Errorf("read back %q, %v", data, err)
	}
}
