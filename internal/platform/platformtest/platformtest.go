// Package platformtest is the conformance suite every chat-service adapter
// runs against its fake, as storetest is for stores: what the gateway
// relies on of any adapter — Live once connected, events with the right
// address and sender, thread addresses that match later messages, no
// acknowledgement before an event is stored, failures classified, recovery
// from a service down by itself, and messages measured as the service
// measures them — is checked once, here, the same way for all.
package platformtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/platform"
	"github.com/baton-agent/baton/internal/retry"
	"github.com/baton-agent/baton/internal/testutil"
)

// Harness is one adapter wired to a fresh fake of its service. Run asks
// for a new one for every sub-test.
type Harness struct {
	// Adapter is the adapter under test, pointed at the fake.
	Adapter platform.Adapter
	// Home is an address people say things at, and the home NewThread
	// opens threads under (a forum chat, say).
	Home platform.Address
	// Person is the sender id of what Say makes a person say.
	Person string
	// Say makes a person say text at an address through the service and
	// returns the platform message id the adapter's Event.ID will carry.
	Say func(ctx context.Context, at platform.Address, senderID, text string) (id string, err error)
	// Acked reports whether the service counts the message with id as
	// acknowledged by the adapter (the offset passed it, the envelope was
	// acked); nil if the service has no acknowledgement.
	Acked func(id string) bool

	// Down and Up take the fake service down and bring it back; nil when
	// there is no remote service (NoService says why).
	Down, Up func()
	// FailSend makes the service answer the adapter's next Send with an
	// HTTP status (a 429 asking for retryAfter); nil when there is no
	// remote service.
	FailSend func(status int, retryAfter time.Duration)
	// Unsupport makes the service refuse the method behind an optional
	// capability ("Typer", "Threader", "Editor", "Commander"), as a server
	// without it would, and reports whether it can; nil for none.
	Unsupport func(capability string) bool
	// NoService says why Down, Up and FailSend are nil ("served
	// in-process").
	NoService string

	// LoseSend makes the service carry out the adapter's next message
	// send and lose its answer, as a cut connection does; Restarted is a
	// new adapter on the same service, as after a restart; Shown is the
	// text of each message a person sees at an address, in order. All
	// three are set for a service that drops a repeated send (by a key
	// the adapter gives it: see platform.DeliveryToken), nil for one
	// that cannot.
	LoseSend  func()
	Restarted func(t *testing.T) platform.Adapter
	Shown     func(at platform.Address) []string

	// SayFile makes a person send a file at an address through the
	// service, as SaidFile describes it, and returns the platform message
	// id the adapter's Event.ID will carry; Downloads counts the requests
	// the service has had for file bytes so far. Both nil where the fake
	// cannot send files yet (the "FileIn" check then skips).
	SayFile   func(ctx context.Context, at platform.Address, senderID string, f SaidFile) (id string, err error)
	Downloads func() int

	// Files is each file a person sees at an address, in order, as the
	// service holds it; nil where the adapter cannot send files yet (the
	// "FileOut" check then skips). LoseSend, where set, also loses the
	// answer to the adapter's next file send.
	Files func(at platform.Address) []ShownFile

	// Caps are the optional interfaces the adapter must implement, by
	// name: "Threader", "Typer", "Editor", "EditPacer", "Limiter",
	// "Streamer", "Commander", "Prober", "DownloadLimiter".
	Caps []string
}

// SaidFile is a file a person sends, sent by the service as a document
// (a file kept as its sender had it).
type SaidFile struct {
	Name      string
	MediaType string // the type the sender's app claims
	Data      []byte
	Caption   string // "" for a file sent alone
	// Size is the size the service tells, when it must differ from
	// len(Data): a file over the adapter's download limit is said without
	// holding its bytes. 0 tells len(Data).
	Size int64
}

// ShownFile is a file as the service shows it to a person.
type ShownFile struct {
	Name    string // the file name the service keeps; "" where it keeps none for pictures
	Data    []byte
	Caption string // the text shown with it, as the service holds it
	Image   bool   // shown as a picture (sendPhoto, m.image), not as a document
}

