package gateway_test

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/http/cookiejar"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/baton-agent/baton/internal/agent"
	"github.com/baton-agent/baton/internal/config"
	"github.com/baton-agent/baton/internal/gateway"
	"github.com/baton-agent/baton/internal/gateway/control"
	"github.com/baton-agent/baton/internal/llm/llmtest"
	"github.com/baton-agent/baton/internal/llm/provider"
	"github.com/baton-agent/baton/internal/note"
	"github.com/baton-agent/baton/internal/platform"
	"github.com/baton-agent/baton/internal/platform/all"
	"github.com/baton-agent/baton/internal/platform/telegram"
	"github.com/baton-agent/baton/internal/platform/telegram/telegramtest"
	"github.com/baton-agent/baton/internal/platform/web"
	"github.com/baton-agent/baton/internal/retry"
	"github.com/baton-agent/baton/internal/store"
	"github.com/baton-agent/baton/internal/store/postgres"
	"github.com/baton-agent/baton/internal/store/sqlite"
	"github.com/baton-agent/baton/internal/testutil"
	"github.com/baton-agent/baton/internal/voice"
)

const token = "0123456789abcdef0123456789abcdef"

// rig is a running gateway with the web chat, a real SQLite file and a
// fake model server.
type rig struct {
	home   string
	st     store.Store
	model  *llmtest.Server
	web    *web.Adapter
	gw     *gateway.Gateway
	client *control.Client
	owner  store.User
	logs   *testutil.SyncBuffer // the gateway's log
	stop   func()
	halt   func() // begins the stop without waiting for it (stop waits)
}

type rigOpts struct {
	// storeURL puts the store on this Postgres database instead of a
	// SQLite file; pollEvery replaces the rig's quick fallback poll.
	storeURL  string
	pollEvery time.Duration
	beforeRun func(st store.Store, owner store.User)
	homes     map[string]string
	extra     []platform.Adapter
	owners    map[string][]string
	lease     time.Duration
	grace     time.Duration
	script    []llmtest.Step                     // queued on the model before the gateway starts
	answer    func(llmtest.Request) llmtest.Step // the model's answer once the script is spent; nil: an echo
	tools     *agent.Registry
	// toolsWith builds the tools with the rig's store (send_file keeps
	// files there); it replaces tools.
	toolsWith func(st store.Store) *agent.Registry
	allow     []string // the agent's allowlist
	// maxSessionFiles is Config.MaxSessionFiles; 0: the default.
	maxSessionFiles int64
	// transcribe hears voice notes, and speaks answers, through the rig's
	// model server.
	transcribe bool
	spoken     []string // Config.Spoken
	approval   time.Duration
	// wrapStore, when set, gives the gateway and its agent this store in
	// place of the real one (to inject failures); the rig's own reads
	// use the real one.
	wrapStore func(store.Store) store.Store
	personal  []string          // platforms on the owner's own account
	display   map[string]string // more platforms' names as people read them
	rate      gateway.Rate
	// with builds adapters that need the rig's store (a platform's
	// memory); they join extra.
	with func(st store.Store) []platform.Adapter
	// again runs the new gateway on an earlier rig's BATON_HOME, store and
	// owner: a restart.
	again *rig
	// restart and resend, when set, replace the rig's quick Restart and
	// Resend policies.
	restart, resend retry.Policy
	// anthropic has the agent speak Anthropic's protocol to the fake
	// model (which goes on from a kept answer) instead of OpenAI's.
	anthropic bool
	// quiet logs warnings and errors only (benchmarks: a debug line per
	// message would be what is measured).
	quiet bool
}

// rigNote is the handoff note the rig's model writes; the script is left
// to the conversation.
const rigNote = `{"task": "Plan the trip", "progress": "Train picked.", "context": {"files": [], "commands": [], "values": ["train: 9:40"]}, "next_steps": ["Book it"], "open_questions": []}`

func isNoteRequest(r llmtest.Request) bool { return strings.HasPrefix(r.LastUserText(), note.Lead) }

