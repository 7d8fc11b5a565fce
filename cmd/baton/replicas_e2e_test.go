package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/baton-agent/baton/internal/gateway"
	"github.com/baton-agent/baton/internal/gateway/control"
	"github.com/baton-agent/baton/internal/llm/llmtest"
	"github.com/baton-agent/baton/internal/note"
	"github.com/baton-agent/baton/internal/platform/telegram/telegramtest"
	"github.com/baton-agent/baton/internal/store"
	"github.com/baton-agent/baton/internal/store/postgres"
	"github.com/baton-agent/baton/internal/store/postgres/pgtest"
	"github.com/baton-agent/baton/internal/testutil"
)

// replicaLease is the lease of the replicas under test: short, so a dead
// leader's platform is taken over soon. Nothing asserts how soon.
const replicaLease = 2 * time.Second

// replicaForum is the Telegram forum that is the rig's home.
const replicaForum = -100999

// replicaRig is several `baton gateway` processes, each with its own
// BATON_HOME (no file shared), on one Postgres database, with the
// Telegram fake and each its own web chat.
type replicaRig struct {
	fake  *telegramtest.Server
	srv   *llmtest.Server
	st    *postgres.Store
	url   string
	users int // Telegram owners 1..users, each a private chat
	procs []*replicaProc

	// The model holds its answer to a message starting with holdPrefix
	// until release is closed; held counts those waiting.
	holdPrefix atomic.Value // string
	release    chan struct{}
	held       atomic.Int64
}

// replicaProc is one replica: its process, home and control client.
type replicaProc struct {
	gw        *gatewayProc
	home      string
	batonHome string
	c         *control.Client
}

