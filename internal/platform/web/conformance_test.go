package web

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"testing"

	"github.com/coder/websocket"

	"github.com/baton-agent/baton/internal/platform"
	"github.com/baton-agent/baton/internal/platform/platformtest"
	"github.com/baton-agent/baton/internal/testutil"
)

// page stands in for the browser page: it says things over a websocket,
// remembers which were acknowledged, sends again what the gateway
// answered with an error, and says it showed each message, as the page
// does.
type page struct {
	conn *websocket.Conn

	mu      sync.Mutex
	pending map[string]frame // said, not yet acknowledged
	acked   map[string]bool
	next    int
}

func dialPage(t *testing.T, a *Adapter) *page {
	hdr := http.Header{}
	hdr.Set("Authorization", "Bearer "+testToken)
	// New listened already: the dial waits in the backlog until Run serves.
	conn, _, err := websocket.Dial(testutil.Context(t, 0), "ws://"+a.Addr()+"/ws", &websocket.DialOptions{HTTPHeader: hdr})
	if err != nil {
		t.Fatalf("dial the web chat: %v", err)
	}
	p := &page{conn: conn, pending: map[string]frame{}, acked: map[string]bool{}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		p.read(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		conn.Close(websocket.StatusNormalClosure, "")
		<-done
	})
	return p
}

// read takes the adapter's frames until the page closes.
func (p *page) read(ctx context.Context) {
	for {
		_, b, err := p.conn.Read(ctx)
		if err != nil {
			return
		}
		var f frame
		if json.Unmarshal(b, &f) != nil {
			continue
		}
		if f.Type == "message" {
			_ = p.write(ctx, frame{Type: "ack", ID: f.ID})
			continue
		}
		p.mu.Lock()
		again, resend := p.pending[f.ID]
		switch {
		case f.Type == "ack":
			p.acked[eventID(f.Key, f.ID)] = true
			delete(p.pending, f.ID)
			resend = false
		case f.Type != "error":
			resend = false
		}
		p.mu.Unlock()
		if resend {
			_ = p.write(ctx, again)
		}
	}
}

func (p *page) write(ctx context.Context, f frame) error {
	b, _ := json.Marshal(f)
	return p.conn.Write(ctx, websocket.MessageText, b)
}

func (p *page) say(ctx context.Context, at platform.Address, text string) (string, error) {
	p.mu.Lock()
	p.next++
	f := frame{Type: "say", Key: at.Key(), Text: text, ID: fmt.Sprintf("page-%d", p.next)}
	p.pending[f.ID] = f
	p.mu.Unlock()
	return eventID(at.Key(), f.ID), p.write(ctx, f)
}

func (p *page) isAcked(id string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.acked[id]
}

// watched is the adapter with a page open whenever it sends: a message
// counts as sent only once a page showed it.
type watched struct {
	*Adapter
	open func()
}

func (w watched) Send(ctx context.Context, to platform.Address, text string) (string, error) {
	w.open()
	return w.Adapter.Send(ctx, to, text)
}

func TestConformance(t *testing.T) {
	platformtest.Run(t, func(t *testing.T) platformtest.Harness {
		a, err := New(Config{Listen: "127.0.0.1:0", Token: testToken, Transcripts: staticTranscripts{}})
		if err != nil {
			t.Fatal(err)
		}
		var once sync.Once
		var pg *page
		open := func() *page {
			once.Do(func() { pg = dialPage(t, a) })
			return pg
		}
		return platformtest.Harness{
			Adapter: watched{Adapter: a, open: func() { open() }},
			Home:    Home,
			Person:  Owner,
			Say: func(ctx context.Context, at platform.Address, _ string, text string) (string, error) {
				return open().say(ctx, at, text)
			},
			Acked:     func(id string) bool { return open().isAcked(id) },
			NoService: "served in-process",
			Caps:      []string{"Threader", "Typer", "Streamer"},
		}
	})
}
