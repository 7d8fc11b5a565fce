package gateway_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/llm/llmtest"
	"github.com/baton-agent/baton/internal/platform"
	"github.com/baton-agent/baton/internal/platform/telegram"
	"github.com/baton-agent/baton/internal/platform/telegram/telegramtest"
	"github.com/baton-agent/baton/internal/platform/web"
	"github.com/baton-agent/baton/internal/store"
	"github.com/baton-agent/baton/internal/testutil"
)

// fullDisk is the real SQLite store whose message writes fail, as on a
// full disk, while full is set.
type fullDisk struct {
	store.Store
	full     atomic.Bool
	refusals atomic.Int32
	reason   string // the driver's error; "": a full disk
}

func (f *fullDisk) AppendMessages(ctx context.Context, sessionID string, msgs ...store.Message) ([]store.Message, error) {
	return f.AppendMessagesWithUsage(ctx, sessionID, store.Usage{}, msgs...)
}

func (f *fullDisk) AppendMessagesWithUsage(ctx context.Context, sessionID string, u store.Usage, msgs ...store.Message) ([]store.Message, error) {
	if f.full.Load() {
		f.refusals.Add(1)
		reason := f.reason
		if reason == "" {
			reason = "database or disk is full (13)"
		}
		return nil, fmt.Errorf("append to session %s: %w", sessionID, errors.New(reason))
	}
	return f.Store.AppendMessagesWithUsage(ctx, sessionID, u, msgs...)
}

// A store that cannot record a turn is not a model failure: the person is
// told once, plainly; the message waits, stored, and is answered once the
// store recovers, without a restart or a new message.
func TestStoreTroubleIsToldAndTheMessageWaits(t *testing.T) {
	disk := &fullDisk{}
	disk.full.Store(true)
	r := newRig(t, rigOpts{wrapStore: func(st store.Store) store.Store { disk.Store = st; return disk }})
	pg := r.openPage(t)
	pg.send(map[string]any{"type": "say", "key": web.Home.Key(), "text": "hello", "id": "h1"})
	pg.await("the ack", typ("ack"))
	told := pg.await("the store trouble told", isMsg("could not save"))
	if text := told["text"].(string); !strings.Contains(text, "the disk is full") || strings.Contains(text, "model") {
		t.Errorf("told %q; want the full disk named, and no word of the model", text)
	}
	// It keeps trying while the disk is full, and the message is kept.
	testutil.Eventually(t, 0, func() bool { return disk.refusals.Load() >= 6 }, "the write to be tried again")
	if pending, err := r.st.PendingInbound(context.Background(), 0, 0); err != nil || len(pending) != 1 {
		t.Fatalf("while the disk is full the message must wait in the inbox: %v %v", pending, err)
	}
	if n := len(r.model.Requests()); n != 0 {
		t.Errorf("the model was asked %d times before the input could be stored", n)
	}

	disk.full.Store(false)
	pg.await("the answer once the store recovers", isMsg("echo: hello"))
	testutil.Eventually(t, 0, func() bool {
		pending, err := r.st.PendingInbound(context.Background(), 0, 0)
		return err == nil && len(pending) == 0
	}, "the message handled")
	b, err := r.st.LookupBinding(context.Background(), web.Home.Key())
	if err != nil {
		t.Fatal(err)
	}
	msgs, _ := r.st.Transcript(context.Background(), b.SessionID)
	var said []string
	for _, m := range msgs {
		said = append(said, m.Content)
	}
	if strings.Join(said, "|") != "hello|echo: hello" {
		t.Errorf("transcript %q, want the message and its answer once", said)
	}
	if n := len(r.model.Requests()); n != 1 {
		t.Errorf("the model was asked %d times, want 1", n)
	}
}

