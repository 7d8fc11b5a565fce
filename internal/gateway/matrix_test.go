package gateway_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/gateway"
	"github.com/baton-agent/baton/internal/gateway/control"
	"github.com/baton-agent/baton/internal/llm/llmtest"
	"github.com/baton-agent/baton/internal/platform"
	"github.com/baton-agent/baton/internal/platform/matrix"
	"github.com/baton-agent/baton/internal/platform/matrix/matrixtest"
	"github.com/baton-agent/baton/internal/platform/web"
	"github.com/baton-agent/baton/internal/store"
	"github.com/baton-agent/baton/internal/testutil"
)

// homeserver is this package's one Dendrite, started by the first Matrix
// test; each test registers its own users and room on it.
var homeserver matrixtest.Shared

func TestMain(m *testing.M) { os.Exit(homeserver.Run(m)) }

// matrixSetup is a Matrix world for a gateway test: people and a home
// room on the real homeserver, and a proxy the bot reaches it through.
type matrixSetup struct {
	*matrixtest.World
	proxy *matrixtest.Proxy
	home  platform.Address
}

func newMatrixSetup(t *testing.T) *matrixSetup {
	t.Helper()
	hs := homeserver.Need(t)
	w, err := hs.NewWorld(testutil.Context(t, 0))
	if err != nil {
		t.Fatal(err)
	}
	return &matrixSetup{World: w, proxy: matrixtest.NewProxy(t, hs),
		home: platform.Address{Platform: matrix.Name, Kind: platform.Group, Chat: w.Room}}
}

// rig runs a gateway with the web chat and Matrix (its sync token in the
// gateway's store); again restarts on an earlier rig's home.
func (m *matrixSetup) rig(t *testing.T, again *rig) *rig {
	t.Helper()
	return m.rigWith(t, rigOpts{again: again})
}

// rigWith is rig with more of the gateway's options set in o.
func (m *matrixSetup) rigWith(t *testing.T, o rigOpts) *rig {
	t.Helper()
	o.with = func(st store.Store) []platform.Adapter {
		a, err := matrix.New(matrix.Config{
			HomeserverURL: m.proxy.URL(), UserID: m.Bot.ID, AccessToken: m.Bot.Token,
			Owners: []string{m.Owner.ID}, SyncTimeout: 2 * time.Second,
			Memory: gateway.PlatformMemory{Store: st, Platform: matrix.Name},
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		})
		if err != nil {
			t.Fatal(err)
		}
		return []platform.Adapter{a}
	}
	o.owners = map[string][]string{"matrix": {m.Owner.ID}}
	o.homes = map[string]string{"web": web.Home.Key(), "matrix": m.home.Key()}
	r := newRig(t, o)
	r.waitLive(t, "matrix")
	return r
}

// shown waits until the room, as the owner's client shows it (edits
// applied), has messages that satisfy cond, and returns them in order.
func (m *matrixSetup) shown(t *testing.T, what string, cond func([]matrixtest.Message) bool) []matrixtest.Message {
	t.Helper()
	var msgs []matrixtest.Message
	var lastErr error
	ok := testutil.Poll(testutil.Context(t, 0), func() bool {
		msgs, lastErr = m.Owner.Messages(context.Background(), m.Room)
		return lastErr == nil && cond(msgs)
	})
	if !ok {
		var seen []string
		for _, x := range msgs {
			seen = append(seen, x.Sender+": "+cut(x.Body, 80))
		}
		t.Fatalf("the room never showed %s (%v); it shows:\n%s", what, lastErr, strings.Join(seen, "\n"))
	}
	return msgs
}

