package gateway_test

import (
	"context"
	"strings"
	"testing"

	"github.com/baton-agent/baton/internal/llm/llmtest"
	"github.com/baton-agent/baton/internal/platform/whatsapp/whatsapptest"
	"github.com/baton-agent/baton/internal/testutil"
)

// WhatsApp took a reply but its acknowledgement never came: the gateway
// sends the stored delivery again, under the same message id, so the
// phone shows the reply once and the delivery ends recorded as sent.
func TestLostAcknowledgementShowsReplyOnce(t *testing.T) {
	fake := whatsapptest.New(waSelf)
	r := whatsappRig(t, fake)
	fake.LoseNextSend()
	r.model.Push(llmtest.Reply{Text: "Answered once."})
	fake.PushSelf("are you there?")

	answer := waToSelf("Answered once.")
	var tries []whatsapptest.Sent
	if err := fake.Wait(testutil.Context(t, 0), func() bool {
		tries = tries[:0]
		for _, m := range fake.Sent() {
			if answer(m) {
				tries = append(tries, m)
			}
		}
		return len(tries) >= 2
	}); err != nil {
		t.Fatalf("the reply was not sent again after its acknowledgement was lost: %+v", fake.Sent())
	}
	if tries[0].ID != tries[1].ID {
		t.Errorf("the two tries went as %q and %q", tries[0].ID, tries[1].ID)
	}
	testutil.Eventually(t, testutil.Patience, func() bool {
		pending, err := r.st.PendingDeliveries(context.Background(), waHome.Key(), 0)
		return err == nil && len(pending) == 0
	}, "the reply recorded as sent")
	n := 0
	for _, m := range fake.Shown() {
		if strings.Contains(m.Text, "Answered once.") {
			n++
		}
	}
	if n != 1 {
		t.Errorf("the phone shows the reply %d times", n)
	}
}