func newRig(t testing.TB, o rigOpts) *rig {
	t.Helper()
	home := t.TempDir()
	if o.again != nil {
		home = o.again.home
	}
	var st store.Store
	var err error
	if o.storeURL != "" {
		st, err = postgres.Open(context.Background(), o.storeURL)
	} else {
		st, err = sqlite.Open(context.Background(), filepath.Join(home, "state.db"))
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	model := llmtest.Start(t)
	model.SetDefault(o.answer)
	model.Aside(isNoteRequest, func(llmtest.Request) llmtest.Step { return llmtest.Reply{Text: rigNote} })
	model.Push(o.script...)
	mc := config.ModelConfig{Provider: config.ProviderOpenAI, BaseURL: model.URL, APIKey: "k", Name: "m"}
	if o.anthropic {
		mc.Provider = config.ProviderAnthropic
	}
	p, err := provider.New(mc, provider.Options{NoRetry: true})
	if err != nil {
		t.Fatal(err)
	}
	var owner store.User
	if o.again != nil {
		owner = o.again.owner
	} else if owner, err = st.CreateUser(context.Background(), "owner"); err != nil {
		t.Fatal(err)
	}
	w, err := web.New(web.Config{Listen: "127.0.0.1:0", Token: token, Transcripts: gateway.Transcripts{Store: st, OwnerID: owner.ID}})
	if err != nil {
		t.Fatal(err)
	}
	homes := o.homes
	if homes == nil {
		homes = map[string]string{"web": web.Home.Key()}
	}
	sock := filepath.Join(home, control.SocketName)
	// The gateway's log is shown only when the test fails.
	logs := &testutil.SyncBuffer{}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("gateway log:\n%s", logs.String())
		}
	})
	gst := store.Store(st)
	if o.wrapStore != nil {
		gst = o.wrapStore(st)
	}
	if o.toolsWith != nil {
		o.tools = o.toolsWith(gst)
	}
	var hears gateway.Transcriber
	var speaks gateway.Speaker
	if o.transcribe {
		tr, err := voice.New(voice.Config{BaseURL: model.URL + "/v1"})
		if err != nil {
			t.Fatal(err)
		}
		sp, err := voice.NewSpeaker(voice.SpeechConfig{BaseURL: model.URL + "/v1"})
		if err != nil {
			t.Fatal(err)
		}
		hears, speaks = tr, sp
	}
	gw, err := gateway.New(gateway.Config{
		Store:             gst,
		Agent:             &agent.Agent{Provider: p, Store: gst, Model: "m", Tools: o.tools, Allow: o.allow, Turns: &agent.TurnLocks{Dir: filepath.Join(home, "locks")}},
		ApprovalTimeout:   o.approval,
		Adapters:          append(append([]platform.Adapter{w}, o.extra...), with(o.with, st)...),
		OwnerID:           owner.ID,
		Owners:            o.owners,
		TrustedPlatforms:  []string{"web"},
		PersonalPlatforms: o.personal,
		Rate:              o.rate,
		MaxSessionFiles:   o.maxSessionFiles,
		Transcriber:       hears,
		Speaker:           speaks,
		Spoken:            o.spoken,
		Display:           displays(o.display),
		Places:            all.Names(),
		Homes:             homes,
		Socket:            sock,
		Lease:             o.lease,
		PollEvery:         cmp.Or(o.pollEvery, 100*time.Millisecond),
		ShutdownGrace:     cmp.Or(o.grace, 2*time.Second),
		Log:               slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: logLevel(o.quiet)})),
		// The retry policies keep their shape, made quick.
		Restart:  cmp.Or(o.restart, retry.Policy{First: 10 * time.Millisecond, Max: 50 * time.Millisecond}),
		Send:     retry.Policy{First: 5 * time.Millisecond, Max: 20 * time.Millisecond, Tries: 4},
		Resend:   cmp.Or(o.resend, retry.Policy{First: 20 * time.Millisecond, Max: 100 * time.Millisecond}),
		Rerecord: retry.Policy{First: 20 * time.Millisecond, Max: 100 * time.Millisecond},
	})
	if err != nil {
		t.Fatal(err)
	}
	if o.beforeRun != nil {
		o.beforeRun(st, owner)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- gw.Run(ctx) }()
	r := &rig{home: home, st: st, model: model, web: w, gw: gw, client: control.NewClient(sock), owner: owner, logs: logs, halt: cancel}
	r.stop = func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("gateway Run: %v", err)
		}
	}
	t.Cleanup(func() {
		if ctx.Err() == nil {
			r.stop()
		}
	})
	r.waitLive(t, "web")
	return r
}