// capabilities are the optional interfaces the suite knows, by name.
func capabilities() map[string]func(platform.Adapter) bool {
	return map[string]func(platform.Adapter) bool{
		"Threader":  is[platform.Threader],
		"Typer":     is[platform.Typer],
		"Editor":    is[platform.Editor],
		"EditPacer": is[platform.EditPacer],
		"Limiter":   is[platform.Limiter],
		"Streamer":  is[platform.Streamer],
		"Commander": is[platform.Commander],
		"Prober":    is[platform.Prober],

		"DownloadLimiter": is[platform.DownloadLimiter],
		"FileSender":      is[platform.FileSender],
	}
}

func is[T any](a platform.Adapter) bool { _, ok := a.(T); return ok }

// Run runs the suite; newHarness makes a fresh adapter and fake for each
// sub-test (and stops them when that sub-test ends).
func Run(t *testing.T, newHarness func(t *testing.T) Harness) {
	t.Run("Capabilities", func(t *testing.T) { testCapabilities(t, newHarness(t)) })
	t.Run("LiveOnceConnected", func(t *testing.T) { testLive(t, newHarness(t)) })
	t.Run("EventsArrive", func(t *testing.T) { testEvents(t, newHarness(t)) })
	t.Run("NewThreadMatchesLaterMessages", func(t *testing.T) { testNewThread(t, newHarness(t)) })
	t.Run("RedeliveryUntilStored", func(t *testing.T) { testRedelivery(t, newHarness(t), false) })
	t.Run("FileRedeliveryUntilStored", func(t *testing.T) { testRedelivery(t, newHarness(t), true) })
	t.Run("SendFailuresClassified", func(t *testing.T) { testSendClasses(t, newHarness(t)) })
	t.Run("UnsupportedClassified", func(t *testing.T) { testUnsupported(t, newHarness(t)) })
	t.Run("DownAtStart", func(t *testing.T) { testDownAtStart(t, newHarness(t)) })
	t.Run("DownMidRun", func(t *testing.T) { testDownMidRun(t, newHarness(t)) })
	t.Run("ProbeFollowsTheService", func(t *testing.T) { testProbe(t, newHarness(t)) })
	t.Run("MessageLength", func(t *testing.T) { testLimiter(t, newHarness(t)) })
	t.Run("RepeatedDeliveryShownOnce", func(t *testing.T) { testRepeatedDelivery(t, newHarness(t)) })
	t.Run("FileIn", func(t *testing.T) { testFileIn(t, newHarness(t)) })
	t.Run("FileOut", func(t *testing.T) { testFileOut(t, newHarness(t)) })
}

// Recorder is the Receiver the suite supervises adapters with: it keeps
// every event and status, and can be told to fail a Receive.
type Recorder struct {
	mu       sync.Mutex
	wake     chan struct{} // closed and replaced on every change
	events   []platform.Event
	statuses []platform.Status
	lives    int
	// fail, when set, answers Receive instead of storing (it is told the
	// event and how many times its id arrived, this one included).
	fail func(ev platform.Event, nth int) error
}

func newRecorder() *Recorder { return &Recorder{wake: make(chan struct{})} }

func (r *Recorder) changed() {
	close(r.wake)
	r.wake = make(chan struct{})
}

// Receive stores ev unless fail says otherwise.
func (r *Recorder) Receive(_ context.Context, ev platform.Event) error {
	r.mu.Lock()
	fail := r.fail
	nth := 1
	for _, e := range r.events {
		if e.ID == ev.ID {
			nth++
		}
	}
	r.events = append(r.events, ev) // every arrival, stored or not
	r.changed()
	r.mu.Unlock()
	if fail != nil {
		return fail(ev, nth)
	}
	return nil
}

// Live counts the adapter's reports of being connected.
func (r *Recorder) Live() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lives++
	r.changed()
}

func (r *Recorder) report(s platform.Status) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.statuses = append(r.statuses, s)
	r.changed()
}

