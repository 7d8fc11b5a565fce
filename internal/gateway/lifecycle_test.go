package gateway_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/gateway"
	"github.com/baton-agent/baton/internal/gateway/control"
	"github.com/baton-agent/baton/internal/llm/llmtest"
	"github.com/baton-agent/baton/internal/platform/web"
	"github.com/baton-agent/baton/internal/store"
	"github.com/baton-agent/baton/internal/testutil"
)

// A handoff requested while no gateway ran is picked up when one starts.
func TestPendingHandoffPickedUpAtStart(t *testing.T) {
	var sessionID string
	var handoffID int64
	r := newRig(t, rigOpts{beforeRun: func(st store.Store, owner store.User) {
		ctx := context.Background()
		s, err := st.CreateSession(ctx, store.Session{OwnerID: owner.ID, Platform: "cli"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.AppendMessages(ctx, s.ID, store.Message{Role: store.RoleUser, Content: "written before the gateway", Platform: "cli"}); err != nil {
			t.Fatal(err)
		}
		h, err := st.RequestHandoff(ctx, s.ID, "cli", "web")
		if err != nil {
			t.Fatal(err)
		}
		sessionID, handoffID = s.ID, h.ID
	}})
	final, err := r.client.Watch(context.Background(), handoffID, nil)
	if err != nil || final.State != "completed" {
		t.Fatalf("handoff requested before start: %+v %v", final, err)
	}
	if b, err := r.st.LookupBinding(context.Background(), final.Destination); err != nil || b.SessionID != sessionID {
		t.Fatalf("destination %s bound to %+v %v", final.Destination, b, err)
	}
}

// The worker renews its lease while a handoff takes longer than the lease:
// nobody takes it back, and it completes on the first attempt.
func TestLeaseRenewedWhileWorking(t *testing.T) {
	r := newRig(t, rigOpts{lease: 300 * time.Millisecond})
	sess := r.terminalSession(t)
	r.model.Push(llmtest.Reply{Text: "a slow but steady greeting for you", Delay: 250 * time.Millisecond})
	h, err := r.st.RequestHandoff(context.Background(), sess.ID, "cli", "web")
	if err != nil {
		t.Fatal(err)
	}
	r.gw.Kick()
	final, err := r.client.Watch(context.Background(), h.ID, nil)
	if err != nil || final.State != "completed" {
		t.Fatalf("slow handoff: %+v %v", final, err)
	}
	got, _ := r.st.GetHandoff(context.Background(), h.ID)
	if got.Attempts != 1 {
		t.Errorf("the handoff was taken back mid-way: %d attempts", got.Attempts)
	}
}

// Messages that arrive while a turn runs queue, and are answered in order.
func TestMailboxKeepsOrder(t *testing.T) {
	r := newRig(t, rigOpts{})
	pg := r.openPage(t)
	key := web.Home.Key()
	r.model.Push(
		llmtest.Reply{Text: "first answer, slowly", Delay: 100 * time.Millisecond},
		llmtest.Reply{Text: "second answer"},
		llmtest.Reply{Text: "third answer"},
	)
	for i, text := range []string{"one", "two", "three"} {
		pg.send(map[string]any{"type": "say", "key": key, "text": text, "id": "m" + itoa(int64(i))})
	}
	pg.await("third answer", func(f map[string]any) bool { return f["type"] == "message" && f["text"] == "third answer" })
	b, err := r.st.LookupBinding(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	msgs, _ := r.st.Transcript(context.Background(), b.SessionID)
	var got []string
	for _, m := range msgs {
		got = append(got, m.Content)
	}
	want := "one|first answer, slowly|two|second answer|three|third answer"
	if strings.Join(got, "|") != want {
		t.Fatalf("transcript %q, want %q", strings.Join(got, "|"), want)
	}
}

// The page sees a reply streamed in pieces before the finished message.
func TestWebStreamsReplies(t *testing.T) {
	r := newRig(t, rigOpts{})
	pg := r.openPage(t)
	r.model.Push(llmtest.Reply{Text: "streamed in several little pieces"})
	pg.send(map[string]any{"type": "say", "key": web.Home.Key(), "text": "stream please", "id": "s1"})
	var deltas []string
	for {
		f := pg.await("delta or message", func(f map[string]any) bool { return f["type"] == "delta" || f["type"] == "message" })
		if f["type"] == "message" {
			break
		}
		deltas = append(deltas, f["text"].(string))
	}
	if len(deltas) < 2 || strings.Join(deltas, "") != "streamed in several little pieces" {
		t.Fatalf("deltas %q", deltas)
	}
}

// On stop, a turn in flight is given the grace period to finish, and its
// answer is delivered before Run returns.
func TestStopFinishesTurnInFlight(t *testing.T) {
	r := newRig(t, rigOpts{})
	pg := r.openPage(t)
	r.model.Push(llmtest.Reply{Text: "finished despite the stop", Delay: 50 * time.Millisecond})
	pg.send(map[string]any{"type": "say", "key": web.Home.Key(), "text": "long job", "id": "j1"})
	pg.await("ack", func(f map[string]any) bool { return f["type"] == "ack" })
	testutil.Eventually(t, 0, func() bool { return len(r.model.Requests()) > 0 }, "the model to be asked")
	r.stop()
	b, err := r.st.LookupBinding(context.Background(), web.Home.Key())
	if err != nil {
		t.Fatal(err)
	}
	msgs, _ := r.st.Transcript(context.Background(), b.SessionID)
	if last := msgs[len(msgs)-1]; last.Content != "finished despite the stop" {
		t.Fatalf("last message after stop: %+v", last)
	}
	if pending, _ := r.st.PendingDeliveries(context.Background(), "", 0); len(pending) != 0 {
		t.Errorf("the answer was not delivered before stopping: %+v", pending)
	}
	if pending, _ := r.st.PendingInbound(context.Background(), 0, 0); len(pending) != 0 {
		t.Errorf("inbound left unhandled: %+v", pending)
	}
	if _, err := os.Stat(r.client.Socket); !os.IsNotExist(err) {
		t.Errorf("the control socket outlived the gateway: %v", err)
	}
}

func TestControlSocketIsPrivate(t *testing.T) {
	r := newRig(t, rigOpts{})
	fi, err := os.Stat(r.client.Socket)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("control socket mode %v, want 0600", fi.Mode().Perm())
	}
}

// A turn still running when the grace period ends is suspended: the
// gateway stops, what the model had written is kept as the session's
// draft, and the message waits, pending, for the next start to continue
// its turn.
func TestStopSuspendsTurnAfterGrace(t *testing.T) {
	r := newRig(t, rigOpts{grace: 200 * time.Millisecond})
	pg := r.openPage(t)
	r.model.Push(llmtest.Reply{Text: "this answer takes far too long to finish", Delay: time.Second})
	pg.send(map[string]any{"type": "say", "key": web.Home.Key(), "text": "slow job", "id": "j1"})
	pg.await("first words", func(f map[string]any) bool { return f["type"] == "delta" })
	stopped := make(chan struct{})
	go func() { r.stop(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(30 * time.Second): // a hang guard, not a timing assertion
		t.Fatal("the gateway did not stop after its grace period")
	}
	b, err := r.st.LookupBinding(context.Background(), web.Home.Key())
	if err != nil {
		t.Fatal(err)
	}
	msgs, _ := r.st.Transcript(context.Background(), b.SessionID)
	if last := msgs[len(msgs)-1]; last.Role != store.RoleUser || last.Content != "slow job" {
		t.Fatalf("last message %+v; want the message, its answer not yet stored", last)
	}
	if draft, err := r.st.Draft(context.Background(), b.SessionID); err != nil || !strings.HasPrefix(draft, "this") {
		t.Fatalf("kept draft %q (%v); want the words written before the stop", draft, err)
	}
	if pending, err := r.st.PendingInbound(context.Background(), 0, 0); err != nil || len(pending) != 1 {
		t.Fatalf("pending %v (%v); want the message waiting for the next start", pending, err)
	}
}

// A message stored by a run that stopped mid-turn is answered at the next
// start, without being stored twice; one that was answered but whose
// answer was not yet sent gets that answer, not a second one.
func TestInboundLeftMidTurnIsAnsweredAtStart(t *testing.T) {
	var unanswered, answered string
	r := newRig(t, rigOpts{script: []llmtest.Step{llmtest.Reply{Text: "answered after the restart"}}, beforeRun: func(st store.Store, owner store.User) {
		ctx := context.Background()
		for i, key := range []string{web.Home.Key(), "web:thread:main:other"} {
			s, err := st.CreateSession(ctx, store.Session{OwnerID: owner.ID, Platform: "web"})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := st.Bind(ctx, key, s.ID); err != nil {
				t.Fatal(err)
			}
			id := "m" + itoa(int64(i))
			if _, _, err := st.AddInbound(ctx, store.Inbound{Platform: "web", PlatformMsgID: id, AddressKey: key, SenderID: web.Owner, Text: "question " + id}); err != nil {
				t.Fatal(err)
			}
			msgs := []store.Message{{Role: store.RoleUser, Content: "question " + id, Platform: "web", PlatformMsgID: id}}
			if i == 1 {
				msgs = append(msgs, store.Message{Role: store.RoleAssistant, Content: "the answer given before the crash", Platform: "web"})
				answered = s.ID
			} else {
				unanswered = s.ID
			}
			if _, err := st.AppendMessages(ctx, s.ID, msgs...); err != nil {
				t.Fatal(err)
			}
		}
	}})
	r.openPage(t) // a reply counts as sent once a page showed it
	// An event is done once its answer is stored; then the answer is sent.
	testutil.Eventually(t, 0, func() bool {
		pending, err := r.st.PendingInbound(context.Background(), 0, 0)
		return err == nil && len(pending) == 0
	}, "every inbound message handled")
	waitAllSent(t, r.st)
	msgs, _ := r.st.Transcript(context.Background(), unanswered)
	if len(msgs) != 2 || msgs[0].Content != "question m0" || msgs[1].Content != "answered after the restart" {
		t.Fatalf("unanswered session now %+v", msgs)
	}
	msgs, _ = r.st.Transcript(context.Background(), answered)
	if len(msgs) != 2 {
		t.Fatalf("the answered question was asked again: %+v", msgs)
	}
	if n := len(r.model.Requests()); n != 1 {
		t.Errorf("%d model calls, want 1", n)
	}
	// Both answers went out, once each.
	for key, want := range map[string]string{web.Home.Key(): "answered after the restart", "web:thread:main:other": "the answer given before the crash"} {
		ds, _ := r.st.EnqueueDeliveries(context.Background(), store.Delivery{Key: "in:" + inboundID(t, r, key) + ":part:0", AddressKey: key, Text: "probe"})
		if ds[0].Text != want || ds[0].SentAt.IsZero() {
			t.Errorf("delivery to %s: %+v", key, ds[0])
		}
	}
}

// inboundID is the inbox id of the one event stored for key.
func inboundID(t *testing.T, r *rig, key string) string {
	t.Helper()
	for _, id := range []string{"m0", "m1"} {
		in, isNew, err := r.st.AddInbound(context.Background(), store.Inbound{Platform: "web", PlatformMsgID: id, AddressKey: key})
		if err != nil || isNew {
			t.Fatalf("inbound %s: new=%v %v", id, isNew, err)
		}
		if in.AddressKey == key {
			return itoa(in.ID)
		}
	}
	t.Fatalf("no inbound for %s", key)
	return ""
}

// A handoff whose synthetic turn fails is failed with the reason, and
// leaves nothing behind at the destination: no binding, nothing to post.
func TestFailedHandoffLeavesNothingBehind(t *testing.T) {
	r := newRig(t, rigOpts{})
	sess := r.terminalSession(t)
	ctx := context.Background()
	r.model.Push(llmtest.Fail{Status: 500})
	h, err := r.client.RequestHandoff(ctx, control.HandoffRequest{SessionID: sess.ID, From: "cli", To: "web"})
	if err != nil {
		t.Fatal(err)
	}
	var dest string
	final, err := r.client.Watch(ctx, h.ID, func(p control.Progress) {
		if p.Destination != "" {
			dest = p.Destination
		}
	})
	if err != nil || final.State != "failed" || !strings.Contains(final.Error, "500") {
		t.Fatalf("final %+v %v", final, err)
	}
	if dest == "" {
		t.Fatal("the handoff never reached a destination before failing")
	}
	if b, err := r.st.LookupBinding(ctx, dest); err == nil {
		t.Errorf("the failed handoff left %s bound to %s", dest, b.SessionID)
	}
	if pending, _ := r.st.PendingDeliveries(ctx, "", 0); len(pending) != 0 {
		t.Errorf("the failed handoff left messages to post: %+v", pending)
	}
	// Its synthetic turn is taken back: the transcript reads as before.
	if msgs, _ := r.st.Transcript(ctx, sess.ID); len(msgs) != 4 || msgs[3].Content != "Noted: the 9:40 train." {
		t.Errorf("the failed handoff left its turn in the transcript: %d messages", len(msgs))
	}
	// The session is intact and a later handoff can go ahead.
	if st, _ := r.st.HandoffState(ctx, sess.ID); st.State != store.HandoffFailed {
		t.Errorf("state %s", st.State)
	}
	h2, err := r.client.RequestHandoff(ctx, control.HandoffRequest{SessionID: sess.ID, From: "cli", To: "web"})
	if err != nil {
		t.Fatal(err)
	}
	if p, err := r.client.Watch(ctx, h2.ID, nil); err != nil || p.State != "completed" {
		t.Fatalf("retry after failure: %+v %v", p, err)
	}
}

// A restart takes every stored, unhandled message, not a first page of
// them: more than the store's default page and the old limit of 1,000.
func TestEveryPendingInboundIsAnsweredAtStart(t *testing.T) {
	const perConversation, conversations = 5, 220 // 1,100 in all
	sessions := map[string]string{}               // address key → session
	r := newRig(t, rigOpts{beforeRun: func(st store.Store, owner store.User) {
		ctx := context.Background()
		for c := range conversations {
			key := "web:thread:main:c" + itoa(int64(c))
			s, err := st.CreateSession(ctx, store.Session{OwnerID: owner.ID, Platform: "web"})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := st.Bind(ctx, key, s.ID); err != nil {
				t.Fatal(err)
			}
			sessions[key] = s.ID
		}
		// Interleaved, as several conversations write at once.
		for i := range perConversation {
			for c := range conversations {
				key := "web:thread:main:c" + itoa(int64(c))
				id := key + "/" + itoa(int64(i))
				if _, _, err := st.AddInbound(ctx, store.Inbound{Platform: "web", PlatformMsgID: id, AddressKey: key, SenderID: web.Owner, Text: "n" + itoa(int64(i))}); err != nil {
					t.Fatal(err)
				}
			}
		}
	}})
	testutil.Eventually(t, 5*time.Minute, func() bool { // a hang guard: 1,100 turns under -race on a busy machine
		pending, err := r.st.PendingInbound(context.Background(), 0, 1)
		return err == nil && len(pending) == 0
	}, "every inbound message handled")
	for key, id := range sessions {
		msgs, err := r.st.Transcript(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if len(msgs) != 2*perConversation {
			t.Fatalf("%s has %d messages, want %d", key, len(msgs), 2*perConversation)
		}
		// In the order stored, each answered once.
		for i := range perConversation {
			if q, a := msgs[2*i].Content, msgs[2*i+1].Content; q != "n"+itoa(int64(i)) || a != "echo: "+q {
				t.Fatalf("%s turn %d is %q → %q", key, i, q, a)
			}
		}
	}
}

// A message id is the page's own: the same id said in two web
// conversations is two messages, each answered, not one dropped as a
// redelivery; said again in the same conversation it is a redelivery.
func TestSameIDInTwoWebConversations(t *testing.T) {
	r := newRig(t, rigOpts{})
	pg := r.openPage(t)
	other := "web:thread:main:other"
	pg.send(map[string]any{"type": "say", "key": web.Home.Key(), "text": "first place", "id": "same"})
	pg.await("the first answer", isMsg("echo: first place"))
	pg.send(map[string]any{"type": "say", "key": other, "text": "second place", "id": "same"})
	pg.await("the second answer", isMsg("echo: second place"))
	pg.send(map[string]any{"type": "say", "key": other, "text": "second place", "id": "same"})
	pg.await("the redelivery acknowledged", typ("ack"))
	waitAllSent(t, r.st)
	b, err := r.st.LookupBinding(context.Background(), other)
	if err != nil {
		t.Fatal(err)
	}
	msgs := settled(t, r, b.SessionID, "echo: second place")
	if len(msgs) != 2 {
		t.Errorf("the second conversation has %d messages, want the message and its answer once", len(msgs))
	}
}

// A handoff the reaper fails (every gateway that claimed it stopped
// answering) is taken back like one the worker fails: the thread it bound
// is unbound and its synthetic turn leaves the transcript, so the session
// is not half in two places.
func TestReapedHandoffIsTakenBack(t *testing.T) {
	const dest = "web:thread:main:reaped"
	var sessionID string
	var handoffID int64
	r := newRig(t, rigOpts{beforeRun: func(st store.Store, owner store.User) {
		ctx := context.Background()
		s, err := st.CreateSession(ctx, store.Session{OwnerID: owner.ID, Platform: "cli"})
		if err != nil {
			t.Fatal(err)
		}
		sessionID = s.ID
		if _, err := st.AppendMessages(ctx, s.ID,
			store.Message{Role: store.RoleUser, Content: "plan a trip", Platform: "cli"},
			store.Message{Role: store.RoleAssistant, Content: "Lisbon, then.", Platform: "cli"}); err != nil {
			t.Fatal(err)
		}
		h, err := st.RequestHandoff(ctx, s.ID, "cli", "web")
		if err != nil {
			t.Fatal(err)
		}
		handoffID = h.ID
		// Gateways that claimed it and died, the last one after binding
		// the thread and running the synthetic turn.
		for i := 1; i <= store.MaxHandoffAttempts; i++ {
			who := "gateway@dead" + itoa(int64(i))
			if _, ok, err := st.ClaimHandoff(ctx, h.ID, who, time.Millisecond); err != nil || !ok {
				t.Fatalf("claim %d: %v %v", i, ok, err)
			}
			if i < store.MaxHandoffAttempts {
				if n, _, err := st.ReapHandoffs(ctx, time.Now().Add(time.Minute)); err != nil || n != 1 {
					t.Fatalf("requeue %d: %d %v", i, n, err)
				}
				continue
			}
			if _, err := st.SetHandoffDestination(ctx, h.ID, who, dest); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := st.Bind(ctx, dest, s.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := st.AppendMessages(ctx, s.ID,
			store.Message{Role: store.RoleUser, Kind: store.KindHandoff, Content: gateway.HandoffLead + " handed off", Platform: "web", PlatformMsgID: "handoff:" + itoa(h.ID)},
			store.Message{Role: store.RoleAssistant, Content: "Hello on the web.", Platform: "web"}); err != nil {
			t.Fatal(err)
		}
	}})
	ctx := context.Background()
	testutil.Eventually(t, 0, func() bool {
		h, err := r.st.GetHandoff(ctx, handoffID)
		return err == nil && h.State == store.HandoffFailed
	}, "the reaper to fail the handoff")
	testutil.Eventually(t, 0, func() bool {
		_, err := r.st.LookupBinding(ctx, dest)
		return errors.Is(err, store.ErrNotFound)
	}, "the thread to be unbound")
	testutil.Eventually(t, 0, func() bool {
		msgs, err := r.st.Transcript(ctx, sessionID)
		return err == nil && len(msgs) == 2 && msgs[1].Content == "Lisbon, then."
	}, "the handoff's turn taken out of the transcript")
	hist, err := r.st.History(ctx, sessionID)
	if err != nil || len(hist) < 4 {
		t.Errorf("the taken-back turn must stay in the history: %d rows, %v", len(hist), err)
	}
}

// A chat command whose answer was stored before a crash is not run again
// at the next start (a second /new would start a second session); its
// stored answer is sent.
func TestCommandAnsweredBeforeACrashIsNotRunAgain(t *testing.T) {
	var inboundID int64
	r := newRig(t, rigOpts{beforeRun: func(st store.Store, owner store.User) {
		ctx := context.Background()
		// What the first run did before it died: /new's session, bound,
		// and its answer stored; the message not yet marked done.
		s, err := st.CreateSession(ctx, store.Session{OwnerID: owner.ID, Platform: "web"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.Bind(ctx, web.Home.Key(), s.ID); err != nil {
			t.Fatal(err)
		}
		in, _, err := st.AddInbound(ctx, store.Inbound{Platform: "web", PlatformMsgID: "cmd1", AddressKey: web.Home.Key(), SenderID: web.Owner, Text: "/new"})
		if err != nil {
			t.Fatal(err)
		}
		inboundID = in.ID
		if _, err := st.EnqueueDeliveries(ctx, store.Delivery{Key: "in:" + itoa(in.ID) + ":part:0", AddressKey: web.Home.Key(), Text: "New session started here."}); err != nil {
			t.Fatal(err)
		}
	}})
	ctx := context.Background()
	testutil.Eventually(t, 0, func() bool {
		pending, err := r.st.PendingInbound(ctx, 0, 0)
		return err == nil && len(pending) == 0
	}, "the command handled")
	r.openPage(t) // a reply counts as sent once a page showed it
	waitAllSent(t, r.st)
	ss, err := r.st.ListSessions(ctx, store.SessionFilter{OwnerID: r.owner.ID})
	if err != nil {
		t.Fatal(err)
	}
	if len(ss) != 1 {
		t.Errorf("%d sessions after the restart, want the one /new made before the crash", len(ss))
	}
	d, err := r.st.DeliveryByKey(ctx, "in:"+itoa(inboundID)+":part:0")
	if err != nil || d.SentAt.IsZero() {
		t.Errorf("the stored answer was not sent: %+v %v", d, err)
	}
}

// converse says each text at the web chat's home in turn and waits for
// the echo of each; ids are prefix and a number.
func (p *page) converse(prefix string, texts ...string) {
	p.t.Helper()
	for i, text := range texts {
		p.send(map[string]any{"type": "say", "key": web.Home.Key(), "text": text, "id": prefix + itoa(int64(i))})
		p.await("the answer to "+text, isMsg("echo: "+text))
	}
}

// lookups counts the store's searches for an earlier try's turn.
type lookups struct {
	store.Store
	n atomic.Int32
}

func (l *lookups) FindPlatformMessage(ctx context.Context, platform, platformMsgID string) (store.Message, error) {
	l.n.Add(1)
	return l.Store.FindPlatformMessage(ctx, platform, platformMsgID)
}

// A message stored just now has no earlier try to look for, in a new
// session or an existing one: its turn runs without the lookup.
func TestFreshMessagesSkipTheEarlierTryLookup(t *testing.T) {
	l := &lookups{}
	r := newRig(t, rigOpts{wrapStore: func(st store.Store) store.Store { l.Store = st; return l }})
	pg := r.openPage(t)
	pg.converse("f", "first", "second", "third")
	if n := l.n.Load(); n != 0 {
		t.Errorf("looked for an earlier try %d times, want none", n)
	}
}

// outboxReads counts the reads of one address's pending deliveries.
type outboxReads struct {
	store.Store
	key string
	n   atomic.Int32
}

func (o *outboxReads) PendingDeliveries(ctx context.Context, addressKey string, limit int) ([]store.Delivery, error) {
	if addressKey == o.key {
		o.n.Add(1)
	}
	return o.Store.PendingDeliveries(ctx, addressKey, limit)
}

// An answer stored with nothing unsent before it is sent as it was
// stored, without reading the outbox back; one stored behind an unsent
// delivery waits for it.
func TestAnswerIsSentWithoutReadingTheOutboxBack(t *testing.T) {
	o := &outboxReads{key: web.Home.Key()}
	r := newRig(t, rigOpts{wrapStore: func(st store.Store) store.Store { o.Store = st; return o }})
	pg := r.openPage(t)
	pg.converse("o", "first", "second", "third")
	if n := o.n.Load(); n != 0 {
		t.Errorf("read the outbox %d times to send three answers, want none", n)
	}
	// A notice stored meanwhile by another process, not yet sent: the
	// next answer goes after it, read from the outbox in order.
	if _, err := r.st.EnqueueDeliveries(context.Background(), store.Delivery{Key: "other:1", AddressKey: web.Home.Key(), Text: "a notice from the terminal"}); err != nil {
		t.Fatal(err)
	}
	pg.send(map[string]any{"type": "say", "key": web.Home.Key(), "text": "fourth", "id": "o4"})
	// await drops what comes before its match: the answer, were it first,
	// would be dropped here and never found below.
	pg.await("the notice", isMsg("a notice from the terminal"))
	pg.await("the fourth answer", isMsg("echo: fourth"))
	if n := o.n.Load(); n == 0 {
		t.Errorf("an answer behind an unsent notice was sent without reading the outbox")
	}
}
