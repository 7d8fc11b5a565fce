package gatewaytest

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/baton-agent/baton/internal/platform"
	"github.com/baton-agent/baton/internal/platform/web"
	"github.com/baton-agent/baton/internal/testutil"
)

const webName = web.Name

func webHome() platform.Address { return web.Home }

// Web is the gateway's own web chat, driven by a page speaking its
// websocket protocol: a handoff opens a new conversation under the home
// one, and only the owner (who holds the token) gets in.
func Web() Harness { return webHarness{} }

type webHarness struct{}

// Caps: a handoff opens a conversation of its own, which the page never
// refuses; the page holds no history to catch up from (the gateway
// resends what it did not acknowledge), and a dropped page is the web
// package's own test.
func (webHarness) Caps() Caps { return Caps{Threads: true} }

func (webHarness) Start(t testing.TB) Service { return &webService{} }

type webService struct {
	mu   sync.Mutex
	page *page
	url  string
}

// Setup: the gateway's web chat is the platform; it builds no adapter.
func (s *webService) Setup() Setup {
	return Setup{
		Platform: webName, Display: web.Spec().Display,
		Adapters: func(platform.Memory) []platform.Adapter { return nil },
		Home:     web.Home,
	}
}

// attach opens a page on the gateway just started.
func (s *webService) attach(t testing.TB, gw Gateway) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.url = gw.WebURL()
	s.page = openPage(t, s.url)
}

func (s *webService) current() *page {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.page
}

// Say types text in the page; a stranger, without the token, is turned
// away at the door (and if let in, says it all the same).
func (s *webService) Say(t testing.TB, at platform.Address, who Person, text string) {
	t.Helper()
	if who == Stranger {
		if p, err := dialPage(t, s.url, false); err == nil {
			t.Errorf("a page without the token got in")
			p.say(t, at, text)
		}
		return
	}
	s.current().say(t, at, text)
}

func (s *webService) Shown() []Shown { return s.current().Shown() }

func (s *webService) Command(line string) string { return line }
func (s *webService) Mention(text string) string { return text }
func (s *webService) RefuseThreads()             {}

// ThreadName is the conversation's title as the page lists it.
func (s *webService) ThreadName(at platform.Address) string { return s.current().title(at.Key()) }

// SayRepeated: again is the page sending the message again under its
// id, as after a reconnection that lost the chat's acknowledgement.
func (s *webService) SayRepeated(t testing.TB, at platform.Address, text string) func(testing.TB) {
	t.Helper()
	p := s.current()
	id := p.say(t, at, text)
	return func(t testing.TB) { p.sayAs(t, at, text, id) }
}

// WantLink: the terminal is given the page's address.
func (s *webService) WantLink(platform.Address) string { return s.url }

// page is a browser tab of the web chat: it acknowledges each message it
// shows, as the page does.
type page struct {
	conn *websocket.Conn
	mu   sync.Mutex
	said int
	// listed: the chat answered the page's list request.
	listed bool
	// shown, titles: messages and conversation titles as received;
	// acks: the ids of what the page said that the chat stored.
	shown  []Shown
	titles map[string]string
	acks   map[string]string // id → "" when stored, else the error
}

// openPage connects a page with the token in url.
func openPage(t testing.TB, u string) *page {
	t.Helper()
	p, err := dialPage(t, u, true)
	if err != nil {
		t.Fatalf("open the web chat: %v", err)
	}
	// One round trip: once answered, the gateway has the page among those
	// it tells of new conversations (the handshake alone does not promise
	// that).
	if err := p.write(frame{Type: "list"}); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, testutil.Patience, func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		return p.listed
	}, "the web chat's list of conversations")
	return p
}

func dialPage(t testing.TB, u string, withToken bool) (*page, error) {
	t.Helper()
	parsed, err := url.Parse(u)
	if err != nil {
		return nil, err
	}
	h := http.Header{}
	if withToken {
		h.Set("Authorization", "Bearer "+parsed.Query().Get("token"))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, _, err := websocket.Dial(ctx, "ws://"+parsed.Host+"/ws", &websocket.DialOptions{HTTPHeader: h})
	if err != nil {
		return nil, err
	}
	p := &page{conn: conn, titles: map[string]string{}, acks: map[string]string{}}
	go p.read()
	t.Cleanup(func() { conn.Close(websocket.StatusNormalClosure, "") })
	return p, nil
}

type frame struct {
	Type  string `json:"type"`
	Key   string `json:"key,omitempty"`
	ID    string `json:"id,omitempty"`
	Text  string `json:"text,omitempty"`
	Title string `json:"title,omitempty"`
	Error string `json:"error,omitempty"`
}

func (p *page) read() {
	for {
		_, b, err := p.conn.Read(context.Background())
		if err != nil {
			return
		}
		var f frame
		if json.Unmarshal(b, &f) != nil {
			continue
		}
		p.mu.Lock()
		switch f.Type {
		case "message":
			at, _ := platform.ParseKey(f.Key)
			p.shown = append(p.shown, Shown{At: at, Text: f.Text})
			p.write(frame{Type: "ack", ID: f.ID})
		case "conversation":
			p.titles[f.Key] = f.Title
		case "conversations":
			p.listed = true
		case "ack":
			p.acks[f.ID] = ""
		case "error":
			if f.ID != "" {
				p.acks[f.ID] = f.Error
			}
		}
		p.mu.Unlock()
	}
}

func (p *page) write(f frame) error {
	b, _ := json.Marshal(f)
	return p.conn.Write(context.Background(), websocket.MessageText, b)
}

// say types text in the conversation at and returns once the chat stored
// it.
func (p *page) say(t testing.TB, at platform.Address, text string) (id string) {
	t.Helper()
	p.mu.Lock()
	p.said++
	id = "s" + strconv.Itoa(p.said)
	p.mu.Unlock()
	p.sayAs(t, at, text, id)
	return id
}

// sayAs says text under the page's id for it.
func (p *page) sayAs(t testing.TB, at platform.Address, text, id string) {
	t.Helper()
	p.mu.Lock()
	delete(p.acks, id)
	p.mu.Unlock()
	if err := p.write(frame{Type: "say", Key: at.Key(), Text: text, ID: id}); err != nil {
		t.Fatalf("say %q: %v", text, err)
	}
	var why string
	testutil.Eventually(t, testutil.Patience, func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		var ok bool
		why, ok = p.acks[id]
		return ok
	}, "the web chat to store "+text)
	if why != "" {
		t.Fatalf("the web chat refused %q: %s", text, why)
	}
}

// Shown is every message the page was sent, in order.
func (p *page) Shown() []Shown {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Shown(nil), p.shown...)
}

func (p *page) title(key string) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.titles[key]
}

func (p *page) waitShown(t testing.TB, what string, match func(Shown) bool) {
	t.Helper()
	waitShown(t, what, p.Shown, match)
}
