package web

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/baton-agent/baton/internal/platform"
	"github.com/baton-agent/baton/internal/testutil"
)

// asker is a gateway's receiver as the adapter sees it: it stores what is
// said and hears which places the adapter asks redelivery for.
type asker struct {
	mu    sync.Mutex
	asked []platform.Address
}

func (r *asker) Receive(context.Context, platform.Event) error { return nil }
func (r *asker) Live()                                         {}
func (r *asker) Redeliver(at platform.Address) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.asked = append(r.asked, at)
}

func (r *asker) askedFor(at platform.Address) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, a := range r.asked {
		if a == at {
			return true
		}
	}
	return false
}

// serve runs an adapter with cfg's bounds until the test ends.
func serve(t *testing.T, cfg Config, r platform.Receiver) *Adapter {
	t.Helper()
	cfg.Listen, cfg.Token = "127.0.0.1:0", testToken
	if cfg.Transcripts == nil {
		cfg.Transcripts = staticTranscripts{}
	}
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx, r) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	return a
}

// connect opens a page's websocket and waits until the adapter counts it.
func connect(t *testing.T, a *Adapter) *websocket.Conn {
	t.Helper()
	hdr := http.Header{}
	hdr.Set("Authorization", "Bearer "+testToken)
	conn, _, err := websocket.Dial(testutil.Context(t, 0), "ws://"+a.Addr()+"/ws", &websocket.DialOptions{HTTPHeader: hdr})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(websocket.StatusNormalClosure, "") })
	return conn
}

func pages(a *Adapter) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.clients)
}

// With no page open a message is not delivered: Send says nobody is
// there (the gateway keeps it), and a page that connects, or opens a
// conversation, asks for what waits.
func TestNoPageOpenIsNotDelivered(t *testing.T) {
	r := &asker{}
	a := serve(t, Config{}, r)
	_, err := a.Send(testutil.Context(t, 0), Home, "nobody sees this")
	if cl, _ := platform.Classify(err); cl != platform.ClassAway {
		t.Fatalf("Send with no page open: %v (class %v), want class away", err, cl)
	}
	conn := connect(t, a)
	testutil.Eventually(t, 0, func() bool { return r.askedFor(platform.Address{Platform: Name}) }, "the new page to ask for what waits")
	other := platform.Address{Platform: Name, Kind: platform.Thread, Chat: HomeChat, Thread: "abc"}
	if f := roundTrip(t, conn, `{"type":"open","key":"`+other.Key()+`"}`); f.Type != "history" {
		t.Fatalf("open: %+v", f)
	}
	testutil.Eventually(t, 0, func() bool { return r.askedFor(other) }, "opening a conversation to ask for what waits there")

	// The page closes: Send finds nobody there again.
	conn.Close(websocket.StatusNormalClosure, "")
	testutil.Eventually(t, 0, func() bool { return pages(a) == 0 }, "the page to be gone")
	if _, err := a.Send(testutil.Context(t, 0), Home, "after the page closed"); !errors.Is(err, platform.ErrAway) {
		t.Fatalf("Send after the page closed: %v, want away", err)
	}
}

// A message counts as delivered only once a page says it showed it; a
// try the page never answered fails to be tried again, and every try of
// one delivery carries the same id.
func TestDeliveredOnlyWhenShown(t *testing.T) {
	a := serve(t, Config{AckWait: 50 * time.Millisecond}, &asker{})
	conn := connect(t, a)
	roundTrip(t, conn, `{"type":"list"}`) // the page is counted

	ctx := platform.WithDeliveryKey(testutil.Context(t, 0), "in:7:part:0")
	_, err := a.Send(ctx, Home, "not acknowledged")
	if cl, _ := platform.Classify(err); err == nil || cl != platform.ClassTransient {
		t.Fatalf("Send the page did not acknowledge: %v (class %v), want a transient failure", err, cl)
	}
	first := readFrame(t, conn)
	if first.Type != "message" || first.ID == "" {
		t.Fatalf("frame %+v", first)
	}

	sent := make(chan error, 1)
	var id string
	go func() {
		var err error
		id, err = a.Send(ctx, Home, "not acknowledged")
		sent <- err
	}()
	again := readFrame(t, conn)
	if again.ID != first.ID {
		t.Errorf("the second try of a delivery has id %q, the first %q: the page cannot drop the repeat", again.ID, first.ID)
	}
	writeFrame(t, conn, frame{Type: "ack", ID: again.ID})
	if err := testutil.Receive(t, sent, "Send to return"); err != nil || id != again.ID {
		t.Fatalf("Send the page acknowledged: %q %v", id, err)
	}
	if other := sendShown(t, a, conn, Home, "another"); other.ID == first.ID {
		t.Errorf("a message without a delivery key got the id of another (%q)", other.ID)
	}
}

// A page that does not read fills its queue: a message then is not
// counted as delivered (nor silently dropped); the page's other frames
// are live updates it may miss.
func TestFullPageQueueIsNotDelivered(t *testing.T) {
	a := serve(t, Config{}, &asker{})
	connect(t, a) // reads nothing
	testutil.Eventually(t, 0, func() bool { return pages(a) == 1 }, "the page to be counted")
	chunk := strings.Repeat("x", 64<<10)
	ctx := testutil.Context(t, 0)
	testutil.Eventually(t, 0, func() bool {
		_ = a.Delta(ctx, Home, chunk)
		return queued(a) == PageQueue
	}, "the page's queue to fill")
	_, err := a.Send(ctx, Home, "the answer")
	if !errors.Is(err, errPagesBehind) {
		t.Fatalf("Send to a page whose queue is full: %v, want %v", err, errPagesBehind)
	}
	if cl, _ := platform.Classify(err); cl != platform.ClassTransient {
		t.Errorf("class %v, want transient: the gateway tries it again", cl)
	}
}

// queued is how many frames wait for the one open page.
func queued(a *Adapter) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	for c := range a.clients {
		return len(c.out)
	}
	return 0
}
