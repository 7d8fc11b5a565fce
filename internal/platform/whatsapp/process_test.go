package whatsapp_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/baton-agent/baton/internal/platform/whatsapp"
	"github.com/baton-agent/baton/internal/platform/whatsapp/whatsapptest"
	"github.com/baton-agent/baton/internal/testutil"
)

// baton-whatsapp dying mid-listen ends Listen with why (so the gateway's
// supervisor restarts the adapter's Run); the next call starts it again,
// and a message not acknowledged before it died comes again.
func TestProcessRestartsAfterTheChildDies(t *testing.T) {
	fake := whatsapptest.New(self)
	p, kill, err := whatsapp.StartPiped(t.Context(), fake, nil, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if p.Self() != self {
		t.Fatalf("Self = %q, want %q", p.Self(), self)
	}
	got := make(chan whatsapp.Message, 4)
	var dies atomic.Bool
	dies.Store(true)
	listen := func() <-chan error {
		done := make(chan error, 1)
		go func() {
			done <- p.Listen(t.Context(), func() {}, func(ctx context.Context, m whatsapp.Message) error {
				got <- m
				if dies.Swap(false) {
					kill() // dies before the message is acknowledged
				}
				return nil
			})
		}()
		return done
	}
	first := listen()
	id := fake.PushSelf("hello")
	if m := testutil.Receive(t, got, "the message"); m.ID != id {
		t.Fatalf("got %q, want %q", m.ID, id)
	}
	if err := testutil.Receive(t, first, "Listen to end with the process"); err == nil || !strings.Contains(err.Error(), "baton-whatsapp ended") {
		t.Fatalf("Listen after the process died: %v, want why", err)
	}
	if fake.Acked(id) {
		t.Fatal("a message was acknowledged that nobody stored")
	}
	listen()
	if m := testutil.Receive(t, got, "the message again"); m.ID != id {
		t.Fatalf("after the restart got %q, want %q again", m.ID, id)
	}
	testutil.Eventually(t, testutil.Patience, func() bool { return fake.Acked(id) }, "the message to be acknowledged")
	if _, err := p.SendText(t.Context(), self, "", "answer"); err != nil {
		t.Fatalf("send after the restart: %v", err)
	}
	if s := fake.Sent(); len(s) != 1 || s[0].Text != "answer" {
		t.Errorf("sent %v", s)
	}
}

// What the device said at start (it could not be opened, or none is
// linked) is what StartProcess answers.
func TestProcessHello(t *testing.T) {
	fake := whatsapptest.New(self)
	_, _, err := whatsapp.StartPiped(t.Context(), fake, errors.New("whatsapp: device in /x/state.db: disk I/O error"), slog.New(slog.DiscardHandler))
	if err == nil || !strings.Contains(err.Error(), "disk I/O error") {
		t.Errorf("StartProcess with a device that cannot open: %v", err)
	}
	_, _, err = whatsapp.StartPiped(t.Context(), whatsapptest.New(""), nil, slog.New(slog.DiscardHandler))
	if !errors.Is(err, whatsapp.ErrNotLinked) {
		t.Errorf("StartProcess with no device linked: %v, want ErrNotLinked", err)
	}
}

// Errors cross the pipe with their kind, so the adapter classifies them
// as it does in one process.
func TestProcessCarriesErrorKinds(t *testing.T) {
	fake := whatsapptest.New(self)
	p, _, err := whatsapp.StartPiped(t.Context(), fake, nil, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	fake.FailNextSend(429, 0)
	_, err = p.SendText(t.Context(), self, "", "x")
	var se *whatsapp.ServerError
	if !errors.As(err, &se) || se.Code != 429 {
		t.Errorf("a 429 through the pipe: %v (%T)", err, err)
	}
	fake.LogOut()
	if err := p.Listen(t.Context(), func() {}, func(context.Context, whatsapp.Message) error { return nil }); !errors.Is(err, whatsapp.ErrLoggedOut) {
		t.Errorf("Listen on a logged-out device: %v, want ErrLoggedOut", err)
	}
}
