package gateway_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/gateway"
	"github.com/baton-agent/baton/internal/platform/web"
	"github.com/baton-agent/baton/internal/testutil"
)

// One person's messages are taken at a bounded rate: past the burst, a
// message is refused with why and how long to wait, and is not answered.
func TestMessagesPastThePersonsRateAreRefusedWithWhy(t *testing.T) {
	r := newRig(t, rigOpts{rate: gateway.Rate{Burst: 3, Every: time.Hour}})
	pg := r.openPage(t)
	for i, text := range []string{"one", "two", "three", "four"} {
		pg.send(map[string]any{"type": "say", "key": web.Home.Key(), "text": text, "id": "r" + itoa(int64(i))})
	}
	refusal := pg.await("the refusal", isMsg("not taken"))
	if text := refusal["text"].(string); !strings.Contains(text, "3 at once") || !strings.Contains(text, "send it again") {
		t.Errorf("refusal %q does not say the bound and what to do", text)
	}
	testutil.Eventually(t, 0, func() bool {
		b, err := r.st.LookupBinding(context.Background(), web.Home.Key())
		if err != nil {
			return false
		}
		msgs, _ := r.st.Transcript(context.Background(), b.SessionID)
		return len(msgs) == 6
	}, "three messages answered")
	waitAllSent(t, r.st)
	b, _ := r.st.LookupBinding(context.Background(), web.Home.Key())
	msgs, _ := r.st.Transcript(context.Background(), b.SessionID)
	for _, m := range msgs {
		if m.Content == "four" {
			t.Errorf("the refused message was stored and answered")
		}
	}
	if len(msgs) != 6 {
		t.Errorf("%d messages in the transcript, want 3 answered", len(msgs))
	}
}

// A message sent again (a page resending what it was not yet told was
// stored, after a reconnect) spends none of the person's allowance: it is
// a duplicate, not a message.
func TestRepeatsSpendNoAllowance(t *testing.T) {
	r := newRig(t, rigOpts{rate: gateway.Rate{Burst: 2, Every: time.Hour}})
	pg := r.openPage(t)
	for _, f := range []struct{ id, text string }{{"r0", "one"}, {"r0", "one"}, {"r0", "one"}, {"r1", "two"}} {
		pg.send(map[string]any{"type": "say", "key": web.Home.Key(), "text": f.text, "id": f.id})
	}
	frames := pg.collect("the answer to two", isMsg("two"))
	if n := count(frames, isMsg("not taken")); n != 0 {
		t.Errorf("%d refusals for two messages within a burst of two; frames: %v", n, frames)
	}
	if n := count(frames, isMsg("one")); n != 1 {
		t.Errorf("one answered %d times", n)
	}
}
