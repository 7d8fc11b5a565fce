package gateway_test

import (
	"io"
	"log"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/gateway"
	"github.com/baton-agent/baton/internal/llm/llmtest"
	"github.com/baton-agent/baton/internal/platform"
	"github.com/baton-agent/baton/internal/platform/telegram"
	"github.com/baton-agent/baton/internal/platform/telegram/telegramtest"
	"github.com/baton-agent/baton/internal/platform/web"
	"github.com/baton-agent/baton/internal/testutil"
)

// BenchmarkReplyAfterBotAPIOutage measures the time from a Bot API that
// comes back after an outage to the first reply sent: a reply whose sends
// failed waits while the Bot API is down for BATON_BENCH_OUTAGE (default
// 60s), then the clock starts as the fake comes back and stops when it
// has accepted the reply. The gateway runs its default Restart and Resend
// policies. Each iteration runs BATON_BENCH_RIGS (default 8) gateways side
// by side, each with its own fake and reply, and reports the p50 and the
// longest of their times, and the same for the platform to be live again.
//
//	go test -run '^$' -bench ReplyAfterBotAPIOutage -benchtime 1x ./internal/gateway
func BenchmarkReplyAfterBotAPIOutage(b *testing.B) {
	outage := 60 * time.Second
	if v := os.Getenv("BATON_BENCH_OUTAGE"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			b.Fatalf("BATON_BENCH_OUTAGE: %v", err)
		}
		outage = d
	}
	rigs := 8
	if v := os.Getenv("BATON_BENCH_RIGS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			b.Fatalf("BATON_BENCH_RIGS=%q: want a count", v)
		}
		rigs = n
	}
	for b.Loop() {
		sent := make([]time.Duration, rigs)
		live := make([]time.Duration, rigs)
		var wg sync.WaitGroup
		for i := range rigs {
			wg.Go(func() { live[i], sent[i] = replyAfterOutage(b, outage) })
		}
		wg.Wait()
		slices.Sort(sent)
		slices.Sort(live)
		b.ReportMetric(sent[len(sent)/2].Seconds(), "sent-p50-s")
		b.ReportMetric(sent[len(sent)-1].Seconds(), "sent-max-s")
		b.ReportMetric(live[len(live)/2].Seconds(), "live-p50-s")
		b.ReportMetric(live[len(live)-1].Seconds(), "live-max-s")
	}
}

// replyAfterOutage runs one gateway through one outage and returns how
// long after the Bot API came back Telegram was live again (its first
// successful call) and the reply was accepted.
func replyAfterOutage(b *testing.B, outage time.Duration) (live, sent time.Duration) {
	fake := telegramtest.New(b, botToken)
	// Until the outage, sendMessage fails behind a proxy, so the reply is
	// stored and waits, as one answered just as the service failed.
	var failSends atomic.Bool
	var failed atomic.Int64
	failSends.Store(true)
	target, err := url.Parse(fake.URL())
	if err != nil {
		b.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.ErrorLog = log.New(io.Discard, "", 0) // the outage's cut connections
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if failSends.Load() && strings.HasSuffix(r.URL.Path, "/sendMessage") {
			failed.Add(1)
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(http.StatusBadGateway)
			io.WriteString(w, "<html><head><title>502 Bad Gateway</title></head></html>\n")
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	b.Cleanup(front.Close)
	tg, err := telegram.New(telegram.Config{Token: botToken, ServerURL: front.URL, PollTimeout: time.Second,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	r := newRig(b, rigOpts{
		extra:   []platform.Adapter{tg},
		owners:  map[string][]string{"telegram": {"42"}},
		homes:   map[string]string{"web": web.Home.Key(), "telegram": "telegram:dm:42"},
		restart: platform.DefaultRestart(),
		resend:  gateway.DefaultResend(),
		quiet:   true,
	})
	r.waitLive(b, "telegram")
	r.model.Push(llmtest.Reply{Text: "This waited for the Bot API."})
	fake.PushMessage(ownerTG, 0, ownerUser, "are you there?")
	testutil.Eventually(b, testutil.Patience, func() bool { return failed.Load() > 0 }, "the reply's first send failing")

	fake.Down()
	time.Sleep(outage)
	failSends.Store(false)
	back := time.Now()
	fake.Up()
	ctx := testutil.Context(b, outage+10*time.Minute)
	if _, err := fake.WaitSent(ctx, 1); err != nil {
		b.Fatalf("the reply was not sent after the outage: %v", err)
	}
	for _, c := range fake.Calls() {
		if c.Status == http.StatusOK && c.End.After(back) {
			if live == 0 {
				live = c.End.Sub(back)
			}
			if strings.EqualFold(c.Method, "sendMessage") {
				sent = c.End.Sub(back)
				break
			}
		}
	}
	return live, sent
}