// wait blocks until cond (called under the lock) holds; it fails the test
// with what after testutil.Patience.
func (r *Recorder) wait(t *testing.T, what string, cond func() bool) {
	t.Helper()
	ctx := testutil.Context(t, 0)
	for {
		r.mu.Lock()
		ok, wake := cond(), r.wake
		r.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-ctx.Done():
			r.mu.Lock()
			defer r.mu.Unlock()
			t.Fatalf("gave up waiting for %s; events %+v; statuses %+v", what, r.events, r.statuses)
		case <-wake:
		}
	}
}

// event waits for an event with id.
func (r *Recorder) event(t *testing.T, id string) platform.Event {
	t.Helper()
	var ev platform.Event
	r.wait(t, "the event with id "+id, func() bool {
		for _, e := range r.events {
			if e.ID == id {
				ev = e
				return true
			}
		}
		return false
	})
	return ev
}

// count is how many times an event with id arrived.
func (r *Recorder) count(id string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, e := range r.events {
		if e.ID == id {
			n++
		}
	}
	return n
}

// state waits until the supervisor has reported st at least n times.
func (r *Recorder) state(t *testing.T, st platform.State, n int) platform.Status {
	t.Helper()
	var last platform.Status
	r.wait(t, fmt.Sprintf("status %s reported %d times", st, n), func() bool {
		k := 0
		for _, s := range r.statuses {
			if s.State == st {
				k++
				last = s
			}
		}
		return k >= n
	})
	return last
}

// quick restarts a failed Run within milliseconds, so recovery tests do
// not wait out the gateway's real backoff.
func quick() retry.Policy {
	return retry.Policy{First: 5 * time.Millisecond, Max: 50 * time.Millisecond}
}

// supervise runs h.Adapter as the gateway does, until the test ends.
func supervise(t *testing.T, h Harness, r *Recorder) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		platform.Supervise(ctx, h.Adapter, r, quick(), r.report)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
}

func say(t *testing.T, h Harness, at platform.Address, text string) string {
	t.Helper()
	id, err := h.Say(testutil.Context(t, 0), at, h.Person, text)
	if err != nil {
		t.Fatalf("say %q at %s: %v", text, at.Key(), err)
	}
	return id
}

func testCapabilities(t *testing.T, h Harness) {
	for _, c := range h.Caps {
		if _, known := capabilities()[c]; !known {
			t.Errorf("harness expects unknown capability %q", c)
		}
	}
	for name, has := range capabilities() {
		want := slices.Contains(h.Caps, name)
		if got := has(h.Adapter); got != want {
			t.Errorf("adapter is a platform.%s: %v, harness expects %v", name, got, want)
		}
	}
	if h.Adapter.Name() == "" || h.Adapter.Name() != h.Home.Platform {
		t.Errorf("Name %q, home address platform %q", h.Adapter.Name(), h.Home.Platform)
	}
}

func testLive(t *testing.T, h Harness) {
	r := newRecorder()
	supervise(t, h, r)
	r.state(t, platform.StateLive, 1)
	// The supervisor reports live as it passes Live on to the Receiver.
	r.wait(t, "the Receiver to hear Live", func() bool { return r.lives >= 1 })
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.statuses[0].State != platform.StateStarting {
		t.Errorf("first status %s, want starting", r.statuses[0].State)
	}
}

func testEvents(t *testing.T, h Harness) {
	r := newRecorder()
	supervise(t, h, r)
	r.state(t, platform.StateLive, 1)
	texts := []string{"hello there", "/handoff cli", "ünïcødé 😀 and more"}
	for _, text := range texts {
		id := say(t, h, h.Home, text)
		ev := r.event(t, id)
		if ev.At != h.Home || ev.At.Key() != h.Home.Key() {
			t.Errorf("%q arrived at %+v, said at %+v", text, ev.At, h.Home)
		}
		if ev.SenderID != h.Person || ev.Text != text || ev.Time.IsZero() {
			t.Errorf("%q arrived as %+v (sender %q)", text, ev, h.Person)
		}
	}
}

