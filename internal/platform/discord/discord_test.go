package discord_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/platform"
	"github.com/baton-agent/baton/internal/platform/discord"
	"github.com/baton-agent/baton/internal/platform/discord/discordtest"
	"github.com/baton-agent/baton/internal/platform/platformtest"
	"github.com/baton-agent/baton/internal/testutil"
)

// events is a Receiver that keeps what arrives.
type events struct {
	mu    sync.Mutex
	got   []platform.Event
	lives int
	fail  func(platform.Event) error
}

func (e *events) Receive(_ context.Context, ev platform.Event) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.fail != nil {
		if err := e.fail(ev); err != nil {
			return err
		}
	}
	e.got = append(e.got, ev)
	return nil
}

func (e *events) Live() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.lives++
}

func (e *events) all() []platform.Event {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]platform.Event(nil), e.got...)
}

func (e *events) byID(id string) (platform.Event, int) {
	var ev platform.Event
	n := 0
	for _, x := range e.all() {
		if x.ID == id {
			ev = x
			n++
		}
	}
	return ev, n
}

func (e *events) await(t *testing.T, id string) platform.Event {
	t.Helper()
	testutil.Eventually(t, testutil.Patience, func() bool { _, n := e.byID(id); return n > 0 }, "message "+id)
	ev, _ := e.byID(id)
	return ev
}

// run runs the adapter once (no supervisor); the returned channel yields
// Run's result.
func run(t *testing.T, a *discord.Adapter, r platform.Receiver) (stop func(), result <-chan error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan error, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		ch <- a.Run(ctx, r)
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			testutil.Receive(t, done, "Run to return")
		})
	}
	t.Cleanup(stop)
	return stop, ch
}

// keepRunning runs the adapter again whenever Run ends, as the gateway's
// supervisor does, until the test ends.
func keepRunning(t *testing.T, a *discord.Adapter, r platform.Receiver) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			_ = a.Run(ctx, r)
		}
	}()
	t.Cleanup(func() {
		cancel()
		testutil.Receive(t, done, "the runner to stop")
	})
}

func TestAddressesOfDMChannelAndThreads(t *testing.T) {
	fake := discordtest.New(t, token)
	a := newAdapter(t, fake, token)
	ev := &events{}
	keepRunning(t, a, ev)
	testutil.Eventually(t, testutil.Patience, func() bool { return fake.Connected() == 1 }, "the connection")
	home := fake.Home()

	dm := fake.AddDM(owner)
	id, _ := fake.Say(dm, owner, "in a DM")
	if got := ev.await(t, id).At; got != (platform.Address{Platform: "discord", Kind: platform.DM, Chat: dm}) {
		t.Errorf("a DM arrived at %+v", got)
	}
	id, _ = fake.Say(home, owner, "in the channel")
	got := ev.await(t, id)
	if got.At != (platform.Address{Platform: "discord", Kind: platform.Group, Chat: home}) || got.SenderID != owner.ID || got.Sender != owner.Username || got.Time.IsZero() {
		t.Errorf("a channel message arrived as %+v", got)
	}
	// A thread announced by THREAD_CREATE, and one the adapter must ask
	// Discord about: both carry the parent channel and the thread.
	for _, announce := range []bool{true, false} {
		th := fake.AddThread(home, "a thread", announce)
		id, _ = fake.Say(th, owner, "in a thread")
		want := platform.Address{Platform: "discord", Kind: platform.Thread, Chat: home, Thread: th}
		if got := ev.await(t, id).At; got != want || got.Key() != "discord:thread:"+home+":"+th {
			t.Errorf("announced %v: a thread message arrived at %+v, want %+v", announce, got, want)
		}
	}
	if n := fake.CallCount(discordtest.RouteGetChannel); n != 1 {
		t.Errorf("GET /channels/{id} asked %d times, want once (for the unannounced thread)", n)
	}
	// A leading mention of the bot is how people address a bot; it is not
	// part of the command.
	id, _ = fake.Say(home, owner, "<@"+fake.Bot().ID+"> /handoff cli")
	if got := ev.await(t, id).Text; got != "/handoff cli" {
		t.Errorf("a mention-led command arrived as %q", got)
	}
	// The bot's own messages are not events.
	if _, err := a.Send(testutil.Context(t, 0), platform.Address{Platform: "discord", Kind: platform.Group, Chat: home}, "from the bot"); err != nil {
		t.Fatal(err)
	}
	marker, _ := fake.Say(home, owner, "marker")
	ev.await(t, marker)
	for _, e := range ev.all() {
		if e.Text == "from the bot" {
			t.Errorf("the bot's own message came back as an event: %+v", e)
		}
	}
}