func cut(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// from keeps the messages sender posted that match.
func from(msgs []matrixtest.Message, sender string, match func(matrixtest.Message) bool) []matrixtest.Message {
	var out []matrixtest.Message
	for _, m := range msgs {
		if m.Sender == sender && match(m) {
			out = append(out, m)
		}
	}
	return out
}

func inThread(root, sub string) func(matrixtest.Message) bool {
	return func(m matrixtest.Message) bool { return m.Thread == root && strings.Contains(m.Body, sub) }
}

func inRoom(sub string) func(matrixtest.Message) bool {
	return func(m matrixtest.Message) bool { return m.Thread == "" && strings.Contains(m.Body, sub) }
}

// has waits for a message of sender that matches.
func (m *matrixSetup) has(t *testing.T, sender, what string, match func(matrixtest.Message) bool) matrixtest.Message {
	t.Helper()
	msgs := m.shown(t, what, func(msgs []matrixtest.Message) bool { return len(from(msgs, sender, match)) > 0 })
	return from(msgs, sender, match)[0]
}

func TestMatrixHandoffThreadAndBack(t *testing.T) {
	m := newMatrixSetup(t)
	r := m.rig(t, nil)
	sess := r.terminalSession(t)
	ctx := context.Background()

	// Terminal → /handoff matrix: a thread root named after the session
	// in the home room, the agent's greeting in the thread.
	r.model.Push(llmtest.Reply{Text: "Hi on **Matrix** — we were booking the 9:40 train."})
	h, err := r.client.RequestHandoff(ctx, control.HandoffRequest{SessionID: sess.ID, From: "cli", To: "matrix"})
	if err != nil {
		t.Fatal(err)
	}
	final, err := r.client.Watch(ctx, h.ID, nil)
	if err != nil || final.State != "completed" {
		t.Fatalf("handoff %+v %v", final, err)
	}
	dest, err := platform.ParseKey(final.Destination)
	if err != nil || dest.Kind != platform.Thread || dest.Chat != m.Room {
		t.Fatalf("destination %q (%v)", final.Destination, err)
	}
	root := dest.Thread
	rootMsg := m.has(t, m.Bot.ID, "the thread root", func(x matrixtest.Message) bool { return x.EventID == root })
	if rootMsg.Thread != "" || !strings.Contains(rootMsg.Body, "Trip planning") {
		t.Errorf("thread root %+v", rootMsg)
	}
	greeting := m.has(t, m.Bot.ID, "the greeting in the thread", inThread(root, "Hi on **Matrix**"))
	if !greeting.FallingBack || greeting.InReplyTo == "" || !strings.Contains(greeting.FormattedBody, "<strong>Matrix</strong>") {
		t.Errorf("greeting %+v", greeting)
	}
	if b, err := r.st.LookupBinding(ctx, final.Destination); err != nil || b.SessionID != sess.ID {
		t.Fatalf("the thread is bound to %+v (%v), want session %s", b, err, sess.ID)
	}

	// The owner's reply in the thread (as Element sends it) continues the
	// same session, and the model sees the whole transcript.
	r.model.Push(llmtest.Reply{Text: "Done, it is booked."})
	if _, err := m.Owner.SayInThread(ctx, m.Room, root, greeting.EventID, "book it please"); err != nil {
		t.Fatal(err)
	}
	m.has(t, m.Bot.ID, "the answer in the thread", inThread(root, "Done, it is booked."))
	msgs := transcriptEndsWith(t, r, sess.ID, "book it please", "Done, it is booked.")
	if u := msgs[len(msgs)-2]; u.Platform != "matrix" {
		t.Fatalf("the thread's message went to %+v", u)
	}
	if msgs[0].Content != "plan a trip to Lisbon" {
		t.Errorf("the transcript lost its start: %+v", msgs[0])
	}
	reqs := r.model.Requests()
	body, _ := json.Marshal(reqs[len(reqs)-1])
	for _, want := range []string{"plan a trip to Lisbon", "Noted: the 9:40 train.", "Hi on **Matrix**", "book it please"} {
		if !strings.Contains(string(body), want) {
			t.Errorf("the model was not shown %q", want)
		}
	}

	// A slow answer (six words, 150 ms apart): typing shows while it is
	// written, and its first words, posted at once, grow by edits.
	r.model.Push(llmtest.Reply{Text: "Slowly, one word at a time, then done.", Delay: 150 * time.Millisecond})
	if _, err := m.Owner.SayInThread(ctx, m.Room, root, "", "answer slowly"); err != nil {
		t.Fatal(err)
	}
	m.has(t, m.Bot.ID, "the slow answer, whole", inThread(root, "Slowly, one word at a time, then done."))
	if n := m.proxy.CallCount("typing"); n == 0 {
		t.Errorf("no typing notification while turns ran")
	}
	if n := m.proxy.CallCount("edit"); n == 0 {
		t.Errorf("no reply was streamed by edits")
	}

	// Everything the bot posted after the root is in the thread.
	for _, x := range from(m.shown(t, "all", func([]matrixtest.Message) bool { return true }), m.Bot.ID, func(matrixtest.Message) bool { return true }) {
		if x.EventID != root && x.Thread != root {
			t.Errorf("a message leaked into the room: %+v", x)
		}
	}
}

// storyParts are the bot's messages in the thread after ask.
func storyParts(msgs []matrixtest.Message, bot, ask string) []matrixtest.Message {
	var out []matrixtest.Message
	after := false
	for _, m := range msgs {
		if m.EventID == ask {
			after = true
			continue
		}
		if after && m.Sender == bot {
			out = append(out, m)
		}
	}
	return out
}

// waitedOut reports whether the outbox has nothing left to send: the
// streamed messages have been edited into their final form.
func waitedOut(r *rig) bool {
	pending, err := r.st.PendingDeliveries(context.Background(), "", 0)
	return err == nil && len(pending) == 0
}

// The connection to the homeserver drops while the handoff's greeting is
// being written: the adapter reconnects by itself and the greeting is
// posted once, in the thread.
func TestMatrixConnectionDroppedMidHandoff(t *testing.T) {
	m := newMatrixSetup(t)
	r := m.rig(t, nil)
	sess := r.terminalSession(t)
	ctx := context.Background()

	asked, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	r.model.SetDefault(func(llmtest.Request) llmtest.Step {
		once.Do(func() { close(asked) })
		<-release
		return llmtest.Reply{Text: "Greeting after the drop."}
	})
	h, err := r.client.RequestHandoff(ctx, control.HandoffRequest{SessionID: sess.ID, From: "cli", To: "matrix"})
	if err != nil {
		t.Fatal(err)
	}
	testutil.Receive(t, asked, "the handoff's turn to start") // the thread exists now
	m.proxy.DownWith(0)                                       // the sync connection is cut; every call fails
	r.waitPlatform(t, "matrix", "went down", func(p control.Platform) bool { return !p.Live })
	m.proxy.Up()
	r.waitPlatform(t, "matrix", "came back", func(p control.Platform) bool { return p.Live })
	close(release)

	final, err := r.client.Watch(ctx, h.ID, nil)
	if err != nil || final.State != "completed" {
		t.Fatalf("handoff %+v %v", final, err)
	}
	dest, _ := platform.ParseKey(final.Destination)
	m.has(t, m.Bot.ID, "the greeting", inThread(dest.Thread, "Greeting after the drop."))
	waitAllSent(t, r.st)
	all := m.shown(t, "everything", func([]matrixtest.Message) bool { return true })
	if n := len(from(all, m.Bot.ID, func(x matrixtest.Message) bool { return strings.Contains(x.Body, "Greeting after the drop.") })); n != 1 {
		t.Errorf("the greeting was posted %d times", n)
	}
	if n := len(from(all, m.Bot.ID, func(x matrixtest.Message) bool { return strings.Contains(x.Body, "Trip planning") })); n != 1 {
		t.Errorf("%d thread roots", n)
	}
	if m.proxy.CallCount("whoami") < 2 {
		t.Errorf("the adapter did not reconnect (whoami called %d times)", m.proxy.CallCount("whoami"))
	}
}

// The sync token lives in the gateway's store: after a restart, what was
// said while the gateway was away is answered once, and nothing answered
// before is answered again.
func TestMatrixGatewayRestartNeitherReplaysNorLoses(t *testing.T) {
	m := newMatrixSetup(t)
	r := m.rig(t, nil)
	ctx := context.Background()

	first, err := m.Owner.Say(ctx, m.Room, "first question")
	if err != nil {
		t.Fatal(err)
	}
	m.has(t, m.Bot.ID, "the first answer", inRoom("echo: first question"))
	// The token stored is past the first question: acknowledged.
	testutil.Eventually(t, testutil.Patience, func() bool {
		since, err := r.st.PlatformState(ctx, "matrix", "since:"+m.Bot.ID)
		if err != nil || since == "" {
			return false
		}
		again, err := m.Bot.SyncedAfter(ctx, since, first)
		return err == nil && !again
	}, "the sync token stored past the first question")
	r.stop()

	if _, err := m.Owner.Say(ctx, m.Room, "said while the gateway was away"); err != nil {
		t.Fatal(err)
	}
	r2 := m.rig(t, r)
	m.has(t, m.Bot.ID, "the answer to what was said while away", inRoom("echo: said while the gateway was away"))
	if _, err := m.Owner.Say(ctx, m.Room, "marker"); err != nil {
		t.Fatal(err)
	}
	all := m.shown(t, "the marker's answer", func(msgs []matrixtest.Message) bool {
		return len(from(msgs, m.Bot.ID, inRoom("echo: marker"))) > 0
	})
	for _, text := range []string{"echo: first question", "echo: said while the gateway was away"} {
		if n := len(from(all, m.Bot.ID, inRoom(text))); n != 1 {
			t.Errorf("%q posted %d times", text, n)
		}
	}
	b, err := r2.st.LookupBinding(ctx, m.home.Key())
	if err != nil {
		t.Fatal(err)
	}
	msgs := transcriptEndsWith(t, r2, b.SessionID, "marker", "echo: marker")
	var said []string
	for _, x := range msgs {
		said = append(said, x.Content)
	}
	if strings.Join(said, "|") != "first question|echo: first question|said while the gateway was away|echo: said while the gateway was away|marker|echo: marker" {
		t.Errorf("transcript %q", said)
	}
}

// transcriptEndsWith waits until the session's transcript ends with the
// person's words and the answer (a streamed answer shows in the chat a
// moment before the turn stores it) and returns it.
func transcriptEndsWith(t *testing.T, r *rig, sessionID, said, answer string) []store.Message {
	t.Helper()
	var msgs []store.Message
	ok := testutil.Poll(testutil.Context(t, 0), func() bool {
		var err error
		msgs, err = r.st.Transcript(context.Background(), sessionID)
		n := len(msgs)
		return err == nil && n >= 2 && msgs[n-2].Content == said && msgs[n-1].Content == answer
	})
	if !ok {
		var tail []string
		for _, x := range msgs[max(0, len(msgs)-3):] {
			tail = append(tail, x.Content)
		}
		t.Fatalf("the transcript never ended with %q, %q; it ends %q", said, answer, tail)
	}
	return msgs
}

// The first answer in a room that holds no session ends with the offer of
// the session held elsewhere, in the same message, whether the answer
// grew by edits or came whole; nothing is posted after it.
func TestMatrixContinueOfferEndsTheFirstAnswer(t *testing.T) {
	m := newMatrixSetup(t)
	r := m.rig(t, nil)
	r.terminalSession(t)
	ctx := context.Background()
	second, err := m.Owner.CreateRoom(ctx, "second", m.Bot.ID)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Bot.Join(ctx, second); err != nil {
		t.Fatal(err)
	}
	const offerEnd = " — /continue to pick it up here."
	for _, c := range []struct {
		what, room, answer string
		delay              time.Duration
	}{
		{"grown by edits", m.Room, "Hello on Matrix, one word at a time.", 150 * time.Millisecond},
		{"posted whole", second, "Hello again, all at once.", 0},
	} {
		edits := m.proxy.CallCount("edit")
		r.model.Push(llmtest.Reply{Text: c.answer, Delay: c.delay})
		ask, err := m.Owner.Say(ctx, c.room, "hi")
		if err != nil {
			t.Fatal(err)
		}
		var bot []matrixtest.Message
		if !testutil.Poll(testutil.Context(t, 0), func() bool {
			msgs, err := m.Owner.Messages(ctx, c.room)
			bot = storyParts(msgs, m.Bot.ID, ask)
			return err == nil && len(bot) > 0 && strings.HasSuffix(bot[len(bot)-1].Body, offerEnd) && waitedOut(r)
		}) {
			t.Fatalf("%s: the room never showed the offer; the bot posted %+v", c.what, bot)
		}
		if len(bot) != 1 || !strings.HasPrefix(bot[0].Body, c.answer+"\n\nYou were working on ") {
			var bodies []string
			for _, x := range bot {
				bodies = append(bodies, x.Body)
			}
			t.Errorf("%s: the bot posted %q; want one message, the answer ending with the offer", c.what, bodies)
		}
		if grew := m.proxy.CallCount("edit") > edits; grew != (c.delay > 0) {
			t.Errorf("%s: edited: %v", c.what, grew)
		}
	}
}

// A home written as the README shows it, the room id with its ':', is
// read as Matrix reads it (as the daemon reads gateway.homes), and a
// handoff lands in that room.
func TestMatrixHomeAsWritten(t *testing.T) {
	m := newMatrixSetup(t)
	written := "matrix:group:" + m.Room
	home, err := platform.ParseWritten(written, matrix.Spec().CheckAddress)
	if err != nil {
		t.Fatalf("%s: %v", written, err)
	}
	m.home = home
	r := m.rig(t, nil)
	sess := r.terminalSession(t)
	ctx := context.Background()
	r.model.Push(llmtest.Reply{Text: "Here, in the room as written."})
	h, err := r.client.RequestHandoff(ctx, control.HandoffRequest{SessionID: sess.ID, From: "cli", To: "matrix"})
	if err != nil {
		t.Fatal(err)
	}
	final, err := r.client.Watch(ctx, h.ID, nil)
	if err != nil || final.State != "completed" {
		t.Fatalf("handoff %+v %v", final, err)
	}
	if dest, err := platform.ParseKey(final.Destination); err != nil || dest.Chat != m.Room {
		t.Fatalf("destination %q (%v), want a thread in %s", final.Destination, err, m.Room)
	}
	m.has(t, m.Bot.ID, "the greeting", func(x matrixtest.Message) bool { return strings.Contains(x.Body, "Here, in the room as written.") })
}

// A reply half streamed by edits when the gateway stopped is finished in
// place at the next start: the room shows the one message, edited into
// the answer, not the half-written one and the answer again below it.
func TestMatrixFrozenStreamedReplyIsFinishedInPlace(t *testing.T) {
	m := newMatrixSetup(t)
	// Suspended well before the stream's next edit (Matrix paces them 2 s
	// apart), so no edit is cut off mid-request: Dendrite was seen to hold
	// the room's later events up for seconds after one.
	r := m.rigWith(t, rigOpts{grace: 300 * time.Millisecond})
	ctx := context.Background()
	r.model.Push(llmtest.Reply{Text: "slowly: " + words(80), Delay: 50 * time.Millisecond}) // 4 s: past the stop's grace
	if _, err := m.Owner.Say(ctx, m.Room, "tell me at length"); err != nil {
		t.Fatal(err)
	}
	frozen := m.has(t, m.Bot.ID, "the reply's first words", inRoom("slowly: word000"))
	r.stop()

	// The next start writes the answer anew (the rig's model speaks
	// OpenAI's protocol): an echo.
	m.rig(t, r)
	all := m.shown(t, "the answer", func(msgs []matrixtest.Message) bool {
		return len(from(msgs, m.Bot.ID, inRoom("echo: tell me at length"))) > 0
	})
	var bot []matrixtest.Message
	for _, x := range all {
		if x.Sender == m.Bot.ID && x.Thread == "" {
			bot = append(bot, x)
		}
	}
	if len(bot) != 1 || bot[0].EventID != frozen.EventID || bot[0].Body != "echo: tell me at length" {
		var seen []string
		for _, x := range bot {
			seen = append(seen, x.EventID+": "+cut(x.Body, 60))
		}
		t.Errorf("the bot shows %q; want its first message (%s) edited into the answer, alone", seen, frozen.EventID)
	}
}