func testNewThread(t *testing.T, h Harness) {
	th, ok := h.Adapter.(platform.Threader)
	if !ok {
		t.Skip("the adapter is not a platform.Threader")
	}
	r := newRecorder()
	supervise(t, h, r)
	r.state(t, platform.StateLive, 1)
	addr, err := th.NewThread(testutil.Context(t, 0), h.Home, "Refactor the store")
	if err != nil {
		t.Fatalf("NewThread under %s: %v", h.Home.Key(), err)
	}
	if addr.Platform != h.Home.Platform || addr.Thread == "" || addr == h.Home {
		t.Errorf("NewThread = %+v, want a thread of %s", addr, h.Home.Key())
	}
	if _, err := h.Adapter.Send(testutil.Context(t, 0), addr, "Handed off here."); err != nil {
		t.Errorf("Send to the new thread: %v", err)
	}
	ev := r.event(t, say(t, h, addr, "my reply in the thread"))
	if ev.At.Key() != addr.Key() || ev.At != addr {
		t.Errorf("a message in the thread arrived at %q (%+v); NewThread gave %q (%+v)", ev.At.Key(), ev.At, addr.Key(), addr)
	}
}

var errNotStored = errors.New("database is locked")

// testRedelivery: an event whose Receive failed (not stored) comes again,
// and the service sees it acknowledged only once a Receive returned nil;
// withFile does it with a file whose bytes come again too.
func testRedelivery(t *testing.T, h Harness, withFile bool) {
	if withFile && (h.SayFile == nil || h.Downloads == nil) {
		t.Skip("the fake cannot send files yet (Harness.SayFile and Downloads are nil)")
	}
	file := SaidFile{Name: "keep.txt", MediaType: "text/plain", Data: []byte("kept on the second try\n"), Caption: "store this file, please"}
	r := newRecorder()
	var mu sync.Mutex
	ackedDuring := map[int]bool{} // arrival → whether the service saw an ack while Receive ran
	var target string
	r.fail = func(ev platform.Event, nth int) error {
		mu.Lock()
		defer mu.Unlock()
		// A file is known by its caption: its sender may wait for the
		// Receive (an upload answered once stored), so target is set
		// after.
		if ev.ID != target && !(withFile && ev.Text == file.Caption) {
			return nil
		}
		if h.Acked != nil {
			ackedDuring[nth] = h.Acked(ev.ID)
		}
		if nth == 1 {
			return errNotStored
		}
		return nil
	}
	supervise(t, h, r)
	r.state(t, platform.StateLive, 1)
	id := func() string {
		mu.Lock()
		defer mu.Unlock()
		// Say under the lock so Receive cannot look before target is set.
		if !withFile {
			target = say(t, h, h.Home, "store me, please")
			return target
		}
		return ""
	}()
	if withFile {
		fid, err := h.SayFile(testutil.Context(t, 0), h.Home, h.Person, file)
		if err != nil {
			t.Fatalf("send a file: %v", err)
		}
		mu.Lock()
		target, id = fid, fid
		mu.Unlock()
	}
	r.wait(t, "the unstored event to come again", func() bool {
		n := 0
		for _, e := range r.events {
			if e.ID == id {
				n++
			}
		}
		return n >= 2
	})
	ev := r.event(t, id)
	if want := "store me, please"; !withFile && ev.Text != want || withFile && ev.Text != file.Caption {
		t.Errorf("redelivered event %+v", ev)
	}
	if withFile {
		if len(ev.Attachments) != 1 || ev.Attachments[0].Open == nil {
			t.Fatalf("the redelivered event carries %+v, want its file", ev.Attachments)
		}
		if got, err := readAttachment(testutil.Context(t, 0), ev.Attachments[0]); err != nil || !bytes.Equal(got, file.Data) {
			t.Errorf("the redelivered file read as %q: %v", got, err)
		}
	}
	if h.Acked != nil {
		testutil.Eventually(t, testutil.Patience, func() bool { return h.Acked(id) }, "the stored event to be acknowledged")
		mu.Lock()
		for nth, acked := range ackedDuring {
			if acked {
				t.Errorf("arrival %d: the service saw the event acknowledged before Receive returned nil", nth)
			}
		}
		mu.Unlock()
	}
	// Stored now: it does not come a third time (a later message arrives
	// first, and the service delivers in order).
	sentinel := say(t, h, h.Home, "and the next one")
	r.event(t, sentinel)
	if n := r.count(id); n != 2 {
		t.Errorf("the event arrived %d times, want 2 (refused, then stored)", n)
	}
}

