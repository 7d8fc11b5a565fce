package main

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"time"

	"github.com/coder/websocket"
)

// crashPage is the web chat's page in the crash harness: it reconnects
// after every kill, says again (every second, and at each connect) what
// the gateway has not acknowledged as stored, acknowledges each message
// it shows, and counts what it showed by text — once per frame id, as the
// real page shows a frame once.
type crashPage struct {
	addr, token string

	mu      sync.Mutex
	conn    *websocket.Conn
	unacked map[string]map[string]any // say frames by id, until the gateway acks them
	order   []string                  // their ids, in the order said
	seen    map[string]bool           // message frame ids shown
	shown   map[string]int            // message text → frames with distinct ids
	frames  map[string]int            // message text → frames received, repeats included
}

func newCrashPage(addr string) *crashPage {
	return &crashPage{addr: addr, unacked: map[string]map[string]any{}, seen: map[string]bool{}, shown: map[string]int{}, frames: map[string]int{}}
}

// say queues what the person types in conversation key.
func (p *crashPage) say(key, id, text string) {
	f := map[string]any{"type": "say", "key": key, "id": id, "text": text}
	p.mu.Lock()
	p.unacked[id] = f
	p.order = append(p.order, id)
	c := p.conn
	p.mu.Unlock()
	if c != nil {
		p.write(c, f) // f, not p.unacked[id]: an ack may delete it meanwhile
	}
}

// pending is how many said messages the gateway has not acknowledged.
func (p *crashPage) pending() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.unacked)
}

// counts is, for text, how many times the page showed it and how many
// frames carried it.
func (p *crashPage) counts(text string) (shown, frames int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.shown[text], p.frames[text]
}

func (p *crashPage) write(c *websocket.Conn, f map[string]any) {
	b, _ := json.Marshal(f)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = c.Write(ctx, websocket.MessageText, b) // a failed write is said again
}

// run keeps the page connected until ctx ends.
func (p *crashPage) run(ctx context.Context, token func() string) {
	for ctx.Err() == nil {
		p.connect(ctx, token())
		select {
		case <-ctx.Done():
		case <-time.After(50 * time.Millisecond): // the gateway is down: try again
		}
	}
}

func (p *crashPage) connect(ctx context.Context, token string) {
	if token == "" {
		return
	}
	dctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	h := http.Header{}
	h.Set("Authorization", "Bearer "+token)
	c, _, err := websocket.Dial(dctx, "ws://"+p.addr+"/ws", &websocket.DialOptions{HTTPHeader: h})
	cancel()
	if err != nil {
		return
	}
	defer c.CloseNow()
	c.SetReadLimit(1 << 20)
	p.mu.Lock()
	p.conn = c
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		p.conn = nil
		p.mu.Unlock()
	}()
	p.write(c, map[string]any{"type": "list"})
	resend := func() {
		p.mu.Lock()
		var todo []map[string]any
		for _, id := range p.order {
			if f, ok := p.unacked[id]; ok {
				todo = append(todo, f)
			}
		}
		p.mu.Unlock()
		for _, f := range todo {
			p.write(c, f)
		}
	}
	resend()
	done := make(chan struct{})
	defer close(done)
	go func() {
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				resend()
			}
		}
	}()
	for {
		_, b, err := c.Read(ctx)
		if err != nil {
			return
		}
		var f struct {
			Type, ID, Text string
		}
		if json.Unmarshal(b, &f) != nil {
			continue
		}
		switch f.Type {
		case "ack":
			p.mu.Lock()
			delete(p.unacked, f.ID)
			p.mu.Unlock()
		case "message":
			p.mu.Lock()
			text := withoutOffer(f.Text)
			p.frames[text]++
			if f.ID == "" || !p.seen[f.ID] {
				p.seen[f.ID] = true
				p.shown[text]++
			}
			p.mu.Unlock()
			p.write(c, map[string]any{"type": "ack", "id": f.ID})
		}
	}
}