// displays names the web chat, Telegram and Matrix, and more.
func displays(more map[string]string) map[string]string {
	d := map[string]string{"web": web.Spec().Display, "telegram": "Telegram", "matrix": "Matrix"}
	maps.Copy(d, more)
	return d
}

func logLevel(quiet bool) slog.Level {
	if quiet {
		return slog.LevelWarn
	}
	return slog.LevelDebug
}

func with(build func(store.Store) []platform.Adapter, st store.Store) []platform.Adapter {
	if build == nil {
		return nil
	}
	return build(st)
}

func (r *rig) waitLive(t testing.TB, name string) {
	t.Helper()
	r.waitPlatform(t, name, "became live", func(p control.Platform) bool { return p.Live })
}

// waitPlatform waits until the gateway reports name in a state cond accepts.
func (r *rig) waitPlatform(t testing.TB, name, what string, cond func(control.Platform) bool) control.Platform {
	t.Helper()
	var last control.Platform
	if !testutil.Poll(testutil.Context(t, 0), func() bool {
		s, err := r.client.Status(context.Background())
		if err != nil {
			return false
		}
		last, _ = s.Platform(name)
		return cond(last)
	}) {
		t.Fatalf("%s never %s; last status %+v", name, what, last)
	}
	return last
}

// terminalSession is a session as the terminal leaves it: three messages.
func (r *rig) terminalSession(t testing.TB) store.Session {
	t.Helper()
	ctx := context.Background()
	s, err := r.st.CreateSession(ctx, store.Session{OwnerID: r.owner.ID, Platform: "cli", Holder: "cli:dm:" + r.owner.ID})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.st.SetTitle(ctx, s.ID, "Trip planning #"+s.ID[:6]); err != nil {
		t.Fatal(err)
	}
	_, err = r.st.AppendMessages(ctx, s.ID,
		store.Message{Role: store.RoleUser, Content: "plan a trip to Lisbon", Platform: "cli"},
		store.Message{Role: store.RoleAssistant, Content: "Lisbon in May is lovely.", Platform: "cli"},
		store.Message{Role: store.RoleUser, Content: "book the 9:40 train", Platform: "cli"},
		store.Message{Role: store.RoleAssistant, Content: "Noted: the 9:40 train.", Platform: "cli"},
	)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// page is a websocket client speaking the web chat's protocol.
type page struct {
	t    testing.TB
	conn *websocket.Conn
	in   chan map[string]any
}

func (r *rig) openPage(t testing.TB) *page {
	t.Helper()
	p := r.dialPage(t)
	// One round trip: once answered, the gateway has the page among those
	// it broadcasts to (the handshake alone does not promise that).
	p.send(map[string]any{"type": "list"})
	p.await("the conversation list", typ("conversations"))
	return p
}

// dialPage connects a page and leaves every frame it gets to read.
func (r *rig) dialPage(t testing.TB) *page {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	h := http.Header{}
	h.Set("Authorization", "Bearer "+token)
	conn, _, err := websocket.Dial(ctx, "ws://"+r.web.Addr()+"/ws", &websocket.DialOptions{HTTPHeader: h})
	if err != nil {
		t.Fatal(err)
	}
	p := &page{t: t, conn: conn, in: make(chan map[string]any, 256)}
	go func() {
		defer close(p.in)
		for {
			_, b, err := conn.Read(context.Background())
			if err != nil {
				return
			}
			var f map[string]any
			if json.Unmarshal(b, &f) != nil {
				continue
			}
			if f["type"] == "message" {
				// As the page does: a message counts as delivered once shown.
				ack, _ := json.Marshal(map[string]any{"type": "ack", "id": f["id"]})
				_ = conn.Write(context.Background(), websocket.MessageText, ack)
			}
			p.in <- f
		}
	}()
	t.Cleanup(func() { conn.Close(websocket.StatusNormalClosure, "") })
	return p
}

func (p *page) send(f map[string]any) {
	p.t.Helper()
	b, _ := json.Marshal(f)
	if err := p.conn.Write(context.Background(), websocket.MessageText, b); err != nil {
		p.t.Fatal(err)
	}
}

// await reads frames until one matches; others are dropped.
func (p *page) await(what string, match func(map[string]any) bool) map[string]any {
	p.t.Helper()
	timeout := time.After(15 * time.Second)
	var skipped []map[string]any
	for {
		select {
		case f, ok := <-p.in:
			if !ok {
				p.t.Fatalf("page closed while waiting for %s", what)
			}
			if match(f) {
				return f
			}
			skipped = append(skipped, f)
		case <-timeout:
			p.t.Fatalf("timed out waiting for %s; frames meanwhile: %v", what, skipped)
		}
	}
}

func typ(t string) func(map[string]any) bool {
	return func(f map[string]any) bool { return f["type"] == t }
}

func TestHandoffToWebAndBack(t *testing.T) {
	r := newRig(t, rigOpts{})
	sess := r.terminalSession(t)
	pg := r.openPage(t)
	ctx := context.Background()

	r.model.Push(llmtest.Reply{Text: "Hello from the web! We were booking the 9:40 train."})
	h, err := r.client.RequestHandoff(ctx, control.HandoffRequest{SessionID: sess.ID, From: "cli", To: "web"})
	if err != nil {
		t.Fatal(err)
	}
	var steps []string
	final, err := r.client.Watch(ctx, h.ID, func(p control.Progress) { steps = append(steps, p.Step) })
	if err != nil {
		t.Fatal(err)
	}
	if final.State != "completed" || !strings.HasPrefix(final.Destination, "web:thread:main:") {
		t.Fatalf("final progress %+v (steps %v)", final, steps)
	}

	// The page is told of the new conversation and gets the agent's reply there.
	conv := pg.await("new conversation", typ("conversation"))
	if conv["key"] != final.Destination || conv["focus"] != true || !strings.HasPrefix(conv["title"].(string), "Trip planning") {
		t.Fatalf("conversation frame %v, want key %s", conv, final.Destination)
	}
	msg := pg.await("handoff reply", typ("message"))
	if msg["key"] != final.Destination || !strings.Contains(msg["text"].(string), "Hello from the web") {
		t.Fatalf("message frame %v", msg)
	}
	// The greeting's request (the note's is written beside it) has the
	// whole transcript, then the handoff message.
	var last llmtest.Request
	for _, req := range r.model.Requests() {
		if !isNoteRequest(req) {
			last = req
		}
	}
	body, _ := json.Marshal(last)
	for _, want := range []string{"plan a trip to Lisbon", "book the 9:40 train", gateway.HandoffLead, "the terminal", "the web chat"} {
		if !strings.Contains(string(body), want) {
			t.Errorf("model request lacks %q", want)
		}
	}

	// Opening the conversation shows every earlier message.
	pg.send(map[string]any{"type": "open", "key": final.Destination})
	hist := pg.await("history", typ("history"))
	lines := hist["lines"].([]any)
	var texts []string
	for _, l := range lines {
		texts = append(texts, l.(map[string]any)["role"].(string)+": "+l.(map[string]any)["text"].(string))
	}
	joined := strings.Join(texts, "\n")
	for _, want := range []string{"user: plan a trip to Lisbon", "assistant: Noted: the 9:40 train.", "assistant: **Handoff note**", "\n\nHello from the web",
		"note: ↪ This conversation was just handed off from the terminal to the web chat\n"} {
		if !strings.Contains(joined+"\n", want) {
			t.Errorf("history lacks %q:\n%s", want, joined)
		}
	}
	if strings.Contains(joined, gateway.HandoffLead) {
		t.Errorf("the page shows the words meant for the model:\n%s", joined)
	}

	// A reply typed in the page continues the same session.
	r.model.Push(llmtest.Reply{Text: "Booked."})
	pg.send(map[string]any{"type": "say", "key": final.Destination, "text": "great, book it", "id": "p1"})
	pg.await("ack", func(f map[string]any) bool { return f["type"] == "ack" && f["id"] == "p1" })
	pg.await("answer", func(f map[string]any) bool { return f["type"] == "message" && f["text"] == "Booked." })
	msgs, err := r.st.Transcript(ctx, sess.ID)
	if err != nil {
		t.Fatal(err)
	}
	lastUser := msgs[len(msgs)-2]
	if lastUser.Content != "great, book it" || lastUser.Platform != "web" || msgs[len(msgs)-1].Content != "Booked." {
		t.Fatalf("transcript tail %+v", msgs[len(msgs)-2:])
	}

	// The same message delivered twice (the page resent it) is answered once.
	pg.send(map[string]any{"type": "say", "key": final.Destination, "text": "great, book it", "id": "p1"})
	pg.await("ack of resend", func(f map[string]any) bool { return f["type"] == "ack" && f["id"] == "p1" })
	after, _ := r.st.Transcript(ctx, sess.ID)
	if len(after) != len(msgs) {
		t.Fatalf("a resent message was stored again: %d → %d rows", len(msgs), len(after))
	}

	// /handoff cli from the page leaves a handoff waiting for the terminal.
	pg.send(map[string]any{"type": "say", "key": final.Destination, "text": "/handoff cli", "id": "p2"})
	back := pg.await("handoff answer", func(f map[string]any) bool {
		return f["type"] == "message" && strings.Contains(f["text"].(string), "terminal")
	})
	if !strings.Contains(back["text"].(string), "baton") {
		t.Errorf("handoff answer does not say how to continue: %v", back["text"])
	}
	waiting, err := r.st.PendingHandoffs(ctx, gateway.TerminalPlatform)
	if err != nil || len(waiting) != 1 || waiting[0].SessionID != sess.ID || waiting[0].FromPlatform != "web" {
		t.Fatalf("waiting handoffs %+v %v", waiting, err)
	}
	// Every delivery was sent and recorded as sent.
	waitAllSent(t, r.st)
}

// waitAllSent waits until the outbox has nothing pending: a send is
// recorded just after the platform took it.
func waitAllSent(t testing.TB, st store.Store) {
	t.Helper()
	testutil.Eventually(t, 0, func() bool {
		pending, err := st.PendingDeliveries(context.Background(), "", 0)
		return err == nil && len(pending) == 0
	}, "every delivery sent")
}

func TestHandoffRefusals(t *testing.T) {
	r := newRig(t, rigOpts{homes: map[string]string{}})
	sess := r.terminalSession(t)
	ctx := context.Background()

	_, err := r.client.RequestHandoff(ctx, control.HandoffRequest{SessionID: sess.ID, From: "cli", To: "telegram"})
	if !errors.Is(err, control.ErrNotLive) || !strings.Contains(err.Error(), "Telegram is not set up in the gateway (set up there: web)") {
		t.Errorf("platform not enabled: %v", err)
	}
	// A name that is no place is told apart from a platform not set up.
	_, err = r.client.RequestHandoff(ctx, control.HandoffRequest{SessionID: sess.ID, From: "cli", To: "nowhere"})
	if err == nil || errors.Is(err, control.ErrNotLive) || !strings.Contains(err.Error(), `unknown place "nowhere": the places are cli (the terminal), web, telegram`) {
		t.Errorf("unknown place: %v", err)
	}
	_, err = r.client.RequestHandoff(ctx, control.HandoffRequest{SessionID: sess.ID, From: "cli", To: "web"})
	if !errors.Is(err, control.ErrNoHome) || !strings.Contains(err.Error(), "/sethome") {
		t.Errorf("no home: %v", err)
	}
	_, err = r.client.RequestHandoff(ctx, control.HandoffRequest{SessionID: "nope", From: "cli", To: "web"})
	if !errors.Is(err, control.ErrUnknownSession) {
		t.Errorf("unknown session: %v", err)
	}
	if st, _ := r.st.HandoffState(ctx, sess.ID); st.State != store.HandoffNone {
		t.Errorf("a refused handoff left state %s", st.State)
	}

	// Once a home is set (/sethome in a chat, stored), the handoff works.
	if err := r.st.SetHomeChannel(ctx, "web", web.Home.Key()); err != nil {
		t.Fatal(err)
	}
	h, err := r.client.RequestHandoff(ctx, control.HandoffRequest{SessionID: sess.ID, From: "cli", To: "web"})
	if err != nil {
		t.Fatal(err)
	}
	if p, err := r.client.Watch(ctx, h.ID, nil); err != nil || p.State != "completed" {
		t.Fatalf("handoff after /sethome: %+v %v", p, err)
	}
	// A second request while none is in flight is fine; two at once are not.
	if _, err := r.st.RequestHandoff(ctx, sess.ID, "cli", "web"); err != nil {
		t.Fatal(err)
	}
	_, err = r.client.RequestHandoff(ctx, control.HandoffRequest{SessionID: sess.ID, From: "cli", To: "web"})
	if !errors.Is(err, control.ErrInFlight) {
		t.Errorf("second handoff in flight: %v", err)
	}
}

// /sethome typed in a chat makes it the platform's home, kept in the
// store, and a handoff there then lands in it.
func TestSetHomeInAChat(t *testing.T) {
	fake := telegramtest.New(t, botToken)
	fake.AddChat(telegramtest.Chat{ID: forum, Type: "supergroup", Title: "baton"})
	r := telegramRig(t, fake, "")
	ctx := context.Background()
	sess := r.terminalSession(t)
	if _, err := r.client.RequestHandoff(ctx, control.HandoffRequest{SessionID: sess.ID, From: "cli", To: "telegram"}); !errors.Is(err, control.ErrNoHome) {
		t.Fatalf("a handoff to Telegram without a home: %v", err)
	}
	fake.PushMessage(forum, 0, ownerUser, "/sethome")
	waitFor(t, "the answer to /sethome", fake.Shown, func(m telegramtest.SentMessage) bool { return strings.Contains(m.Plain, "now land in this chat") })
	homes, err := r.st.HomeChannels(ctx)
	if err != nil || homes["telegram"] != "telegram:group:-100777" {
		t.Fatalf("home after /sethome: %v %v", homes, err)
	}
	r.model.Push(llmtest.Reply{Text: "Hi in the group."})
	h, err := r.client.RequestHandoff(ctx, control.HandoffRequest{SessionID: sess.ID, From: "cli", To: "telegram"})
	if err != nil {
		t.Fatal(err)
	}
	if p, err := r.client.Watch(ctx, h.ID, nil); err != nil || p.State != "completed" {
		t.Fatalf("handoff after /sethome: %+v %v", p, err)
	}
}

func TestNoGateway(t *testing.T) {
	c := control.NewClient(filepath.Join(t.TempDir(), control.SocketName))
	_, err := c.Status(context.Background())
	if !errors.Is(err, control.ErrNoGateway) {
		t.Fatalf("status with no gateway: %v", err)
	}
}

func TestSecondGatewayRefused(t *testing.T) {
	r := newRig(t, rigOpts{})
	st := r.st
	gw, err := gateway.New(gateway.Config{Store: st, Agent: &agent.Agent{Store: st}, OwnerID: r.owner.ID,
		Socket: r.client.Socket, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if err := gw.Run(context.Background()); !errors.Is(err, gateway.ErrAlreadyRunning) {
		t.Fatalf("second gateway on the same socket: %v", err)
	}
	if _, err := r.client.Status(context.Background()); err != nil {
		t.Fatalf("first gateway hurt by the second: %v", err)
	}
}

func TestWebNeedsToken(t *testing.T) {
	r := newRig(t, rigOpts{})
	base := "http://" + r.web.Addr()
	for _, u := range []string{base + "/", base + "/ws", base + "/?token=wrong", base + "/static/app.js"} {
		resp, err := http.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("GET %s = %d, want 401", u, resp.StatusCode)
		}
	}
	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar}
	resp, err := browser.Get(r.web.URL())
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), "app.js") {
		t.Fatalf("GET with token: %d %s", resp.StatusCode, b)
	}
	if strings.Contains(resp.Request.URL.String(), "token") {
		t.Errorf("the token stayed in the address bar: %s", resp.Request.URL)
	}
	// The cookie the page set opens the script too.
	resp, err = browser.Get(base + "/static/app.js")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("app.js with cookie: %d", resp.StatusCode)
	}
}