// A dropped connection is resumed: what was said meanwhile arrives once,
// nothing is handed over twice, and no new session is identified.
func TestResumeAfterDroppedConnection(t *testing.T) {
	fake := discordtest.New(t, token)
	a := newAdapter(t, fake, token)
	ev := &events{}
	keepRunning(t, a, ev)
	testutil.Eventually(t, testutil.Patience, func() bool { return fake.Connected() == 1 }, "the connection")
	home := fake.Home()
	before, _ := fake.Say(home, owner, "before the drop")
	ev.await(t, before)

	fake.Drop()
	during, _ := fake.Say(home, owner, "while the connection is down")
	ev.await(t, during)
	testutil.Eventually(t, testutil.Patience, func() bool { return fake.Resumes() >= 1 }, "a RESUME")
	after, _ := fake.Say(home, owner, "after the resume")
	ev.await(t, after)

	for _, id := range []string{before, during, after} {
		if _, n := ev.byID(id); n != 1 {
			t.Errorf("message %s arrived %d times", id, n)
		}
	}
	if n := fake.Identifies(); n != 1 {
		t.Errorf("identified %d times; a dropped connection should resume", n)
	}

	// A session Discord will not resume (4009) is identified afresh.
	fake.CloseWith(4009, "Session timed out.")
	testutil.Eventually(t, testutil.Patience, func() bool { return fake.Identifies() == 2 && fake.Connected() == 1 }, "a new session")
	id, _ := fake.Say(home, owner, "in the new session")
	ev.await(t, id)
}

// A message the receiver could not store is not acknowledged: the next
// connection resumes before it, and Discord replays it.
func TestUnstoredMessageIsReplayed(t *testing.T) {
	fake := discordtest.New(t, token)
	fake.SetHeartbeat(50 * time.Millisecond)
	a := newAdapter(t, fake, token)
	refused := 0
	ev := &events{}
	ev.fail = func(e platform.Event) error {
		if e.Text == "store me" && refused == 0 {
			refused++
			return errors.New("disk full")
		}
		return nil
	}
	_, result := run(t, a, ev)
	testutil.Eventually(t, testutil.Patience, func() bool { return fake.Connected() == 1 }, "the connection")
	id, _ := fake.Say(fake.Home(), owner, "store me")
	err := testutil.Receive(t, result, "Run to end on the unstored message")
	if err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("Run ended with %v", err)
	}
	if fake.Acked(id) {
		t.Fatal("the unstored message was acknowledged")
	}
	run(t, a, ev)
	ev.await(t, id)
	testutil.Eventually(t, testutil.Patience, func() bool { return fake.Acked(id) }, "the stored message to be acknowledged")
	if fake.Identifies() != 1 || fake.Resumes() != 1 {
		t.Errorf("identifies %d, resumes %d; want 1 and 1", fake.Identifies(), fake.Resumes())
	}
}

func TestRefusedTokenAndIntent(t *testing.T) {
	fake := discordtest.New(t, token)
	a := newAdapter(t, fake, "wrong.secret.token")
	_, result := run(t, a, &events{})
	err := testutil.Receive(t, result, "Run to end")
	if !errors.Is(err, platform.ErrRefused) || strings.Contains(err.Error(), "wrong.secret.token") {
		t.Errorf("a wrong token: %v", err)
	}

	fake.RefuseMessageContent(true)
	a = newAdapter(t, fake, token)
	ev := &events{}
	_, result = run(t, a, ev)
	err = testutil.Receive(t, result, "Run to end")
	if !errors.Is(err, platform.ErrRefused) || !strings.Contains(err.Error(), "Message Content intent") {
		t.Errorf("the intent refused: %v", err)
	}
	if ev.lives != 0 {
		t.Errorf("Live was said %d times", ev.lives)
	}
}

