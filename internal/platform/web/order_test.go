package web

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/platform"
	"github.com/baton-agent/baton/internal/testutil"
)

// slowStore is a gateway whose store write for a message waits until the
// test releases it.
type slowStore struct {
	asker
	received chan platform.Event // each event as its Receive starts
	release  chan struct{}
	once     sync.Once
}

func newSlowStore() *slowStore {
	return &slowStore{received: make(chan platform.Event, 64), release: make(chan struct{})}
}

func (s *slowStore) Receive(ctx context.Context, ev platform.Event) error {
	s.received <- ev
	select {
	case <-s.release:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *slowStore) open() { s.once.Do(func() { close(s.release) }) }

// A page's acknowledgement is not held behind its own message: while the
// store is still writing what the page said, a reply to the same page is
// acknowledged and Send returns.
func TestAckNotBehindOwnMessage(t *testing.T) {
	st := newSlowStore()
	// An hour: only the page's acknowledgement can end this Send.
	a := serve(t, Config{AckWait: time.Hour}, st)
	t.Cleanup(st.open) // runs before serve's cleanup stops the adapter
	conn := connect(t, a)

	writeFrame(t, conn, frame{Type: "say", Key: Home.Key(), ID: "p1", Text: "hello"})
	ev := testutil.Receive(t, st.received, "the message to reach the store")
	if ev.Text != "hello" {
		t.Fatalf("stored %q", ev.Text)
	}

	sent := make(chan error, 1)
	go func() {
		_, err := a.Send(testutil.Context(t, 0), Home, "the answer")
		sent <- err
	}()
	f := readFrame(t, conn)
	if f.Type != "message" || f.Text != "the answer" {
		t.Fatalf("the page got %+v, want the answer", f)
	}
	writeFrame(t, conn, frame{Type: "ack", ID: f.ID})
	if err := testutil.Receive(t, sent, "Send to return while the page's message is still being stored"); err != nil {
		t.Fatalf("Send: %v", err)
	}
	// Only now the store finishes: the page's message is acknowledged.
	st.open()
	if f := readFrame(t, conn); f.Type != "ack" || f.ID != "p1" {
		t.Fatalf("after the store wrote it the page got %+v, want the ack of p1", f)
	}
}

// A page's messages reach the store one at a time, in the order said,
// and each is acknowledged in that order, however many wait.
func TestPageMessagesKeepTheirOrder(t *testing.T) {
	st := newSlowStore()
	a := serve(t, Config{}, st)
	t.Cleanup(st.open)
	conn := connect(t, a)

	const n = PageWork + 8 // more than the worker's queue: reading waits, nothing is lost
	for i := range n {
		writeFrame(t, conn, frame{Type: "say", Key: Home.Key(), ID: "p" + strconv.Itoa(i), Text: "message " + strconv.Itoa(i)})
	}
	first := testutil.Receive(t, st.received, "the first message to reach the store")
	select {
	case ev := <-st.received:
		t.Fatalf("%q reached the store while %q was still being written", ev.Text, first.Text)
	default:
	}
	st.open()
	got := []string{first.Text}
	for len(got) < n {
		got = append(got, testutil.Receive(t, st.received, "the next message to reach the store").Text)
	}
	for i, text := range got {
		if want := "message " + strconv.Itoa(i); text != want {
			t.Fatalf("message %d reached the store as %q, want %q (all: %q)", i, text, want, got)
		}
	}
	for i := range n {
		if f := readFrame(t, conn); f.Type != "ack" || f.ID != "p"+strconv.Itoa(i) {
			t.Fatalf("frame %d: %+v, want the ack of p%d", i, f, i)
		}
	}
}
