package matrix_test

import (
	"context"
	"strings"
	"testing"

	"github.com/baton-agent/baton/internal/platform"
	"github.com/baton-agent/baton/internal/platform/matrix"
	"github.com/baton-agent/baton/internal/platform/matrix/matrixtest"
	"github.com/baton-agent/baton/internal/testutil"
)

// A stored delivery sent again — after its answer was lost, and by a new
// adapter as after a restart — is one message in the room: its events'
// transaction ids come from the delivery key, and the homeserver answers
// a repeated one with the event it already made. A reply of two events
// whose first answer was lost is two messages, not three.
func TestRepeatedDeliveryIsOneMessage(t *testing.T) {
	w := newWorld(t)
	proxy := matrixtest.NewProxy(t, w.hs)
	a := w.adapter(t, proxy.URL(), newMemory())
	ctx := testutil.Context(t, 0)
	once := platform.WithDeliveryKey(ctx, "in:1:part:0")

	proxy.LoseNext("send")
	if _, err := a.Send(once, w.home, "said once"); err == nil {
		t.Fatal("Send whose answer was lost succeeded")
	}
	first, err := a.Send(once, w.home, "said once")
	if err != nil {
		t.Fatal(err)
	}
	restarted := w.adapter(t, w.hs.URL(), newMemory())
	again, err := restarted.Send(once, w.home, "said once")
	if err != nil {
		t.Fatal(err)
	}
	if again != first {
		t.Errorf("the same delivery made events %s and %s", first, again)
	}

	// Two events in one Send (the text is over the limit): the first
	// one's answer is lost, so the try fails after the homeserver took it.
	long := strings.Repeat("long ", matrix.MaxMessageLen/5) + "tail"
	twoParts := platform.WithDeliveryKey(ctx, "in:2:part:0")
	proxy.LoseNext("send")
	if _, err := a.Send(twoParts, w.home, long); err == nil {
		t.Fatal("Send whose first answer was lost succeeded")
	}
	if _, err := a.Send(twoParts, w.home, long); err != nil {
		t.Fatal(err)
	}
	if _, err := restarted.Send(twoParts, w.home, long); err != nil {
		t.Fatal(err)
	}

	// The same words as another delivery, or with no key, are new messages.
	if other, err := a.Send(platform.WithDeliveryKey(ctx, "in:3:part:0"), w.home, "said once"); err != nil || other == first {
		t.Fatalf("another delivery: %s, %v", other, err)
	}
	if _, err := a.Send(ctx, w.home, "the end"); err != nil {
		t.Fatal(err)
	}

	var bodies []string
	testutil.Eventually(t, testutil.Patience, func() bool {
		msgs, err := w.Owner.Messages(context.Background(), w.Room)
		if err != nil {
			return false
		}
		bodies = botBodies(w, msgs)
		return len(bodies) > 0 && bodies[len(bodies)-1] == "the end"
	}, "the last message shown")
	count := map[string]int{}
	for _, b := range bodies {
		switch {
		case strings.HasPrefix(b, "long"):
			count["long"]++
		case strings.HasSuffix(b, "tail"):
			count["tail"]++
		default:
			count[b]++
		}
	}
	want := map[string]int{"said once": 2, "long": 1, "tail": 1, "the end": 1}
	for k, n := range want {
		if count[k] != n {
			t.Errorf("%q shown %d times, want %d (all: %d messages)", k, count[k], n, len(bodies))
		}
	}
	if len(bodies) != 5 {
		t.Errorf("the room shows %d messages of the bot, want 5", len(bodies))
	}
}

// botBodies is the bot's messages among msgs, in order.
func botBodies(w *world, msgs []matrixtest.Message) []string {
	var out []string
	for _, m := range msgs {
		if m.Sender == w.Bot.ID {
			out = append(out, m.Body)
		}
	}
	return out
}
