package signal_test

import (
	"context"
	"errors"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/baton-agent/baton/internal/platform"
	"github.com/baton-agent/baton/internal/platform/signal"
	"github.com/baton-agent/baton/internal/platform/signal/signaltest"
	"github.com/baton-agent/baton/internal/testutil"
)

// collector keeps what Run hands over; refuse, when set, may refuse an
// event as a store that cannot write would.
type collector struct {
	mu     sync.Mutex
	events []platform.Event
	lives  int
	refuse func(platform.Event) error
}

func (c *collector) Receive(_ context.Context, ev platform.Event) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.refuse != nil {
		if err := c.refuse(ev); err != nil {
			return err
		}
	}
	c.events = append(c.events, ev)
	return nil
}

func (c *collector) Live() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lives++
}

func (c *collector) all() []platform.Event {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]platform.Event(nil), c.events...)
}

// run runs the adapter until the test ends, restarting it as the
// supervisor would (at once: the fake needs no backoff).
func run(t *testing.T, a *signal.Adapter, c *collector) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			_ = a.Run(ctx, c)
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
}

// streaming waits until the adapter has the event stream open.
func streaming(t *testing.T, fake *signaltest.Server) {
	t.Helper()
	if err := fake.Wait(testutil.Context(t, 0), func() bool { return fake.Streams() > 0 }); err != nil {
		t.Fatal("the adapter never opened the event stream")
	}
}

// Recorded envelopes of a linked device: what the owner writes to Note to
// Self is theirs to baton; what they write to others, receipts, typing and
// reactions are not handed over at all.
func TestWhatIsHandedOver(t *testing.T) {
	fake := signaltest.New(t, account)
	a := newAdapter(t, fake)
	c := &collector{}
	run(t, a, c)
	streaming(t, fake)
	fake.Push(map[string]any{"account": account, "envelope": map[string]any{
		"source": owner, "sourceNumber": owner, "sourceDevice": 1, "timestamp": 1700000000001,
		"receiptMessage": map[string]any{"when": 1700000000001, "isDelivery": true, "timestamps": []int64{1}},
	}})
	fake.Push(map[string]any{"account": account, "envelope": map[string]any{
		"source": owner, "sourceNumber": owner, "timestamp": 1700000000002,
		"typingMessage": map[string]any{"action": "STARTED", "timestamp": 1700000000002},
	}})
	fake.Push(map[string]any{"account": account, "envelope": map[string]any{
		"source": owner, "sourceNumber": owner, "timestamp": 1700000000003,
		"dataMessage": map[string]any{"timestamp": 1700000000003, "message": nil,
			"reaction": map[string]any{"emoji": "👍", "targetAuthor": account, "targetSentTimestamp": 1, "isRemove": false}},
	}})
	fake.PushSent("+4915559999", "a private word to a friend")
	self := fake.PushSent(account, "note to self: plan the trip")
	group := fake.PushMessage(owner, "Owner", "Z3JvdXBpZA==", "hello group")
	fromOwner := fake.PushMessage(owner, "Owner", "", "hello bot")

	testutil.Eventually(t, 0, func() bool { return len(c.all()) >= 3 }, "three messages")
	got := c.all()
	want := []platform.Event{
		{At: platform.Address{Platform: "signal", Kind: platform.DM, Chat: account}, SenderID: account, Sender: "Me", Text: "note to self: plan the trip", ID: self},
		{At: platform.Address{Platform: "signal", Kind: platform.Group, Chat: "Z3JvdXBpZA=="}, SenderID: owner, Sender: "Owner", Text: "hello group", ID: group},
		{At: platform.Address{Platform: "signal", Kind: platform.DM, Chat: owner}, SenderID: owner, Sender: "Owner", Text: "hello bot", ID: fromOwner},
	}
	for i := range got {
		if got[i].Time.IsZero() {
			t.Errorf("event %d has no time", i)
		}
		got[i].Time = want[0].Time
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("handed over\n%+v\nwant\n%+v", got, want)
	}
	// A payload that is not an envelope is skipped, and what follows still
	// arrives.
	fake.Push(map[string]any{"envelope": "not an object"})
	after := fake.PushMessage(owner, "Owner", "", "after the bad one")
	testutil.Eventually(t, 0, func() bool { return len(c.all()) == 4 && c.all()[3].ID == after }, "the message after a bad payload")
}

// A dropped stream is opened again: what was written while it was down
// (which the daemon took from Signal only once a stream was open) arrives
// on the new one, and nothing comes twice.
func TestDroppedStreamIsOpenedAgain(t *testing.T) {
	fake := signaltest.New(t, account)
	a := newAdapter(t, fake)
	c := &collector{}
	run(t, a, c)
	streaming(t, fake)
	first := fake.PushMessage(owner, "Owner", "", "one")
	testutil.Eventually(t, 0, func() bool { return len(c.all()) == 1 }, "the first message")
	fake.DropStreams()
	second := fake.PushMessage(owner, "Owner", "", "two")
	testutil.Eventually(t, 0, func() bool { return len(c.all()) >= 2 }, "the message sent across the drop")
	if got := c.all(); len(got) != 2 || got[0].ID != first || got[1].ID != second {
		t.Fatalf("events %+v", got)
	}
	if n := fake.Opened(); n < 2 {
		t.Errorf("%d event streams opened, want a second after the drop", n)
	}
	c.mu.Lock()
	lives := c.lives
	c.mu.Unlock()
	if lives < 2 {
		t.Errorf("Live reported %d times across a reconnection", lives)
	}
}