// A gateway that claimed a handoff and died leaves it running with a
// lease; once the lease ends, a live gateway takes it back and finishes
// it, reusing what the dead one had done and posting the reply once.
func TestExpiredClaimIsRetried(t *testing.T) {
	r := newRig(t, rigOpts{})
	sess := r.terminalSession(t)
	pg := r.openPage(t)
	ctx := context.Background()
	h, err := r.st.RequestHandoff(ctx, sess.ID, "cli", "web")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, err := r.st.ClaimHandoff(ctx, h.ID, "dead-gateway", 300*time.Millisecond); err != nil || !ok {
		t.Fatalf("claim as the dead gateway: %v %v", ok, err)
	}
	// The dead gateway had got as far as storing the synthetic turn's input.
	if _, err := r.st.AppendMessages(ctx, sess.ID, store.Message{Role: store.RoleUser, Kind: store.KindHandoff, Content: gateway.HandoffLead + " handed off", Platform: "web", PlatformMsgID: "handoff:" + itoa(h.ID)}); err != nil {
		t.Fatal(err)
	}
	// And its note: the retry shows it instead of writing another.
	if _, _, err := r.st.AddNote(ctx, store.Note{SessionID: sess.ID, HandoffID: h.ID, Body: `{"task": "Noted by the first attempt", "progress": "p"}`}); err != nil {
		t.Fatal(err)
	}
	r.model.Push(llmtest.Reply{Text: "Back on track after a restart."})
	final, err := r.client.Watch(ctx, h.ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	if final.State != "completed" {
		t.Fatalf("retried handoff ended %+v", final)
	}
	got, _ := r.st.GetHandoff(ctx, h.ID)
	if got.Attempts != 2 || got.ClaimedBy == "dead-gateway" {
		t.Errorf("handoff after retry: attempts %d, claimed by %q", got.Attempts, got.ClaimedBy)
	}
	pg.await("reply", func(f map[string]any) bool {
		text, _ := f["text"].(string)
		return f["type"] == "message" && strings.HasPrefix(text, "**Handoff note**\n**Task:** Noted by the first attempt\n") &&
			strings.HasSuffix(text, "\n\nBack on track after a restart.")
	})
	if notes, err := r.st.SessionNotes(ctx, sess.ID); err != nil || len(notes) != 1 {
		t.Errorf("notes after the retry: %+v, %v; want the first attempt's alone", notes, err)
	}
	msgs, _ := r.st.Transcript(ctx, sess.ID)
	n := 0
	for _, m := range msgs {
		if m.Kind == store.KindHandoff {
			n++
		}
	}
	if n != 1 {
		t.Errorf("the synthetic turn's input is in the transcript %d times, want 1", n)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// waitFor waits until shown (what a fake shows now) has an item match
// accepts, and returns it.
func waitFor[T any](t testing.TB, what string, shown func() []T, match func(T) bool) T {
	t.Helper()
	var found T
	if !testutil.Poll(testutil.Context(t, 0), func() bool {
		for _, it := range shown() {
			if match(it) {
				found = it
				return true
			}
		}
		return false
	}) {
		t.Fatalf("the bot never showed %s; it showed %+v", what, shown())
	}
	return found
}

// The Telegram rig: tests of behaviours the scenario suite does not take
// (the one-holder line, the kit's outage handling) drive the Bot API fake.
const (
	botToken = "123456:test-token"
	ownerTG  = 42
	forum    = -100777
)

var ownerUser = telegramtest.User{ID: ownerTG, FirstName: "Owner"}

// telegramRig is a gateway with the web chat and Telegram on fake, live,
// the owner being Telegram user 42; home is Telegram's home ("" for none),
// and with changes the rig's options further.
func telegramRig(t *testing.T, fake *telegramtest.Server, home string, with ...func(*rigOpts)) *rig {
	t.Helper()
	tg, err := telegram.New(telegram.Config{Token: botToken, ServerURL: fake.URL(), PollTimeout: time.Second,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	o := rigOpts{
		extra:  []platform.Adapter{tg},
		owners: map[string][]string{"telegram": {"42"}},
		homes:  map[string]string{"web": web.Home.Key()},
	}
	if home != "" {
		o.homes["telegram"] = home
	}
	for _, f := range with {
		f(&o)
	}
	r := newRig(t, o)
	r.waitLive(t, "telegram")
	return r
}

// countMatching counts the items match accepts.
func countMatching[T any](items []T, match func(T) bool) int {
	n := 0
	for _, it := range items {
		if match(it) {
			n++
		}
	}
	return n
}

// settled waits until the session's transcript ends with answer and
// returns it: a reply streamed by edits is shown before its turn is
// stored.
func settled(t *testing.T, r *rig, sessionID, answer string) []store.Message {
	t.Helper()
	var msgs []store.Message
	testutil.Eventually(t, testutil.Patience, func() bool {
		msgs, _ = r.st.Transcript(context.Background(), sessionID)
		return len(msgs) > 0 && msgs[len(msgs)-1].Content == answer
	}, "the transcript to end with "+answer)
	return msgs
}
