package gateway_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/gateway/control"
	"github.com/baton-agent/baton/internal/llm/llmtest"
	"github.com/baton-agent/baton/internal/platform"
	"github.com/baton-agent/baton/internal/platform/telegram"
	"github.com/baton-agent/baton/internal/platform/telegram/telegramtest"
	"github.com/baton-agent/baton/internal/platform/web"
	"github.com/baton-agent/baton/internal/retry"
	"github.com/baton-agent/baton/internal/testutil"
)

// outage stands between the adapter and its fake service: while down it
// answers every request as a broken proxy does, with a 502 HTML page.
type outage struct {
	down atomic.Bool
	hits atomic.Int64 // requests answered while down
	srv  *httptest.Server
}

func newOutage(t *testing.T, target string) *outage {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	o := &outage{}
	proxy := httputil.NewSingleHostReverseProxy(u)
	o.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if o.down.Load() {
			o.hits.Add(1)
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(http.StatusBadGateway)
			io.WriteString(w, "<html>\n<head><title>502 Bad Gateway</title></head>\n<body>\n<center><h1>502 Bad Gateway</h1></center>\n<hr><center>nginx</center>\n</body>\n</html>\n")
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(o.srv.Close)
	return o
}

// telegramVia is a rig whose Telegram adapter reaches fake through url.
func telegramVia(t *testing.T, serverURL, home string) *rig {
	t.Helper()
	tg, err := telegram.New(telegram.Config{Token: botToken, ServerURL: serverURL, PollTimeout: time.Second,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	return newRig(t, rigOpts{
		extra:  []platform.Adapter{tg},
		owners: map[string][]string{"telegram": {"42"}},
		homes:  map[string]string{"web": web.Home.Key(), "telegram": home},
	})
}

// A Bot API unreachable at start for longer than any start-up retry:
// Telegram shows as down with a one-line reason, refuses handoffs with it,
// then becomes live by itself once the server answers, and a handoff to it
// succeeds.
func TestTelegramDownAtStartComesUpByItself(t *testing.T) {
	fake := telegramtest.New(t, botToken)
	fake.AddChat(telegramtest.Chat{ID: forum, Type: "supergroup", Title: "baton", IsForum: true})
	cut := newOutage(t, fake.URL())
	cut.down.Store(true)
	r := telegramVia(t, cut.srv.URL, "telegram:group:-100777")

	down := r.waitPlatform(t, "telegram", "went down", func(p control.Platform) bool {
		return p.State == "down" && cut.hits.Load() >= 8 // well past any series of start-up tries
	})
	if down.Live || strings.Contains(down.Error, "<") || strings.Contains(down.Error, "\n") || len(down.Error) > 200 {
		t.Errorf("down status = %+v; want not live, a one-line reason without HTML", down)
	}
	if !strings.Contains(down.Error, "502") || down.NextTry.IsZero() {
		t.Errorf("down status %+v should say 502 and when it tries next", down)
	}
	sess := r.terminalSession(t)
	ctx := context.Background()
	_, err := r.client.RequestHandoff(ctx, control.HandoffRequest{SessionID: sess.ID, From: "cli", To: "telegram"})
	// Refused with why: down, or (if its next try began meanwhile) still
	// connecting.
	if err == nil || !strings.Contains(err.Error(), "Telegram is down") && !strings.Contains(err.Error(), "Telegram is still connecting") {
		t.Fatalf("handoff to a down Telegram: %v; want a refusal saying it is down", err)
	}

	cut.down.Store(false)
	r.waitPlatform(t, "telegram", "came back", func(p control.Platform) bool { return p.Live && p.Error == "" })
	r.model.Push(llmtest.Reply{Text: "Back on Telegram."})
	h, err := r.client.RequestHandoff(ctx, control.HandoffRequest{SessionID: sess.ID, From: "cli", To: "telegram"})
	if err != nil {
		t.Fatal(err)
	}
	final, err := r.client.Watch(ctx, h.ID, nil)
	if err != nil || final.State != "completed" {
		t.Fatalf("handoff after the outage: %+v %v", final, err)
	}
	waitFor(t, "the greeting", fake.Shown, func(m telegramtest.SentMessage) bool { return strings.Contains(m.Plain, "Back on Telegram.") })
}

// A refused token is said plainly and not retried.
func TestTelegramRefusedTokenIsSaidPlainly(t *testing.T) {
	fake := telegramtest.New(t, "999:other-token")
	r := telegramVia(t, fake.URL(), "telegram:dm:42")
	p := r.waitPlatform(t, "telegram", "was refused", func(p control.Platform) bool { return p.State == "refused" })
	if p.Error != "Telegram refused the bot token (401 Unauthorized)" {
		t.Errorf("reason = %q", p.Error)
	}
	time.Sleep(100 * time.Millisecond) // several restart intervals
	if n := len(fake.Calls()); n != 1 {
		t.Errorf("%d calls after a refusal, want the one getMe", n)
	}
}

// A server that refuses createForumTopic — with the Bot API's 404, or
// with a web server's HTML error page in front of it: the handoff lands in
// the home chat after exactly one createForumTopic call, and the next
// handoff does not ask again.
func TestTelegramTopicsRefusedFallBackAtOnce(t *testing.T) {
	for name, refuse := range map[string]func(*telegramtest.Server){
		"bot api 404": func(f *telegramtest.Server) { f.Unsupported("createForumTopic") },
		"html 404":    func(f *telegramtest.Server) { f.ErrorPage(404, "createForumTopic") },
		"html 405":    func(f *telegramtest.Server) { f.ErrorPage(405, "createForumTopic") },
		"html 501":    func(f *telegramtest.Server) { f.ErrorPage(501, "createForumTopic") },
	} {
		t.Run(name, func(t *testing.T) {
			fake := telegramtest.New(t, botToken)
			fake.AddChat(telegramtest.Chat{ID: forum, Type: "supergroup", Title: "baton", IsForum: true})
			refuse(fake)
			r := telegramRig(t, fake, "telegram:group:-100777")
			ctx := context.Background()
			for i, text := range []string{"Hello in the group.", "Hello again."} {
				sess := r.terminalSession(t)
				r.model.Push(llmtest.Reply{Text: text})
				h, err := r.client.RequestHandoff(ctx, control.HandoffRequest{SessionID: sess.ID, From: "cli", To: "telegram"})
				if err != nil {
					t.Fatal(err)
				}
				final, err := r.client.Watch(ctx, h.ID, nil)
				if err != nil || final.State != "completed" || final.Destination != "telegram:group:-100777" {
					t.Fatalf("handoff %d: %+v %v; want completed in the home chat", i, final, err)
				}
				waitFor(t, "the greeting", fake.Shown, func(m telegramtest.SentMessage) bool {
					return m.ChatID == "-100777" && m.ThreadID == 0 && strings.Contains(m.Plain, text)
				})
				if n := fake.CallCount("createForumTopic"); n != 1 {
					t.Errorf("after handoff %d createForumTopic was called %d times, want 1", i, n)
				}
			}
		})
	}
}

// Sends fail for longer than a whole retry series, then recover: the reply
// arrives without any new inbound message, once.
func TestRepliesAreResentAfterAnOutage(t *testing.T) {
	fake := telegramtest.New(t, botToken)
	r := telegramRig(t, fake, "telegram:dm:42")
	for range 12 { // three series' worth
		fake.FailNext("sendMessage", 502, 0)
	}
	r.model.Push(llmtest.Reply{Text: "This waited out the outage."})
	fake.PushMessage(ownerTG, 0, ownerUser, "are you there?")
	match := func(m telegramtest.SentMessage) bool { return strings.Contains(m.Plain, "This waited out the outage.") }
	waitFor(t, "the reply after the outage", fake.Shown, match)
	// Once nothing is left unsent no resend is running, so a duplicate
	// would be posted by now.
	waitAllSent(t, r.st)
	if n := countMatching(fake.Shown(), match); n != 1 {
		t.Errorf("the reply was posted %d times, want 1", n)
	}
	if n := fake.CallCount("sendMessage"); n < 13 {
		t.Errorf("sendMessage called %d times; the outage should have outlasted a series", n)
	}
	if s, _ := r.client.Status(context.Background()); s.Platforms != nil {
		if p, _ := s.Platform("telegram"); p.Waiting != 0 {
			t.Errorf("status says %d replies wait after delivery", p.Waiting)
		}
	}
}

// A reply waits out an outage of the Bot API: its sends failed while the
// service was failing, then the service went away altogether. When it
// comes back the platform is live again at the next cheap probe, not at
// its next restart (an hour away here), and the waiting reply goes out at
// once, not at its own next resend (an hour away too).
func TestWaitingReplyGoesOutWhenTelegramIsBack(t *testing.T) {
	fake := telegramtest.New(t, botToken)
	r := telegramRig(t, fake, "telegram:dm:42", func(o *rigOpts) {
		o.restart = retry.Policy{First: time.Hour, Max: time.Hour}
		o.resend = retry.Policy{First: time.Hour, Max: time.Hour}
	})
	for range 8 { // the reply's first series and its resend's first series
		fake.FailNext("sendMessage", 502, 0)
	}
	r.model.Push(llmtest.Reply{Text: "This waited for Telegram."})
	fake.PushMessage(ownerTG, 0, ownerUser, "are you there?")
	testutil.Eventually(t, testutil.Patience, func() bool { return fake.CallCount("sendMessage") >= 8 }, "the reply's sends failing")

	fake.Down()
	r.waitPlatform(t, "telegram", "went down", func(p control.Platform) bool { return p.State == "down" })
	fake.Up()
	match := func(m telegramtest.SentMessage) bool { return strings.Contains(m.Plain, "This waited for Telegram.") }
	waitFor(t, "the waiting reply once Telegram was back", fake.Shown, match)
	waitAllSent(t, r.st)
	if n := countMatching(fake.Shown(), match); n != 1 {
		t.Errorf("the reply was posted %d times, want 1", n)
	}
}