func testSendClasses(t *testing.T, h Harness) {
	if h.FailSend == nil {
		t.Skip("no remote service to fail Send: " + h.NoService)
	}
	ctx := testutil.Context(t, 0)
	cases := []struct {
		status int
		wait   time.Duration
		want   platform.Class
	}{
		{429, 3 * time.Second, platform.ClassRetryAfter},
		{403, 0, platform.ClassPermanent},
		{400, 0, platform.ClassPermanent},
		{500, 0, platform.ClassTransient},
		{502, 0, platform.ClassTransient},
	}
	for _, c := range cases {
		h.FailSend(c.status, c.wait)
		_, err := h.Adapter.Send(ctx, h.Home, "hello")
		cl, wait := platform.Classify(err)
		if err == nil || cl != c.want || wait != c.wait {
			t.Errorf("Send answered %d: %v, class %v wait %v; want class %v wait %v", c.status, err, cl, wait, c.want, c.wait)
		}
	}
	if h.Down != nil {
		h.Down()
		_, err := h.Adapter.Send(ctx, h.Home, "hello")
		if cl, _ := platform.Classify(err); err == nil || cl != platform.ClassTransient {
			t.Errorf("Send while the service is down: %v, class %v; want transient", err, cl)
		}
		if err != nil && strings.Contains(err.Error(), "<html") {
			t.Errorf("the error quotes the proxy's page: %v", err)
		}
		h.Up()
	}
	if _, err := h.Adapter.Send(ctx, h.Home, "hello"); err != nil {
		t.Errorf("Send after the failures: %v", err)
	}
}

func testUnsupported(t *testing.T, h Harness) {
	if h.Unsupport == nil {
		t.Skip("the fake cannot refuse optional methods: " + h.NoService)
	}
	ctx := testutil.Context(t, 0)
	tried := 0
	check := func(name string, call func() error) {
		if !h.Unsupport(name) {
			return
		}
		tried++
		err := call()
		if cl, _ := platform.Classify(err); err == nil || cl != platform.ClassUnsupported {
			t.Errorf("%s refused by the service: %v, class %v; want unsupported", name, err, cl)
		}
		// The fake answers as a server without the method at all, so the
		// gateway may remember it for the whole platform, not one place.
		if !errors.Is(err, platform.ErrNotOffered) {
			t.Errorf("%s refused as a method the service lacks: %v; want it marked platform.NotOffered", name, err)
		}
	}
	if a, ok := h.Adapter.(platform.Typer); ok {
		check("Typer", func() error { return a.Typing(ctx, h.Home) })
	}
	if a, ok := h.Adapter.(platform.Threader); ok {
		check("Threader", func() error { _, err := a.NewThread(ctx, h.Home, "t"); return err })
	}
	if a, ok := h.Adapter.(platform.Commander); ok {
		check("Commander", func() error { return a.SetCommands(ctx, []platform.Command{{Name: "help", Description: "help"}}) })
	}
	if a, ok := h.Adapter.(platform.Editor); ok {
		id, err := h.Adapter.Send(ctx, h.Home, "draft")
		if err != nil {
			t.Fatalf("Send: %v", err)
		}
		check("Editor", func() error { return a.Edit(ctx, h.Home, id, "final") })
	}
	if tried == 0 {
		t.Skip("the fake refuses none of the adapter's optional methods")
	}
}

