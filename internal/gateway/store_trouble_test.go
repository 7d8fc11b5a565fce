package gateway_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

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
}

func (f *fullDisk) AppendMessages(ctx context.Context, sessionID string, msgs ...store.Message) ([]store.Message, error) {
	if f.full.Load() {
		f.refusals.Add(1)
		return nil, fmt.Errorf("append to session %s: %w", sessionID, errors.New("database or disk is full (13)"))
	}
	return f.Store.AppendMessages(ctx, sessionID, msgs...)
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
