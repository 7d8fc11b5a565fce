package gateway_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/llm/llmtest"
	"github.com/baton-agent/baton/internal/platform/web"
	"github.com/baton-agent/baton/internal/store"
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
	for len(r.model.Requests()) == 0 {
		time.Sleep(5 * time.Millisecond)
	}
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
	if pending, _ := r.st.PendingInbound(context.Background(), 0); len(pending) != 0 {
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

// A turn still running when the grace period ends is cancelled: the
// gateway stops, and what the model had said is kept, marked interrupted.
func TestStopCancelsTurnAfterGrace(t *testing.T) {
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
	last := msgs[len(msgs)-1]
	if last.Role != store.RoleAssistant || !strings.HasSuffix(last.Content, "[interrupted]") || !strings.HasPrefix(last.Content, "this") {
		t.Fatalf("last message %+v", last)
	}
}