func TestSendStylesAndSplit(t *testing.T) {
	fake := signaltest.New(t, account)
	a := newAdapter(t, fake)
	ctx := testutil.Context(t, 0)
	id, err := a.Send(ctx, platform.Address{Platform: "signal", Kind: platform.DM, Chat: owner}, "😀 **Booked**: the `9:40` train, *window* seat.")
	if err != nil {
		t.Fatal(err)
	}
	sent := fake.Sent()
	if len(sent) != 1 || id != strconv.FormatInt(sent[0].Timestamp, 10) {
		t.Fatalf("sent %+v id %q", sent, id)
	}
	m := sent[0]
	if m.Message != "😀 Booked: the 9:40 train, window seat." || !reflect.DeepEqual(m.Recipients, []string{owner}) {
		t.Errorf("sent %+v", m)
	}
	// Offsets count UTF-16 units: the emoji is two.
	if want := []string{"3:6:BOLD", "15:4:MONOSPACE", "27:6:ITALIC"}; !reflect.DeepEqual(m.TextStyle, want) {
		t.Errorf("text styles %q, want %q", m.TextStyle, want)
	}

	if _, err := a.Send(ctx, platform.Address{Platform: "signal", Kind: platform.Group, Chat: "Z3JvdXBpZA=="}, "to the group"); err != nil {
		t.Fatal(err)
	}
	if g := fake.Sent()[1]; g.GroupID != "Z3JvdXBpZA==" || len(g.Recipients) != 0 {
		t.Errorf("group send %+v", g)
	}

	long := strings.Repeat("All work and no play makes a dull day. ", 120)
	before := len(fake.Sent())
	if _, err := a.Send(ctx, platform.Address{Platform: "signal", Kind: platform.DM, Chat: owner}, long); err != nil {
		t.Fatal(err)
	}
	parts := fake.Sent()[before:]
	if len(parts) < 3 {
		t.Fatalf("a %d-byte reply went in %d parts", len(long), len(parts))
	}
	var joined []string
	for _, p := range parts {
		if len(p.Message) > signal.MaxMessageLen {
			t.Errorf("a part is %d bytes", len(p.Message))
		}
		joined = append(joined, p.Message)
	}
	if strings.Join(strings.Fields(strings.Join(joined, " ")), " ") != strings.Join(strings.Fields(long), " ") {
		t.Error("the parts do not rejoin to the reply")
	}

	if _, err := a.Send(ctx, platform.Address{Platform: "signal", Kind: platform.Thread, Chat: "x", Thread: "y"}, "hi"); err == nil {
		t.Error("a thread address was accepted")
	}
	fake.Refuse("to nobody", 1)
	_, err = a.Send(ctx, platform.Address{Platform: "signal", Kind: platform.DM, Chat: "+10000000000"}, "to nobody")
	if cl, _ := platform.Classify(err); cl != platform.ClassPermanent {
		t.Errorf("an unregistered recipient: %v (%v), want permanent", err, cl)
	}
}

func TestTyping(t *testing.T) {
	fake := signaltest.New(t, account)
	a := newAdapter(t, fake)
	if err := a.Typing(testutil.Context(t, 0), platform.Address{Platform: "signal", Kind: platform.DM, Chat: owner}); err != nil {
		t.Fatal(err)
	}
	got := fake.Typing()
	if len(got) != 1 || !reflect.DeepEqual(got[0]["recipient"], []any{owner}) {
		t.Errorf("typing %+v", got)
	}
}

// An event the store could not take is not sent again by the daemon: the
// adapter keeps it and hands it over first when it runs again, before
// anything newer, even after events stored before it.
func TestRefusedEventIsHandedOverAgain(t *testing.T) {
	fake := signaltest.New(t, account)
	a := newAdapter(t, fake)
	refused := 0
	c := &collector{}
	c.refuse = func(ev platform.Event) error {
		if ev.Text == "two" && refused == 0 {
			refused++
			return errors.New("disk full")
		}
		return nil
	}
	run(t, a, c)
	streaming(t, fake)
	one := fake.PushMessage(owner, "Owner", "", "one")
	testutil.Eventually(t, 0, func() bool { return len(c.all()) == 1 }, "the first message")
	two := fake.PushMessage(owner, "Owner", "", "two")
	testutil.Eventually(t, 0, func() bool { return len(c.all()) == 2 }, "the refused message, handed over again")
	three := fake.PushMessage(owner, "Owner", "", "three")
	testutil.Eventually(t, 0, func() bool { return len(c.all()) == 3 }, "the message after it")
	var got []string
	for _, e := range c.all() {
		got = append(got, e.ID)
	}
	if want := []string{one, two, three}; !reflect.DeepEqual(got, want) {
		t.Errorf("handed over %v, want %v", got, want)
	}
	if refused != 1 {
		t.Errorf("refused %d times, want 1", refused)
	}
}
