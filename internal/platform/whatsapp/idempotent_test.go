package whatsapp_test

import (
	"regexp"
	"testing"

	"github.com/baton-agent/baton/internal/platform"
	"github.com/baton-agent/baton/internal/platform/whatsapp"
	"github.com/baton-agent/baton/internal/platform/whatsapp/whatsapptest"
	"github.com/baton-agent/baton/internal/testutil"
)

// whatsmeowID is the form of the ids whatsmeow makes up for the messages
// it sends.
var whatsmeowID = regexp.MustCompile(`^3EB0[0-9A-F]{18}$`)

// The messages of a stored delivery go with ids of the shape whatsmeow
// gives its own ("3EB0" and 18 upper-case hex digits), the same on every
// try; a send not stored leaves the id to the client. (That a repeat is
// shown once is the conformance suite's RepeatedDeliveryShownOnce.)
func TestDeliveryIDsLookLikeWhatsmeows(t *testing.T) {
	fake := whatsapptest.New(self)
	a := newAdapter(t, fake, "")
	home := whatsapp.HomeAddress(self)
	ctx := testutil.Context(t, 0)
	once := platform.WithDeliveryKey(ctx, "in:1:part:0")
	first, err := a.Send(once, home, "said once")
	if err != nil {
		t.Fatal(err)
	}
	again, err := newAdapter(t, fake, "").Send(once, home, "said once")
	if err != nil {
		t.Fatal(err)
	}
	if again != first || !whatsmeowID.MatchString(first) {
		t.Errorf("the same delivery went as %q and %q, want one id shaped as whatsmeow's", first, again)
	}
	if id := whatsapp.MessageID(ctx, home, 0); id != "" {
		t.Errorf("a send not stored was given id %q", id)
	}
}
