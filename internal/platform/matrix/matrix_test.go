package matrix_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/platform"
	"github.com/baton-agent/baton/internal/platform/matrix"
	"github.com/baton-agent/baton/internal/platform/matrix/matrixtest"
	"github.com/baton-agent/baton/internal/testutil"
)

// inbox is a Receiver that keeps what arrived, in order.
type inbox struct {
	mu     sync.Mutex
	events []platform.Event
	live   chan struct{}
	once   sync.Once
}

func newInbox() *inbox { return &inbox{live: make(chan struct{})} }

func (in *inbox) Receive(_ context.Context, ev platform.Event) error {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.events = append(in.events, ev)
	return nil
}

func (in *inbox) Live() { in.once.Do(func() { close(in.live) }) }

func (in *inbox) texts() []string {
	in.mu.Lock()
	defer in.mu.Unlock()
	var out []string
	for _, e := range in.events {
		out = append(out, e.Text)
	}
	return out
}

func (in *inbox) has(text string) bool {
	for _, t := range in.texts() {
		if t == text {
			return true
		}
	}
	return false
}

// run runs a until the returned stop is called (or the test ends) and
// waits for it to be live.
func run(t *testing.T, a *matrix.Adapter, in *inbox) (stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx, in) }()
	var once sync.Once
	var err error
	stop = func() error {
		once.Do(func() {
			cancel()
			err = <-done
		})
		return err
	}
	t.Cleanup(func() { _ = stop() })
	select {
	case <-in.live:
	case err := <-done:
		t.Fatalf("Run ended before it was live: %v", err)
	case <-testutil.Context(t, 0).Done():
		t.Fatal("the adapter never became live")
	}
	return stop
}