// Without the intent Discord sends guild messages with empty content; the
// adapter asks for it, so content arrives.
func TestMessageContentArrives(t *testing.T) {
	fake := discordtest.New(t, token)
	a := newAdapter(t, fake, token)
	ev := &events{}
	keepRunning(t, a, ev)
	testutil.Eventually(t, testutil.Patience, func() bool { return fake.Connected() == 1 }, "the connection")
	id, _ := fake.Say(fake.Home(), owner, "words without a mention")
	if got := ev.await(t, id).Text; got != "words without a mention" {
		t.Errorf("content %q", got)
	}
}

func TestSendMentionsNobody(t *testing.T) {
	fake := discordtest.New(t, token)
	a := newAdapter(t, fake, token)
	home := platform.Address{Platform: "discord", Kind: platform.Group, Chat: fake.Home()}
	ctx := testutil.Context(t, 0)
	text := "Earlier you wrote: @everyone look, and @here, <@&777> and <@123456>."
	id, err := a.Send(ctx, home, text)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Edit(ctx, home, id, text+" (edited)"); err != nil {
		t.Fatal(err)
	}
	posts := fake.Posts()
	if len(posts) != 2 {
		t.Fatalf("posts %+v", posts)
	}
	for _, p := range posts {
		if len(p.Pings) != 0 || !strings.Contains(p.AllowedMentions, `"parse":[]`) {
			t.Errorf("%s pinged %v (allowed_mentions %s)", p.Route, p.Pings, p.AllowedMentions)
		}
	}
	if shown := fake.Shown(); len(shown) != 1 || !strings.HasSuffix(shown[0].Content, "(edited)") {
		t.Errorf("shown %+v", shown)
	}
}

func TestRateLimitsAskForTheirWait(t *testing.T) {
	fake := discordtest.New(t, token)
	a := newAdapter(t, fake, token)
	home := platform.Address{Platform: "discord", Kind: platform.Group, Chat: fake.Home()}
	ctx := testutil.Context(t, 0)

	fake.FailNext(discordtest.RouteCreateMessage, 429, 1500*time.Millisecond)
	_, err := a.Send(ctx, home, "hello")
	if cl, wait := platform.Classify(err); cl != platform.ClassRetryAfter || wait != 1500*time.Millisecond {
		t.Errorf("a route's 429: %v, class %v wait %v", err, cl, wait)
	}
	fake.RateLimitGlobal(2 * time.Second)
	err = a.Typing(ctx, home)
	if cl, wait := platform.Classify(err); cl != platform.ClassRetryAfter || wait != 2*time.Second || !strings.Contains(err.Error(), "global") {
		t.Errorf("the global 429: %v, class %v wait %v", err, cl, wait)
	}
	if _, err := a.Send(ctx, home, "hello"); err != nil {
		t.Errorf("after the limits: %v", err)
	}
	// Each call was tried once: the adapter never waits or retries itself.
	if n := fake.CallCount(discordtest.RouteCreateMessage); n != 2 {
		t.Errorf("Create Message called %d times, want 2", n)
	}
}