func testDownAtStart(t *testing.T, h Harness) {
	if h.Down == nil || h.Up == nil {
		t.Skip("no remote service to take down: " + h.NoService)
	}
	h.Down()
	r := newRecorder()
	supervise(t, h, r)
	st := r.state(t, platform.StateDown, 1)
	if st.Reason == "" || strings.Contains(st.Reason, "<") {
		t.Errorf("down reason %q: want one readable line", st.Reason)
	}
	r.mu.Lock()
	lives := r.lives
	r.mu.Unlock()
	if lives != 0 {
		t.Errorf("Live reported %d times while the service was down", lives)
	}
	h.Up()
	r.state(t, platform.StateLive, 1)
	r.event(t, say(t, h, h.Home, "back again"))
}

// testProbe: a Prober's probe fails while its service is down and
// answers once it is back, so the supervisor restarts it then.
func testProbe(t *testing.T, h Harness) {
	p, ok := h.Adapter.(platform.Prober)
	if !ok {
		t.Skip("not a platform.Prober: restarts wait out their backoff")
	}
	if h.Down == nil || h.Up == nil {
		t.Skip("no remote service to take down: " + h.NoService)
	}
	h.Down()
	if err := p.Probe(testutil.Context(t, 0)); err == nil {
		t.Error("the probe answered while the service was down")
	}
	h.Up()
	if err := p.Probe(testutil.Context(t, 0)); err != nil {
		t.Errorf("the probe failed once the service was back: %v", err)
	}
}

func testDownMidRun(t *testing.T, h Harness) {
	if h.Down == nil || h.Up == nil {
		t.Skip("no remote service to take down: " + h.NoService)
	}
	r := newRecorder()
	supervise(t, h, r)
	r.state(t, platform.StateLive, 1)
	r.event(t, say(t, h, h.Home, "before"))
	h.Down()
	r.state(t, platform.StateDown, 1)
	h.Up()
	r.state(t, platform.StateLive, 2)
	r.event(t, say(t, h, h.Home, "after"))
}

func testLimiter(t *testing.T, h Harness) {
	l, ok := h.Adapter.(platform.Limiter)
	if !ok {
		t.Skip("the adapter is not a platform.Limiter")
	}
	limit := l.MaxMessageLen()
	exact := fill(l, limit)
	if n := l.MessageLen(exact); n != limit {
		t.Fatalf("built a message of %d units, want %d", n, limit)
	}
	ctx := testutil.Context(t, 0)
	if _, err := h.Adapter.Send(ctx, h.Home, exact); err != nil {
		t.Errorf("a message of exactly MaxMessageLen (%d) was refused: %v", limit, err)
	}
	over := exact + "x"
	parts := platform.Split(over, limit, l.MessageLen)
	if len(parts) < 2 {
		t.Fatalf("one unit over the limit split into %d part(s)", len(parts))
	}
	for i, p := range parts {
		if n := l.MessageLen(p); n > limit {
			t.Errorf("part %d is %d units, over %d", i, n, limit)
		}
		if _, err := h.Adapter.Send(ctx, h.Home, p); err != nil {
			t.Errorf("part %d refused: %v", i, err)
		}
	}
}

// fill builds plain prose of exactly n units as l measures them, with
// characters that weigh differently in different measures (emoji are two
// UTF-16 units, four bytes, one rune) and no markdown.
func fill(l platform.Limiter, n int) string {
	const word = "fits😀 "
	var b strings.Builder
	for l.MessageLen(b.String()+word) <= n-1 {
		b.WriteString(word)
	}
	for l.MessageLen(b.String()) < n {
		b.WriteString("x")
	}
	return b.String()
}

