package web

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
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
	// files are the files shown, in order, once each (by message id).
	files  []frame
	fileID map[string]bool
}

func dialPage(t *testing.T, a *Adapter) *page {
	hdr := http.Header{}
	hdr.Set("Authorization", "Bearer "+testToken)
	// New listened already: the dial waits in the backlog until Run serves.
	conn, _, err := websocket.Dial(testutil.Context(t, 0), "ws://"+a.Addr()+"/ws", &websocket.DialOptions{HTTPHeader: hdr})
	if err != nil {
		t.Fatalf("dial the web chat: %v", err)
	}
	p := &page{conn: conn, pending: map[string]frame{}, acked: map[string]bool{}, fileID: map[string]bool{}}
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
			p.mu.Lock()
			if f.File != nil && !p.fileID[f.ID] {
				p.fileID[f.ID] = true
				p.files = append(p.files, f)
			}
			p.mu.Unlock()
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

// sayFile sends a file with its caption as the page does: a multipart
// upload, answered once the message is stored.
func (p *page) sayFile(ctx context.Context, a *Adapter, at platform.Address, f platformtest.SaidFile) (string, error) {
	p.mu.Lock()
	p.next++
	id := fmt.Sprintf("page-%d", p.next)
	p.mu.Unlock()
	// Refused as not stored (503), the files come back to the box and
	// the person sends them again, under the same message id.
	for try := 1; ; try++ {
		resp, err := upload(ctx, a, map[string]string{"key": at.Key(), "id": id, "text": f.Caption},
			uploadPart{field: "file", name: f.Name, media: f.MediaType, data: f.Data})
		if err != nil {
			return "", err
		}
		if resp.StatusCode == http.StatusServiceUnavailable && try < 3 {
			continue
		}
		if resp.StatusCode != http.StatusOK {
			return "", fmt.Errorf("upload: %d %s", resp.StatusCode, resp.body)
		}
		break
	}
	ev := eventID(at.Key(), id)
	p.mu.Lock()
	p.acked[ev] = true // the upload's answer is its acknowledgement
	p.mu.Unlock()
	return ev, nil
}

// shownFiles are the files the page showed at at, fetched as the page
// fetches them.
func (p *page) shownFiles(t *testing.T, a *Adapter, at platform.Address) []platformtest.ShownFile {
	p.mu.Lock()
	frames := slices.Clone(p.files)
	p.mu.Unlock()
	var out []platformtest.ShownFile
	for _, f := range frames {
		if f.Key != at.Key() {
			continue
		}
		resp, body := fetch(t, a, f.File.URL)
		if resp.StatusCode != http.StatusOK {
			t.Errorf("GET %s: %d %s", f.File.URL, resp.StatusCode, body)
		}
		out = append(out, platformtest.ShownFile{Name: f.File.Name, Data: []byte(body), Caption: f.Text, Image: f.File.Image})
	}
	return out
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
	open  func()
	reads *atomic.Int32
}

func (w watched) Send(ctx context.Context, to platform.Address, text string) (string, error) {
	w.open()
	return w.Adapter.Send(ctx, to, text)
}

func (w watched) SendFile(ctx context.Context, to platform.Address, f platform.File) (string, error) {
	w.open()
	return w.Adapter.SendFile(ctx, to, f)
}

// Run hands events to r as the gateway does: the files of an event are
// read while it is received (the upload is gone once Receive returned),
// and the suite is given what was kept. reads counts the suite's reads
// of what was kept, standing for a service's downloads.
func (w watched) Run(ctx context.Context, r platform.Receiver) error {
	return w.Adapter.Run(ctx, keeper{Receiver: r, reads: w.reads})
}

type keeper struct {
	platform.Receiver
	reads *atomic.Int32
}

func (k keeper) Receive(ctx context.Context, ev platform.Event) error {
	for i, att := range ev.Attachments {
		rc, err := att.Open(ctx)
		if err != nil {
			return err
		}
		data, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			return err
		}
		ev.Attachments[i].Open = func(context.Context) (io.ReadCloser, error) {
			k.reads.Add(1)
			return io.NopCloser(bytes.NewReader(data)), nil
		}
	}
	return k.Receiver.Receive(ctx, ev)
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
		reads := &atomic.Int32{}
		return platformtest.Harness{
			Adapter: watched{Adapter: a, open: func() { open() }, reads: reads},
			Home:    Home,
			Person:  Owner,
			Say: func(ctx context.Context, at platform.Address, _ string, text string) (string, error) {
				return open().say(ctx, at, text)
			},
			Acked: func(id string) bool { return open().isAcked(id) },
			SayFile: func(ctx context.Context, at platform.Address, _ string, f platformtest.SaidFile) (string, error) {
				return open().sayFile(ctx, a, at, f)
			},
			Downloads: func() int { return int(reads.Load()) },
			Files:     func(at platform.Address) []platformtest.ShownFile { return open().shownFiles(t, a, at) },
			NoService: "served in-process",
			Caps:      []string{"Threader", "Typer", "Streamer", "FileSender"},
		}
	})
}