func TestNewThread(t *testing.T) {
	fake := discordtest.New(t, token)
	a := newAdapter(t, fake, token)
	ctx := testutil.Context(t, 0)
	home := platform.Address{Platform: "discord", Kind: platform.Group, Chat: fake.Home()}
	title := strings.Repeat("Refactor the store ", 10)
	addr, err := a.NewThread(ctx, home, title)
	if err != nil {
		t.Fatal(err)
	}
	ths := fake.Threads()
	if len(ths) != 1 || ths[0].ParentID != home.Chat || ths[0].Archive != 1440 || len([]rune(ths[0].Name)) != 100 || !strings.HasPrefix(ths[0].Name, "Refactor the store") {
		t.Fatalf("threads %+v", ths)
	}
	if addr != (platform.Address{Platform: "discord", Kind: platform.Thread, Chat: home.Chat, Thread: ths[0].ID}) {
		t.Errorf("NewThread = %+v", addr)
	}
	// From a thread address, the new thread opens beside it, in its channel.
	if next, err := a.NewThread(ctx, addr, "second"); err != nil || next.Chat != home.Chat {
		t.Errorf("NewThread under a thread: %+v %v", next, err)
	}

	fake.RefuseThreads(true)
	_, err = a.NewThread(ctx, home, "refused")
	if cl, _ := platform.Classify(err); cl != platform.ClassUnsupported || !strings.Contains(err.Error(), "50013") {
		t.Errorf("threads refused: %v, class %v", err, cl)
	}
	dm := platform.Address{Platform: "discord", Kind: platform.DM, Chat: fake.AddDM(owner)}
	if _, err := a.NewThread(ctx, dm, "in a DM"); !errors.Is(err, platform.ErrUnsupported) {
		t.Errorf("a thread in a DM: %v", err)
	}
}

func TestServiceDownIsOneLine(t *testing.T) {
	fake := discordtest.New(t, token)
	a := newAdapter(t, fake, token)
	fake.Down()
	_, result := run(t, a, &events{})
	err := testutil.Receive(t, result, "Run to end")
	if err == nil || errors.Is(err, platform.ErrRefused) || strings.Contains(err.Error(), "<") {
		t.Errorf("Run with Discord down: %v", err)
	}
	_, err = a.Send(testutil.Context(t, 0), platform.Address{Platform: "discord", Kind: platform.Group, Chat: fake.Home()}, "x")
	if cl, _ := platform.Classify(err); err == nil || cl != platform.ClassTransient || strings.Contains(err.Error(), "<") {
		t.Errorf("Send with Discord down: %v (%v)", err, cl)
	}
}

// baton restarted: a new adapter on the same memory resumes the session
// the last run left, so what was said while baton was down arrives (a
// fresh IDENTIFY would never see it), nothing from before comes again,
// and the bot still knows its own messages.
func TestResumeAcrossRestart(t *testing.T) {
	fake := discordtest.New(t, token)
	mem := platformtest.NewMemory()
	adapter := func() *discord.Adapter {
		a, err := discord.New(discord.Config{Token: token, APIURL: fake.APIURL(), RequestTimeout: 5 * time.Second,
			Logger: slog.New(slog.DiscardHandler), Memory: mem})
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	home := fake.Home()
	first := adapter()
	ev := &events{}
	stop, _ := run(t, first, ev)
	testutil.Eventually(t, testutil.Patience, func() bool { return fake.Connected() == 1 }, "the connection")
	before, _ := fake.Say(home, owner, "before the restart")
	ev.await(t, before)
	bot := first.BotID()
	stop()
	testutil.Eventually(t, testutil.Patience, func() bool { return fake.Connected() == 0 }, "the first run to be gone")

	during, _ := fake.Say(home, owner, "while baton is down")
	second := adapter()
	ev2 := &events{}
	run(t, second, ev2)
	ev2.await(t, during)
	if fake.Identifies() != 1 || fake.Resumes() != 1 {
		t.Errorf("%d IDENTIFYs and %d RESUMEs, want the one session resumed", fake.Identifies(), fake.Resumes())
	}
	if second.BotID() != bot || bot == "" {
		t.Errorf("after the restart the bot is %q, want %q", second.BotID(), bot)
	}
	if _, err := second.Send(testutil.Context(t, 0), platform.Address{Platform: "discord", Kind: platform.Group, Chat: home}, "from the bot"); err != nil {
		t.Fatal(err)
	}
	marker, _ := fake.Say(home, owner, "marker")
	ev2.await(t, marker)
	for _, e := range ev2.all() {
		if e.Text == "from the bot" || e.ID == before {
			t.Errorf("after the restart %q came as an event", e.Text)
		}
	}
}