func say(t *testing.T, u *matrixtest.User, room, text string) string {
	t.Helper()
	id, err := u.Say(testutil.Context(t, 0), room, text)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// A restart with the stored sync token hands over what was said while
// the adapter was away, and nothing it had handed over before.
func TestRestartNeitherReplaysNorLoses(t *testing.T) {
	w := newWorld(t)
	mem := newMemory()
	in := newInbox()
	stop := run(t, w.adapter(t, w.hs.URL(), mem), in)
	first := say(t, w.Owner, w.Room, "before the restart")
	testutil.Eventually(t, testutil.Patience, func() bool { return in.has("before the restart") }, "the first message")
	testutil.Eventually(t, testutil.Patience, func() bool {
		again, err := w.Bot.SyncedAfter(context.Background(), since(mem), first)
		return err == nil && !again
	}, "the token stored past the first message")
	if err := stop(); err != nil {
		t.Fatalf("Run after stop: %v", err)
	}
	say(t, w.Owner, w.Room, "while away 1")
	say(t, w.Owner, w.Room, "while away 2")

	in2 := newInbox()
	run(t, w.adapter(t, w.hs.URL(), mem), in2) // a new process: only the store remembers
	say(t, w.Owner, w.Room, "after the restart")
	testutil.Eventually(t, testutil.Patience, func() bool { return in2.has("after the restart") }, "the message after the restart")
	if got := strings.Join(in2.texts(), "|"); got != "while away 1|while away 2|after the restart" {
		t.Errorf("after the restart the adapter handed over %q", got)
	}
}

// More was said while the adapter was away than one sync returns: the
// rest is fetched, and everything arrives once, in order.
func TestLimitedTimelineIsCompleted(t *testing.T) {
	w := newWorld(t)
	mem := newMemory()
	in := newInbox()
	stop := run(t, w.adapter(t, w.hs.URL(), mem), in)
	first := say(t, w.Owner, w.Room, "first")
	testutil.Eventually(t, testutil.Patience, func() bool {
		again, err := w.Bot.SyncedAfter(context.Background(), since(mem), first)
		return in.has("first") && err == nil && !again
	}, "the first message, stored")
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	var want []string
	for i := range 7 {
		text := fmt.Sprintf("missed %d", i)
		say(t, w.Owner, w.Room, text)
		want = append(want, text)
	}
	a, err := matrix.New(matrix.Config{HomeserverURL: w.hs.URL(), AccessToken: w.Bot.Token, Memory: mem,
		SyncTimeout: 2 * time.Second, TimelineLimit: 2})
	if err != nil {
		t.Fatal(err)
	}
	in2 := newInbox()
	run(t, a, in2)
	testutil.Eventually(t, testutil.Patience, func() bool { return in2.has("missed 6") }, "the last missed message")
	say(t, w.Owner, w.Room, "marker")
	testutil.Eventually(t, testutil.Patience, func() bool { return in2.has("marker") }, "the marker")
	if got, exp := strings.Join(in2.texts(), "|"), strings.Join(append(want, "marker"), "|"); got != exp {
		t.Errorf("handed over %q\nwant %q", got, exp)
	}
}

// The very first start begins from now: old history is not answered.
func TestFirstStartSkipsHistory(t *testing.T) {
	w := newWorld(t)
	old := say(t, w.Owner, w.Room, "old news")
	// The homeserver indexes what is sent for /sync a moment later: the
	// adapter starts once the bot's own sync shows it, so it is history.
	testutil.Eventually(t, testutil.Patience, func() bool {
		seen, err := w.Bot.SyncedAfter(context.Background(), "", old)
		return err == nil && seen
	}, "the old message in the homeserver's sync")
	in := newInbox()
	run(t, w.adapter(t, w.hs.URL(), newMemory()), in)
	say(t, w.Owner, w.Room, "fresh")
	testutil.Eventually(t, testutil.Patience, func() bool { return in.has("fresh") }, "the fresh message")
	if got := strings.Join(in.texts(), "|"); got != "fresh" {
		t.Errorf("handed over %q, want only the message after the start", got)
	}
}

// Invitations from an owner are accepted, everyone else's declined; what
// the owner said after inviting is handed over, the room's older history
// is not.
func TestInvitesOnlyFromOwner(t *testing.T) {
	w := newWorld(t)
	in := newInbox()
	run(t, w.adapter(t, w.hs.URL(), newMemory()), in)
	ctx := testutil.Context(t, 0)

	mine, err := w.Owner.CreateRoom(ctx, "owner's room")
	if err != nil {
		t.Fatal(err)
	}
	say(t, w.Owner, mine, "said before the bot was invited")
	if err := w.Owner.Invite(ctx, mine, w.Bot.ID); err != nil {
		t.Fatal(err)
	}
	theirs, err := w.Stranger.CreateRoom(ctx, "stranger's room", w.Bot.ID)
	if err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, testutil.Patience, func() bool {
		m, err := w.Owner.Membership(ctx, mine, w.Bot.ID)
		return err == nil && m == "join"
	}, "the bot to join the owner's room")
	testutil.Eventually(t, testutil.Patience, func() bool {
		m, err := w.Stranger.Membership(ctx, theirs, w.Bot.ID)
		return err == nil && m == "leave"
	}, "the bot to decline the stranger's invitation")
	say(t, w.Owner, mine, "hello in my room")
	ev := waitEvent(t, in, "hello in my room")
	if ev.At != (platform.Address{Platform: matrix.Name, Kind: platform.Group, Chat: mine}) || ev.SenderID != w.Owner.ID {
		t.Errorf("the owner's message arrived as %+v", ev)
	}
	if in.has("said before the bot was invited") {
		t.Errorf("history from before the invitation was handed over: %q", in.texts())
	}
}

func waitEvent(t *testing.T, in *inbox, text string) platform.Event {
	t.Helper()
	var ev platform.Event
	testutil.Eventually(t, testutil.Patience, func() bool {
		in.mu.Lock()
		defer in.mu.Unlock()
		for _, e := range in.events {
			if e.Text == text {
				ev = e
				return true
			}
		}
		return false
	}, "the event "+text)
	return ev
}

