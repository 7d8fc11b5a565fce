package gateway_test

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/baton-agent/baton/internal/llm/llmtest"
	"github.com/baton-agent/baton/internal/platform"
	"github.com/baton-agent/baton/internal/platform/web"
	"github.com/baton-agent/baton/internal/platform/whatsapp"
	"github.com/baton-agent/baton/internal/platform/whatsapp/whatsapptest"
	"github.com/baton-agent/baton/internal/testutil"
)

const waSelf = "4915550000@s.whatsapp.net" // the owner's account: baton is one of its linked devices

// waHome is the owner's chat with themselves.
var waHome = whatsapp.HomeAddress(waSelf)

// whatsappRig runs the gateway with the WhatsApp adapter on the in-memory
// fake (no fake WhatsApp server is practical: see whatsapptest).
func whatsappRig(t *testing.T, fake *whatsapptest.Fake, with ...func(*rigOpts)) *rig {
	t.Helper()
	a, err := whatsapp.New(whatsapp.Config{Client: fake, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	o := rigOpts{
		personal: []string{"whatsapp"},
		extra:    []platform.Adapter{a},
		owners:   map[string][]string{"whatsapp": {waSelf}},
		homes:    map[string]string{"web": web.Home.Key(), "whatsapp": waHome.Key()},
	}
	for _, f := range with {
		f(&o)
	}
	r := newRig(t, o)
	r.waitLive(t, "whatsapp")
	return r
}

// WhatsApp took a reply but its acknowledgement never came: the gateway
// sends the stored delivery again, under the same message id, so the
// phone shows the reply once and the delivery ends recorded as sent.
func TestLostAcknowledgementShowsReplyOnce(t *testing.T) {
	fake := whatsapptest.New(waSelf)
	r := whatsappRig(t, fake)
	fake.LoseNextSend()
	r.model.Push(llmtest.Reply{Text: "Answered once."})
	fake.PushSelf("are you there?")

	answer := func(m whatsapptest.Sent) bool { return m.Chat == waSelf && strings.Contains(m.Text, "Answered once.") }
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