// newReplicaRig makes the database, the fakes and the model; start runs
// the replicas.
func newReplicaRig(t testing.TB, users int) *replicaRig {
	t.Helper()
	dbURL := pgtest.NewDatabase(t)
	if n := os.Getenv("BATON_BENCH_PG_POOL"); n != "" {
		// Connections per replica (pgx's pool_max_conns; its default is
		// max(4, cores)).
		sep := "?"
		if strings.Contains(dbURL, "?") {
			sep = "&"
		}
		dbURL += sep + "pool_max_conns=" + n
	}
	fake := telegramtest.New(t, "4242:replicas")
	fake.AddChat(telegramtest.Chat{ID: replicaForum, Type: telegramtest.Supergroup, Title: "baton", IsForum: true})
	srv := llmtest.Start(t)
	srv.Aside(func(r llmtest.Request) bool { return strings.HasPrefix(r.LastUserText(), note.Lead) },
		func(llmtest.Request) llmtest.Step { return llmtest.Reply{Text: e2eNote} })
	rig := &replicaRig{fake: fake, srv: srv, url: dbURL, users: users, release: make(chan struct{})}
	rig.holdPrefix.Store("\x00") // nothing, until a test holds
	srv.SetDefault(func(r llmtest.Request) llmtest.Step {
		if strings.HasPrefix(r.LastUserText(), gateway.HandoffLead) {
			return llmtest.Reply{Text: "Picked up here."}
		}
		if strings.HasPrefix(r.LastUserText(), rig.holdPrefix.Load().(string)) {
			rig.held.Add(1)
			return llmtest.Reply{Text: "echo: " + r.LastUserText(), Wait: rig.release}
		}
		return llmtest.EchoReply(r)
	})
	t.Cleanup(func() {
		select {
		case <-rig.release:
		default:
			close(rig.release)
		}
	})
	st, err := postgres.Open(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	rig.st = st
	return rig
}

// start runs one more replica and waits until its web chat is live.
func (r *replicaRig) start(t testing.TB) *replicaProc {
	t.Helper()
	home := t.TempDir()
	batonHome := filepath.Join(home, "baton")
	owners := make([]string, r.users)
	for i := range owners {
		owners[i] = fmt.Sprintf("%q", fmt.Sprint(i+1))
	}
	writeConfig(t, batonHome, fmt.Sprintf("store: %q\nweb:\n  listen: 127.0.0.1:0\ntelegram:\n  token: %q\n  server_url: %q\n"+
		"gateway:\n  owners:\n    telegram: [%s]\n  homes:\n    telegram: \"telegram:group:%d\"\n  handoff_lease: %s\n  continue_offer: -1s\n  rate:\n    burst: 100000\n    every: 1ms\n",
		r.url, r.fake.Token(), r.fake.URL(), strings.Join(owners, ", "), replicaForum, replicaLease))
	p := &replicaProc{home: home, batonHome: batonHome, c: control.NewClient(control.SocketPath(batonHome))}
	p.gw = startGateway(t, cleanEnv(home, modelEnv(r.srv)...), batonHome)
	r.procs = append(r.procs, p)
	return p
}

// status is what a replica says on its control socket.
func (p *replicaProc) status(t testing.TB) control.Status {
	t.Helper()
	s, err := p.c.Status(context.Background())
	if err != nil {
		t.Fatalf("status: %v\n%s", err, p.gw.Log())
	}
	return s
}

// leader is the replica id leading Telegram as p sees the store, or "".
func (p *replicaProc) leader() string {
	s, err := p.c.Status(context.Background())
	if err != nil {
		return ""
	}
	for _, r := range s.Replicas {
		for _, l := range r.Leads {
			if l == "telegram" {
				return r.ID
			}
		}
	}
	return ""
}

// self is p's replica id.
func (p *replicaProc) self(t testing.TB) string {
	t.Helper()
	for _, r := range p.status(t).Replicas {
		if r.Self {
			return r.ID
		}
	}
	t.Fatalf("replica lists not itself: %+v", p.status(t))
	return ""
}

// webPage is a tab of one replica's web chat, speaking its websocket
// protocol: it acknowledges what it is shown, and keeps it.
type webPage struct {
	conn   *websocket.Conn
	prefix string // of the ids of what it says
	mu     sync.Mutex
	said   int
	// acks get what the chat answered to each id said: "" when stored.
	acks map[string]chan string
	// shown counts each (conversation, text) the page was sent.
	shown  map[string]int
	cond   *sync.Cond
	closed bool
	n      int // messages shown
}

func openWebPage(t testing.TB, pageURL string) *webPage {
	t.Helper()
	u, err := url.Parse(pageURL)
	if err != nil {
		t.Fatal(err)
	}
	h := http.Header{}
	h.Set("Authorization", "Bearer "+u.Query().Get("token"))
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	conn, _, err := websocket.Dial(ctx, "ws://"+u.Host+"/ws", &websocket.DialOptions{HTTPHeader: h})
	if err != nil {
		t.Fatalf("open the web chat: %v", err)
	}
	conn.SetReadLimit(-1)
	// Ids unique to the page, as a real page's are: the chat takes a
	// repeated id for a message said again.
	p := &webPage{conn: conn, prefix: fmt.Sprintf("p%x-", rand.Uint64()), acks: map[string]chan string{}, shown: map[string]int{}}
	p.cond = sync.NewCond(&p.mu)
	go p.read()
	t.Cleanup(func() { conn.Close(websocket.StatusNormalClosure, "") })
	return p
}

type webFrame struct {
	Type  string `json:"type"`
	Key   string `json:"key,omitempty"`
	ID    string `json:"id,omitempty"`
	Text  string `json:"text,omitempty"`
	Role  string `json:"role,omitempty"`
	Error string `json:"error,omitempty"`
}

func (p *webPage) read() {
	for {
		_, b, err := p.conn.Read(context.Background())
		if err != nil {
			p.mu.Lock()
			p.closed = true
			p.cond.Broadcast()
			p.mu.Unlock()
			return
		}
		var f webFrame
		if json.Unmarshal(b, &f) != nil {
			continue
		}
		p.mu.Lock()
		switch f.Type {
		case "message":
			p.shown[f.Key+"\x00"+f.Text]++
			p.n++
			p.write(webFrame{Type: "ack", ID: f.ID})
		case "ack", "error":
			if ch, ok := p.acks[f.ID]; ok {
				ch <- f.Error
				delete(p.acks, f.ID)
			}
		}
		p.cond.Broadcast()
		p.mu.Unlock()
	}
}

func (p *webPage) write(f webFrame) error {
	b, _ := json.Marshal(f)
	return p.conn.Write(context.Background(), websocket.MessageText, b)
}

// say types text in the conversation key and returns once it is stored.
func (p *webPage) say(t testing.TB, key, text string) {
	p.mu.Lock()
	p.said++
	id := fmt.Sprintf("%s%d", p.prefix, p.said)
	ack := make(chan string, 1)
	p.acks[id] = ack
	p.mu.Unlock()
	if err := p.write(webFrame{Type: "say", Key: key, Text: text, ID: id}); err != nil {
		t.Errorf("say %q: %v", text, err)
		return
	}
	select {
	case why := <-ack:
		if why != "" {
			t.Errorf("the web chat did not store %q: %s", text, why)
		}
	case <-time.After(hangGuard):
		t.Errorf("the web chat did not answer %q", text)
	}
}

// total counts the messages shown; under mu.
func (p *webPage) total() int {
	return p.n
}

// count is how often the page was shown text in key.
func (p *webPage) count(key, text string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.shown[key+"\x00"+text]
}

// TestReplicasDoNothingTwice runs three gateways on one Postgres store,
// each with its own home and web chat, sharing one Telegram bot: messages
// arrive on Telegram and on every web chat, the replica reading Telegram
// is SIGKILLed in the middle, and handoffs move web conversations to
// Telegram. Every message is answered once (no turn runs twice, no reply
// is posted twice), none is lost, Telegram is read by one replica at a
// time (the fake answers a second reader 409 Conflict), and another
// replica leads Telegram once the dead one's lease has ended.
//
// BATON_TEST_REPLICAS=full runs it at full size: 3,400 messages (300 to
// Telegram, 2,500 to the web chats, 600 around 300 handoffs), the leader
// killed after the first 1,650. By default it runs small (89 messages,
// 4 handoffs), as CI does.
func TestReplicasDoNothingTwice(t *testing.T) {
	var (
		users      = 6 // Telegram private chats
		tgBefore   = 3 // messages each before the kill
		tgAfter    = 3 // and after it
		webConvs   = 3 // web conversations on each replica
		webPerConv = 3
		handoffs   = 4
	)
	if os.Getenv("BATON_TEST_REPLICAS") == "full" {
		users, tgBefore, tgAfter, webConvs, webPerConv, handoffs = 30, 5, 5, 20, 25, 300
	}
	rig := newReplicaRig(t, users)
	first := rig.start(t)
	firstID := first.self(t)
	// The first replica leads Telegram: nobody else was there to.
	if !testutil.Poll(testutil.Context(t, hangGuard), func() bool { return first.leader() == firstID }) {
		t.Fatalf("the first replica never led Telegram: %+v\n%s", first.status(t), first.gw.Log())
	}
	rig.start(t)
	rig.start(t)
	if n := len(first.status(t).Replicas); n != 3 {
		t.Fatalf("%d replicas listed, want 3: %+v", n, first.status(t).Replicas)
	}
	pages := make([]*webPage, len(rig.procs))
	for i, p := range rig.procs {
		pages[i] = openWebPage(t, p.gw.webURL)
	}

	// Phase one: web messages on every replica, Telegram messages to the
	// first.
	type webMsg struct {
		replica   int
		key, text string
	}
	var webSaid []webMsg
	sayWeb := func(replicas []int, tag string) {
		var wg sync.WaitGroup
		var mu sync.Mutex
		for _, ri := range replicas {
			for c := range webConvs {
				wg.Add(1)
				go func() {
					defer wg.Done()
					key := fmt.Sprintf("web:dm:r%dc%d", ri, c)
					for k := range webPerConv {
						text := fmt.Sprintf("w-%s-r%d-c%d-%d", tag, ri, c, k)
						pages[ri].say(t, key, text)
						mu.Lock()
						webSaid = append(webSaid, webMsg{ri, key, text})
						mu.Unlock()
					}
				}()
			}
		}
		wg.Wait()
	}
	owner := func(u int) telegramtest.User {
		return telegramtest.User{ID: int64(u), FirstName: fmt.Sprint("Owner", u)}
	}
	var tgSaid []string
	pushTelegram := func(tag string, n int) {
		for k := range n {
			for u := 1; u <= users; u++ {
				text := fmt.Sprintf("t-%s-u%d-%d", tag, u, k)
				rig.fake.PushMessage(int64(u), 0, owner(u), text)
				tgSaid = append(tgSaid, fmt.Sprintf("%d\x00%s", u, text))
			}
		}
	}
	pushTelegram("a", tgBefore)
	sayWeb([]int{0, 1, 2}, "a")
	// Every answer on the first replica's page is shown before it dies:
	// a page on a dead replica has nobody to show it anything.
	waitWeb := func(msgs []webMsg) {
		for _, m := range msgs {
			want := "echo: " + m.text
			if !testutil.Poll(testutil.Context(t, hangGuard), func() bool { return pages[m.replica].count(m.key, want) > 0 }) {
				in, _ := rig.st.PendingInbound(context.Background(), 0, 0)
				ds, _ := rig.st.PendingDeliveries(context.Background(), "", 0)
				pages[m.replica].mu.Lock()
				shown := fmt.Sprint(pages[m.replica].shown)
				pages[m.replica].mu.Unlock()
				t.Fatalf("the web chat of replica %d never showed %q:\n%s\npending in %+v\npending out %+v\nshown %s", m.replica, want, rig.logs(), in, ds, shown)
			}
		}
	}
	waitWeb(webSaid)
	// Every Telegram answer so far sent: a reply the service took in the
	// instant before its sender died, before the store heard of it, would
	// be sent again by the replica taking over (at least once; Telegram
	// cannot tell a repeat).
	replied := func() map[string]int {
		out := map[string]int{}
		for _, m := range rig.fake.Sent() {
			if m.Method == "sendMessage" {
				out[m.ChatID+"\x00"+m.Plain]++
			}
		}
		return out
	}
	answered := func(said []string) bool {
		got := replied()
		for _, s := range said {
			u, text, _ := strings.Cut(s, "\x00")
			if got[u+"\x00echo: "+text] == 0 {
				return false
			}
		}
		return true
	}
	if !testutil.Poll(testutil.Context(t, hangGuard), func() bool { return answered(tgSaid) }) {
		t.Fatalf("the first Telegram messages were not all answered:\n%s", rig.logs())
	}

	// The kill, with a turn running in every Telegram chat (the model
	// holds their answers) and more messages waiting behind them.
	rig.holdPrefix.Store("t-b-")
	pushTelegram("b", tgAfter)
	if !testutil.Poll(testutil.Context(t, hangGuard), func() bool { return rig.held.Load() >= int64(users) }) {
		t.Fatalf("%d of %d turns reached the model:\n%s", rig.held.Load(), users, rig.logs())
	}
	var deadLease store.Lease
	leases, err := rig.st.Leases(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range leases {
		if l.Name == "lead:telegram" {
			deadLease = l
		}
	}
	if deadLease.Holder != firstID {
		t.Fatalf("telegram led by %q before the kill, want %q", deadLease.Holder, firstID)
	}
	killed := time.Now()
	first.gw.kill()
	close(rig.release)

	// Phase two: the survivors' web chats, and handoffs from them.
	before := len(webSaid)
	sayWeb([]int{1, 2}, "b")
	waitWeb(webSaid[before:])

	survivor := rig.procs[1]
	var newLeader string
	if !testutil.Poll(testutil.Context(t, hangGuard), func() bool {
		newLeader = survivor.leader()
		if newLeader == "" || newLeader == firstID {
			return false
		}
		// And reading it: it takes handoffs there from then on.
		for _, p := range rig.procs[1:] {
			if s, err := p.c.Status(context.Background()); err == nil {
				if tg, ok := s.Platform("telegram"); ok && tg.Live {
					return true
				}
			}
		}
		return false
	}) {
		t.Fatalf("no replica took the lead of Telegram: %+v", survivor.status(t))
	}
	var taken store.Lease
	leases, _ = rig.st.Leases(t.Context())
	for _, l := range leases {
		if l.Name == "lead:telegram" {
			taken = l
		}
	}
	if taken.Since.Before(deadLease.Until) {
		t.Errorf("Telegram taken by %s at %v, before the dead leader's lease ended at %v", taken.Holder, taken.Since, deadLease.Until)
	}
	t.Logf("Telegram led again %v after the kill (lease %v)", taken.Since.Sub(killed).Round(time.Millisecond), replicaLease)

	for h := range handoffs {
		ri := 1 + h%2
		key := fmt.Sprintf("web:dm:h%d", h)
		pages[ri].say(t, key, fmt.Sprintf("before handoff %d", h))
		waitWeb([]webMsg{{ri, key, fmt.Sprintf("before handoff %d", h)}})
		pages[ri].say(t, key, "/handoff telegram")
	}
	for h := range handoffs {
		key := fmt.Sprintf("web:dm:h%d", h)
		if !testutil.Poll(testutil.Context(t, hangGuard), func() bool {
			s, err := rig.st.BoundSession(t.Context(), key)
			if err != nil {
				return false
			}
			hf, err := rig.st.HandoffState(t.Context(), s.ID)
			return err == nil && hf.State.Terminal()
		}) {
			pages[1+h%2].mu.Lock()
			shown := fmt.Sprint(pages[1+h%2].shown)
			pages[1+h%2].mu.Unlock()
			t.Fatalf("the handoff from %s never ended; shown %s\n%s", key, shown, rig.logs())
		}
	}

	// Every Telegram message answered once, in its chat.
	if !testutil.Poll(testutil.Context(t, hangGuard), func() bool { return answered(tgSaid) }) {
		got := replied()
		var missing []string
		for _, s := range tgSaid {
			u, text, _ := strings.Cut(s, "\x00")
			if got[u+"\x00echo: "+text] == 0 {
				missing = append(missing, u+":"+text)
			}
		}
		in, _ := rig.st.PendingInbound(context.Background(), 0, 0)
		ds, _ := rig.st.PendingDeliveries(context.Background(), "", 0)
		var calls strings.Builder
		_ = rig.fake.WriteLog(&calls)
		t.Fatalf("not every Telegram message was answered: %q\npending in %+v\npending out %+v\nsent %v\n%s\ncalls:\n%s", missing, in, ds, got, rig.logs(), calls.String())
	}

	// Nothing twice, nothing lost.
	got := replied()
	for _, s := range tgSaid {
		u, text, _ := strings.Cut(s, "\x00")
		if n := got[u+"\x00echo: "+text]; n != 1 {
			t.Errorf("Telegram chat %s answered %q %d times", u, text, n)
		}
	}
	for _, m := range webSaid {
		if n := pages[m.replica].count(m.key, "echo: "+m.text); n != 1 {
			t.Errorf("web chat of replica %d showed the answer to %q %d times", m.replica, m.text, n)
		}
	}
	topics := rig.fake.Topics()
	if len(topics) != handoffs {
		t.Errorf("%d forum topics opened for %d handoffs: %+v", len(topics), handoffs, topics)
	}
	greetings := map[int]int{}
	for _, m := range rig.fake.Sent() {
		if m.ChatID == fmt.Sprint(replicaForum) && m.Method == "sendMessage" {
			greetings[m.ThreadID]++
		}
	}
	for _, tp := range topics {
		if greetings[tp.ThreadID] != 1 {
			t.Errorf("topic %d got %d messages, want its one greeting", tp.ThreadID, greetings[tp.ThreadID])
		}
	}
	for h := range handoffs {
		s, err := rig.st.BoundSession(t.Context(), fmt.Sprintf("web:dm:h%d", h))
		if err != nil {
			t.Fatal(err)
		}
		if hf, _ := rig.st.HandoffState(t.Context(), s.ID); hf.State != store.HandoffCompleted {
			t.Errorf("handoff of %s: %s %s", s.ID, hf.State, hf.Error)
		}
	}
	// Each message ran one turn: its text is stored once.
	var keys []string
	for _, m := range webSaid {
		keys = append(keys, m.key)
	}
	userTexts := rig.userTexts(t, keys)
	for _, s := range tgSaid {
		_, text, _ := strings.Cut(s, "\x00")
		if userTexts[text] != 1 {
			t.Errorf("%q stored %d times in its session", text, userTexts[text])
		}
	}
	for _, m := range webSaid {
		if userTexts[m.text] != 1 {
			t.Errorf("%q stored %d times in its session", m.text, userTexts[m.text])
		}
	}
	if !testutil.Poll(testutil.Context(t, hangGuard), func() bool {
		pending, err := rig.st.PendingInbound(t.Context(), 0, 0)
		return err == nil && len(pending) == 0
	}) {
		pending, _ := rig.st.PendingInbound(t.Context(), 0, 0)
		t.Errorf("inbound events left pending: %+v", pending)
	}
	for _, c := range rig.fake.Calls() {
		if c.Method == "getUpdates" && c.Status == 409 {
			t.Errorf("two replicas read Telegram at once: getUpdates answered 409 at %v", c.Start)
		}
	}

	// baton gateway status on a survivor names every replica and the
	// leader.
	out, errOut, err := runBaton(t, cleanEnv(survivor.home), survivor.home, "gateway", "status")
	if err != nil {
		t.Fatalf("gateway status: %v\n%s%s", err, out, errOut)
	}
	if !strings.Contains(out, "Replicas sharing the store: 3") || !strings.Contains(out, newLeader) || !strings.Contains(out, "leads telegram") {
		t.Errorf("gateway status:\n%s", out)
	}
	t.Logf("gateway status:\n%s", out)
	t.Logf("%d messages (%d to Telegram, %d to the web chats, %d around handoffs), %d handoffs: each answered once, none lost",
		len(tgSaid)+len(webSaid)+2*handoffs, len(tgSaid), len(webSaid), 2*handoffs, handoffs)
}

// userTexts counts each person's message stored in the sessions bound to
// the rig's Telegram chats and to keys (a key named twice counted once).
func (r *replicaRig) userTexts(tb testing.TB, keys []string) map[string]int {
	tb.Helper()
	for u := 1; u <= r.users; u++ {
		keys = append(keys, fmt.Sprintf("telegram:dm:%d", u))
	}
	out := map[string]int{}
	seen := map[string]bool{}
	for _, k := range keys {
		if seen[k] {
			continue
		}
		seen[k] = true
		s, err := r.st.BoundSession(context.Background(), k)
		if err != nil {
			tb.Fatalf("session at %s: %v", k, err)
		}
		msgs, err := r.st.Transcript(context.Background(), s.ID)
		if err != nil {
			tb.Fatal(err)
		}
		for _, m := range msgs {
			if m.Role == store.RoleUser {
				out[m.Content]++
			}
		}
	}
	return out
}

// logs is every replica's log, for a failure.
func (r *replicaRig) logs() string {
	var b strings.Builder
	for i, p := range r.procs {
		fmt.Fprintf(&b, "--- replica %d\n%s", i, p.gw.Log())
	}
	return b.String()
}