// A store that fails while the model answers keeps the answer: the person
// is told at once, the answer's write is tried again until the store
// recovers, and the message is answered once, without asking the model
// again or a restart.
func TestStoreTroubleMidTurnKeepsTheAnswer(t *testing.T) {
	for _, c := range []struct{ name, reason, told string }{
		{"disk full", "database or disk is full (13)", "the disk is full"},
		{"store locked", "database is locked (5)", "the store is busy"},
	} {
		t.Run(c.name, func(t *testing.T) {
			disk := &fullDisk{reason: c.reason}
			r := newRig(t, rigOpts{wrapStore: func(st store.Store) store.Store { disk.Store = st; return disk }})
			var once sync.Once
			r.model.SetDefault(func(req llmtest.Request) llmtest.Step {
				once.Do(func() { disk.full.Store(true) }) // the trouble begins while the model answers
				return llmtest.EchoReply(req)
			})
			pg := r.openPage(t)
			pg.send(map[string]any{"type": "say", "key": web.Home.Key(), "text": "hello", "id": "h1"})
			told := pg.await("the store trouble told", isMsg("could not save"))
			if text := told["text"].(string); !strings.Contains(text, c.told) || strings.Contains(text, "model") {
				t.Errorf("told %q; want %q named, and no word of the model", text, c.told)
			}
			testutil.Eventually(t, 0, func() bool { return disk.refusals.Load() >= 6 }, "the answer's write to be tried again")
			if pending, err := r.st.PendingInbound(context.Background(), 0, 0); err != nil || len(pending) != 1 {
				t.Fatalf("while the store fails the message must wait in the inbox: %v %v", pending, err)
			}

			disk.full.Store(false)
			pg.await("the answer once the store recovers", isMsg("echo: hello"))
			testutil.Eventually(t, 0, func() bool {
				pending, err := r.st.PendingInbound(context.Background(), 0, 0)
				return err == nil && len(pending) == 0
			}, "the message handled")
			msgs, _ := r.st.Transcript(context.Background(), homeSession(t, r.st))
			var said []string
			for _, m := range msgs {
				said = append(said, m.Content)
			}
			if strings.Join(said, "|") != "hello|echo: hello" {
				t.Errorf("transcript %q, want the message and its answer once", said)
			}
			if n := len(r.model.Requests()); n != 1 {
				t.Errorf("the model was asked %d times, want 1", n)
			}
		})
	}
}

// unrecorded is the real store whose "mark sent" fails, as under write
// contention, while fails is above zero.
type unrecorded struct {
	store.Store
	fails atomic.Int32
}

func (u *unrecorded) MarkDelivered(ctx context.Context, id int64, platformMsgID string) error {
	if u.fails.Add(-1) >= 0 {
		return fmt.Errorf("mark delivery %d sent: %w", id, errors.New("database is locked (5)"))
	}
	return u.Store.MarkDelivered(ctx, id, platformMsgID)
}

// A reply the service took is not sent again when recording it as sent
// fails: only the record is tried again.
func TestFailedMarkSentDoesNotResend(t *testing.T) {
	fake := telegramtest.New(t, botToken)
	tg, err := telegram.New(telegram.Config{Token: botToken, ServerURL: fake.URL(), PollTimeout: time.Second,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	st := &unrecorded{}
	r := newRig(t, rigOpts{extra: []platform.Adapter{tg}, owners: map[string][]string{"telegram": {"42"}},
		wrapStore: func(real store.Store) store.Store { st.Store = real; return st }})
	r.waitLive(t, "telegram")

	st.fails.Store(3)
	fake.PushMessage(ownerTG, 0, ownerUser, "ping")
	waitFor(t, "the answer", fake.Shown, func(m telegramtest.SentMessage) bool { return m.Plain == "echo: ping" })
	testutil.Eventually(t, 0, func() bool { return st.fails.Load() < 0 }, "mark sent to fail three times, then succeed")
	waitAllSent(t, r.st)
	if n := countMatching(fake.Shown(), func(m telegramtest.SentMessage) bool { return strings.Contains(m.Plain, "echo: ping") }); n != 1 {
		t.Errorf("the answer was posted %d times, want once: %+v", n, fake.Sent())
	}
}