// testRepeatedDelivery: a stored delivery sent again — after the
// service took it but its answer was lost, and by a new adapter as after
// a restart — is shown once, each of its messages; the same words as
// another delivery, or not stored, are new messages.
func testRepeatedDelivery(t *testing.T, h Harness) {
	if h.LoseSend == nil {
		t.Skip("the service cannot drop a repeated send")
	}
	ctx := testutil.Context(t, 0)
	restarted := h.Restarted(t)
	once := platform.WithDeliveryKey(ctx, "suite:1")
	h.LoseSend()
	if _, err := h.Adapter.Send(once, h.Home, "said once"); err == nil {
		t.Fatal("a Send whose answer was lost succeeded")
	}
	first, err := h.Adapter.Send(once, h.Home, "said once")
	if err != nil {
		t.Fatalf("the Send again: %v", err)
	}
	again, err := restarted.Send(once, h.Home, "said once")
	if err != nil {
		t.Fatalf("the Send after a restart: %v", err)
	}
	if again != first {
		t.Errorf("one delivery made messages %q and %q", first, again)
	}
	want := []string{"said once"}

	// A reply of two messages whose first answer was lost: two messages.
	if l, ok := h.Adapter.(platform.Limiter); ok {
		para := strings.Repeat("a", l.MaxMessageLen()-10)
		twoParts := platform.WithDeliveryKey(ctx, "suite:2")
		h.LoseSend()
		if _, err := h.Adapter.Send(twoParts, h.Home, para+"\n\n"+"b"+para[1:]); err == nil {
			t.Fatal("a Send whose first answer was lost succeeded")
		}
		for _, a := range []platform.Adapter{h.Adapter, restarted} {
			if _, err := a.Send(twoParts, h.Home, para+"\n\n"+"b"+para[1:]); err != nil {
				t.Fatalf("the two-message Send again: %v", err)
			}
		}
		want = append(want, "a…", "b…")
	}

	if other, err := h.Adapter.Send(platform.WithDeliveryKey(ctx, "suite:3"), h.Home, "said once"); err != nil || other == first {
		t.Errorf("another delivery of the same words: %q, %v", other, err)
	}
	if _, err := h.Adapter.Send(ctx, h.Home, "said once"); err != nil {
		t.Errorf("a Send not stored: %v", err)
	}
	want = append(want, "said once", "said once")

	// Shown may lag the sends (a homeserver's timeline), so it is read
	// until it holds as many messages as were made.
	var got []string
	testutil.Eventually(t, testutil.Patience, func() bool {
		got = got[:0]
		for _, text := range h.Shown(h.Home) {
			switch {
			case strings.HasPrefix(text, "aaaa"):
				got = append(got, "a…")
			case strings.HasPrefix(text, "baaa"):
				got = append(got, "b…")
			default:
				got = append(got, text)
			}
		}
		return len(got) >= len(want)
	}, "the messages made to be shown")
	if strings.Join(got, " | ") != strings.Join(want, " | ") {
		t.Errorf("shown %q, want %q", got, want)
	}
}

// Memory is a platform.Memory in a map, as baton's store keeps one: an
// adapter test hands the same Memory to a second adapter to play a
// restart.
type Memory struct {
	mu sync.Mutex
	m  map[string]string
}

// NewMemory is an empty Memory.
func NewMemory() *Memory { return &Memory{m: map[string]string{}} }

// Get is the value under key; "" for none.
func (m *Memory) Get(_ context.Context, key string) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.m[key], nil
}

// Set stores value under key; "" clears it.
func (m *Memory) Set(_ context.Context, key, value string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if value == "" {
		delete(m.m, key)
	} else {
		m.m[key] = value
	}
	return nil
}

// WithPrefix is the value of a key starting with prefix ("" for none),
// for keys that carry an account ("since:@bot:hs").
func (m *Memory) WithPrefix(prefix string) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	for k, v := range m.m {
		if strings.HasPrefix(k, prefix) {
			return v
		}
	}
	return ""
}