// A handoff thread: the root event in the home room, every reply with an
// m.thread relation (falling back to a reply to the newest event), HTML
// formatting, no mentions; the person's Element-style reply maps to
// exactly the thread's address; the bot's own messages, notices and edits
// are not handed over.
func TestThreadAsElementShowsIt(t *testing.T) {
	w := newWorld(t)
	in := newInbox()
	a := w.adapter(t, w.hs.URL(), newMemory())
	run(t, a, in)
	ctx := testutil.Context(t, 0)

	th, err := a.NewThread(ctx, w.home, "Trip   planning\n#ab12")
	if err != nil {
		t.Fatal(err)
	}
	if th.Kind != platform.Thread || th.Chat != w.Room || !strings.HasPrefix(th.Thread, "$") {
		t.Fatalf("NewThread = %+v", th)
	}
	first, err := a.Send(ctx, th, "Hi on **Matrix** — we were booking the `9:40` train.\n\n- a <b>raw</b> tag\n- [link](https://example.org)")
	if err != nil {
		t.Fatal(err)
	}
	second, err := a.Send(ctx, th, "@room nobody is pinged")
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Typing(ctx, th); err != nil {
		t.Errorf("typing: %v", err)
	}
	byID := shown(t, w.Owner, w.Room, func(byID map[string]matrixtest.Message) bool {
		_, a := byID[th.Thread]
		_, b := byID[first]
		_, c := byID[second]
		return a && b && c
	})
	root := byID[th.Thread]
	if root.Sender != w.Bot.ID || root.Thread != "" || !strings.Contains(root.Body, "Trip planning #ab12") {
		t.Errorf("thread root %+v", root)
	}
	m1, m2 := byID[first], byID[second]
	if m1.Thread != th.Thread || !m1.FallingBack || m1.InReplyTo != th.Thread {
		t.Errorf("first reply's relation: thread %q falling back %v in reply to %q", m1.Thread, m1.FallingBack, m1.InReplyTo)
	}
	if m2.Thread != th.Thread || m2.InReplyTo != first {
		t.Errorf("second reply's relation: thread %q in reply to %q, want the newest event %q", m2.Thread, m2.InReplyTo, first)
	}
	if m1.Format != "org.matrix.custom.html" || !strings.Contains(m1.FormattedBody, "<strong>Matrix</strong>") ||
		!strings.Contains(m1.FormattedBody, "<code>9:40</code>") || !strings.Contains(m1.FormattedBody, "&lt;b&gt;raw&lt;/b&gt;") ||
		!strings.Contains(m1.FormattedBody, `<a href="https://example.org">link</a>`) || !strings.Contains(m1.FormattedBody, "<li>") {
		t.Errorf("formatted body %q", m1.FormattedBody)
	}
	if !strings.Contains(m1.Body, "**Matrix**") {
		t.Errorf("plain body %q", m1.Body)
	}
	if m1.Mentions || m2.Mentions || !strings.Contains(string(m2.Raw), `"m.mentions":{}`) {
		t.Errorf("mentions set: %s", m2.Raw)
	}

	// The person replies in the thread as Element does.
	reply, err := w.Owner.SayInThread(ctx, w.Room, th.Thread, second, "my reply in the thread")
	if err != nil {
		t.Fatal(err)
	}
	ev := waitEvent(t, in, "my reply in the thread")
	if ev.At != th || ev.At.Key() != th.Key() || ev.ID != reply {
		t.Errorf("the thread reply arrived at %+v (%s), NewThread gave %+v", ev.At, ev.ID, th)
	}
	// Later bot messages reply to the newest event, the person's.
	third, err := a.Send(ctx, th, "answer")
	if err != nil {
		t.Fatal(err)
	}
	// Edits, notices and the bot's own messages are not new messages.
	if err := a.Edit(ctx, th, third, "answer, *edited*"); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Owner.Send(ctx, w.Room, map[string]any{"msgtype": "m.notice", "body": "a notice"}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Owner.Send(ctx, w.Room, map[string]any{"msgtype": "m.text", "body": "* fixed", "m.new_content": map[string]any{"msgtype": "m.text", "body": "fixed"},
		"m.relates_to": map[string]any{"rel_type": "m.replace", "event_id": reply}}); err != nil {
		t.Fatal(err)
	}
	say(t, w.Owner, w.Room, "marker")
	waitEvent(t, in, "marker")
	if got := strings.Join(in.texts(), "|"); got != "my reply in the thread|marker" {
		t.Errorf("handed over %q", got)
	}
	m := shown(t, w.Owner, w.Room, func(byID map[string]matrixtest.Message) bool { return byID[third].Edits > 0 })[third]
	if m.InReplyTo != reply || m.Thread != th.Thread {
		t.Errorf("answer in reply to %q in thread %q; want %q in %q", m.InReplyTo, m.Thread, reply, th.Thread)
	}
	if m.Edits != 1 || m.Body != "answer, *edited*" || !strings.Contains(m.FormattedBody, "<em>edited</em>") {
		t.Errorf("the edited answer shows %+v", m)
	}
}

// shown waits until the room's messages, as user's client shows them,
// satisfy cond (the homeserver serves history a moment after a send),
// and returns them by event id.
func shown(t *testing.T, u *matrixtest.User, room string, cond func(map[string]matrixtest.Message) bool) map[string]matrixtest.Message {
	t.Helper()
	var byID map[string]matrixtest.Message
	testutil.Eventually(t, testutil.Patience, func() bool {
		msgs, err := u.Messages(context.Background(), room)
		if err != nil {
			return false
		}
		byID = map[string]matrixtest.Message{}
		for _, m := range msgs {
			byID[m.EventID] = m
		}
		return cond(byID)
	}, "the room's messages")
	return byID
}

// A token the homeserver does not know is refused (the supervisor stops);
// a token of another account than the configured one too.
func TestRefusedToken(t *testing.T) {
	w := newWorld(t)
	for _, c := range []matrix.Config{
		{HomeserverURL: w.hs.URL(), AccessToken: "not-a-token"},
		{HomeserverURL: w.hs.URL(), AccessToken: w.Stranger.Token, UserID: w.Bot.ID},
	} {
		a, err := matrix.New(c)
		if err != nil {
			t.Fatal(err)
		}
		err = a.Run(testutil.Context(t, 0), newInbox())
		if cl, _ := platform.Classify(err); cl != platform.ClassRefused {
			t.Errorf("Run with a refused token: %v (class %v)", err, cl)
		}
		if err != nil && (strings.Contains(err.Error(), c.AccessToken)) {
			t.Errorf("the token leaked into the error: %v", err)
		}
	}
}

// A 429 from the homeserver is RetryAfter with the wait it asked for.
func TestRateLimitIsRetryAfter(t *testing.T) {
	w := newWorld(t)
	proxy := matrixtest.NewProxy(t, w.hs)
	a := w.adapter(t, proxy.URL(), newMemory())
	ctx := testutil.Context(t, 0)
	proxy.FailNext("send", 429, 1500*time.Millisecond)
	_, err := a.Send(ctx, w.home, "hello")
	var ra *platform.RetryAfterError
	if !errors.As(err, &ra) || ra.Wait != 1500*time.Millisecond || !strings.Contains(err.Error(), "M_LIMIT_EXCEEDED") {
		t.Fatalf("Send answered 429: %v", err)
	}
	proxy.FailNext("edit", 429, 2*time.Second)
	id, err := a.Send(ctx, w.home, "draft")
	if err != nil {
		t.Fatal(err)
	}
	err = a.Edit(ctx, w.home, id, "final")
	if cl, wait := platform.Classify(err); cl != platform.ClassRetryAfter || wait != 2*time.Second {
		t.Fatalf("Edit answered 429: %v (class %v, wait %v)", err, cl, wait)
	}
}

// A reply too big for one event once HTML is added is still delivered
// whole: as plain text, or in parts.
func TestOversizedEventDegrades(t *testing.T) {
	w := newWorld(t)
	a := w.adapter(t, w.hs.URL(), newMemory())
	ctx := testutil.Context(t, 0)
	// Quotes and angle brackets swell in HTML and in JSON.
	text := strings.Repeat(`"<&>" `, matrix.MaxMessageLen/6)
	if _, err := a.Send(ctx, w.home, text); err != nil {
		t.Fatalf("Send of %d bytes: %v", len(text), err)
	}
	want := strings.Join(strings.Fields(text), " ")
	var got string
	shown(t, w.Owner, w.Room, func(byID map[string]matrixtest.Message) bool {
		var bodies []matrixtest.Message
		for _, m := range byID {
			if m.Sender == w.Bot.ID {
				bodies = append(bodies, m)
			}
		}
		slices.SortFunc(bodies, func(a, b matrixtest.Message) int { return a.Time.Compare(b.Time) })
		var all strings.Builder
		for _, m := range bodies {
			all.WriteString(m.Body + " ")
		}
		got = strings.Join(strings.Fields(all.String()), " ")
		return got == want
	})
}

func TestNewRefusesBadConfig(t *testing.T) {
	for _, c := range []matrix.Config{
		{HomeserverURL: "http://127.0.0.1:1"},
		{HomeserverURL: "matrix.example.org", AccessToken: "t"},
		{HomeserverURL: "http://127.0.0.1:1", AccessToken: "t", UserID: "baton"},
	} {
		if _, err := matrix.New(c); err == nil {
			t.Errorf("New(%v) accepted", c)
		}
	}
	c := matrix.Config{HomeserverURL: "http://127.0.0.1:1", AccessToken: "syt_secret"}
	b, _ := json.Marshal(c.LogValue().String())
	if strings.Contains(c.String(), "syt_secret") || strings.Contains(string(b), "syt_secret") {
		t.Errorf("the token shows: %s %s", c, b)
	}
}