// testFileIn: a file a person sends arrives as the event's attachment,
// once, its bytes and claimed type intact through Open, with or without
// a caption; a file over the adapter's download limit still arrives (so
// the person can be told) but Open refuses it, with the reason in one
// line, without downloading anything.
func testFileIn(t *testing.T, h Harness) {
	if h.SayFile == nil || h.Downloads == nil {
		t.Skip("the fake cannot send files yet (Harness.SayFile and Downloads are nil)")
	}
	r := newRecorder()
	supervise(t, h, r)
	r.state(t, platform.StateLive, 1)
	ctx := testutil.Context(t, 0)
	sayFile := func(f SaidFile) string {
		t.Helper()
		id, err := h.SayFile(ctx, h.Home, h.Person, f)
		if err != nil {
			t.Fatalf("send file %s at %s: %v", f.Name, h.Home.Key(), err)
		}
		return id
	}
	data := make([]byte, 0, 70<<10)
	data = append(data, "%PDF-1.7\n"...)
	for i := 0; len(data) < cap(data); i++ {
		data = append(data, byte(i*7), byte(i>>8), 0, '\r', '\n')
	}
	for _, f := range []SaidFile{
		{Name: "report.pdf", MediaType: "application/pdf", Data: data},
		{Name: "notes.txt", MediaType: "text/plain", Data: []byte("line one\r\nline two\n"), Caption: "read this"},
	} {
		ev := r.event(t, sayFile(f))
		if ev.At.Key() != h.Home.Key() || ev.SenderID != h.Person || ev.Text != f.Caption {
			t.Errorf("%s arrived as %+v", f.Name, ev)
		}
		if len(ev.Attachments) != 1 {
			t.Errorf("%s arrived with attachments %+v, want it alone", f.Name, ev.Attachments)
			continue
		}
		att := ev.Attachments[0]
		if att.Name != f.Name || att.MediaType != f.MediaType || att.Kind != platform.KindDocument || att.Size != int64(len(f.Data)) {
			t.Errorf("%s described as %+v", f.Name, att)
		}
		if att.Open == nil {
			t.Errorf("%s cannot be opened", f.Name)
			continue
		}
		before := h.Downloads()
		got, err := readAttachment(ctx, att)
		if err != nil || !bytes.Equal(got, f.Data) {
			t.Errorf("%s read back as %d bytes (want %d): %v", f.Name, len(got), len(f.Data), err)
		}
		if h.Downloads() == before {
			t.Errorf("%s was read without a download from the service", f.Name)
		}
	}

	lim, ok := h.Adapter.(platform.DownloadLimiter)
	if !ok {
		t.Log("the adapter tells no download limit: the refusal of a file over it is not checked")
	} else {
		big := SaidFile{Name: "disk.iso", MediaType: "application/octet-stream", Data: []byte("only the start"), Size: lim.MaxDownload() + 1}
		ev := r.event(t, sayFile(big))
		if len(ev.Attachments) != 1 || ev.Attachments[0].Open == nil {
			t.Fatalf("a file over the limit arrived as %+v, want it with its attachment, to be refused on Open", ev)
		}
		before := h.Downloads()
		_, err := readAttachment(ctx, ev.Attachments[0])
		var tl *platform.TooLargeError
		if !errors.As(err, &tl) || !errors.Is(err, platform.ErrTooLarge) {
			t.Errorf("Open of a file over the %d-byte limit: %v, want a *platform.TooLargeError", lim.MaxDownload(), err)
		} else if msg := err.Error(); strings.Contains(msg, "\n") || !strings.Contains(msg, big.Name) || !strings.Contains(msg, platform.FormatSize(lim.MaxDownload())) {
			t.Errorf("refusal %q: want one line naming the file and the limit", msg)
		}
		if n := h.Downloads() - before; n != 0 {
			t.Errorf("the file over the limit was downloaded (%d requests for its bytes)", n)
		}
	}

	// Each arrived once: a later message comes first, in order.
	sentinel := say(t, h, h.Home, "after the files")
	r.event(t, sentinel)
	r.mu.Lock()
	defer r.mu.Unlock()
	seen := map[string]int{}
	for _, e := range r.events {
		seen[e.ID]++
	}
	for id, n := range seen {
		if n != 1 {
			t.Errorf("event %s arrived %d times, want once", id, n)
		}
	}
}

// readAttachment reads all of an attachment, as the store does.
func readAttachment(ctx context.Context, att platform.Attachment) ([]byte, error) {
	rc, err := att.Open(ctx)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return io.ReadAll(rc)
}
