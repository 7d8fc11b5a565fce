package gateway_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/gateway"
	"github.com/baton-agent/baton/internal/platform"
	"github.com/baton-agent/baton/internal/platform/telegram"
	"github.com/baton-agent/baton/internal/platform/telegram/telegramtest"
	"github.com/baton-agent/baton/internal/platform/web"
	"github.com/baton-agent/baton/internal/testutil"
)

// Throughput load: half the conversations in the web chat (one page, a
// real websocket), half in topics of a Telegram forum (the fake Bot API,
// long-polled by the real adapter). Every conversation sends all its
// messages at once, so the gateway holds them queued and must keep their
// order.
const (
	tpConversations = 1000
	tpMessages      = 10
	tpForum         = -100900
	tpFirstTopic    = 1000
)

// BenchmarkGatewayThroughput sends 1,000 conversations × 10 messages
// through the gateway (web websockets and the Telegram fake, SQLite file,
// llmtest answering at once) and waits for every reply. It reports
// messages per second, the p50 and p99 of the time from a message sent to
// its reply received, and the resident memory of the process at the end
// (the gateway, the fakes and the clients together). It fails unless every
// message got exactly one reply, in its conversation's order.
func BenchmarkGatewayThroughput(b *testing.B) {
	for range b.N {
		res := runThroughput(b, tpConversations)
		b.ReportMetric(res.rate, "msg/s")
		b.ReportMetric(res.p50, "p50-ms")
		b.ReportMetric(res.p99, "p99-ms")
		b.ReportMetric(res.rss, "RSS-MiB")
		// The CPU the whole process spent per message: on a shared
		// machine, steadier than the rate, which other work slows.
		b.ReportMetric(res.cpuPerMsg, "cpu-µs/msg")
		b.ReportMetric(0, "ns/op")
	}
}

// BenchmarkGatewayConversations runs the throughput load at 100, 1,000
// and 5,000 conversations and reports, besides the rate, what the process
// holds once every turn has ended: the live heap after a collection (with
// the load's own records of what was sent and received dropped), its
// growth over the same process before the first message divided by the
// conversations (what an idle conversation costs), and the RSS.
func BenchmarkGatewayConversations(b *testing.B) {
	for _, n := range []int{100, 1000, 5000} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			for range b.N {
				res := runThroughput(b, n)
				b.ReportMetric(res.rate, "msg/s")
				b.ReportMetric(res.cpuPerMsg, "cpu-µs/msg")
				b.ReportMetric(float64(res.heapAfter)/(1<<20), "heap-MiB")
				b.ReportMetric(float64(res.heapAfter-res.heapBefore)/float64(n), "idle-B/conv")
				b.ReportMetric(res.rss, "RSS-MiB")
				b.ReportMetric(0, "ns/op")
			}
		})
	}
}

// throughputResult is one run of the throughput load.
type throughputResult struct {
	rate, p50, p99, rss, cpuPerMsg float64
	// heapBefore and heapAfter are the process's in-use heap after a
	// collection, before the first message and once every turn ended.
	heapBefore, heapAfter int64
}

// runThroughput sends conversations × tpMessages messages through the
// gateway (web websockets and the Telegram fake, SQLite file, llmtest
// answering at once), waits for every reply and fails unless every message
// got exactly one reply, in its conversation's order. The timer runs only
// while messages are in flight.
func runThroughput(b *testing.B, conversations int) throughputResult {
	b.StopTimer()
	if os.Getenv("BATON_HEAPPROFILE") != "" {
		runtime.MemProfileRate = 1024 // fine enough to see small things per conversation
	}
	fake := telegramtest.New(b, botToken)
	fake.AddChat(telegramtest.Chat{ID: tpForum, Type: telegramtest.Supergroup, Title: "bench", IsForum: true})
	tg, err := telegram.New(telegram.Config{Token: botToken, ServerURL: fake.URL(), PollTimeout: time.Second,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	r := newRig(b, rigOpts{
		extra:  []platform.Adapter{tg},
		owners: map[string][]string{"telegram": {strconv.Itoa(ownerTG)}},
		homes:  map[string]string{"web": web.Home.Key(), "telegram": "telegram:dm:" + strconv.Itoa(ownerTG)},
		rate:   gateway.Rate{Burst: 1 << 30, Every: time.Nanosecond},
		quiet:  true,
	})
	defer r.stop()
	r.waitLive(b, "telegram")
	pg := r.openPage(b)

	ld := newLoad()
	webKeys := make([]string, conversations/2)
	for i := range webKeys {
		webKeys[i] = platform.Address{Platform: web.Name, Kind: platform.Thread, Chat: web.HomeChat, Thread: fmt.Sprintf("bench%04d", i)}.Key()
	}
	ctx := testutil.Context(b, time.Duration(max(2, 2*conversations/1000))*time.Minute)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); ld.readPage(ctx, pg) }()
	go func() { defer wg.Done(); ld.readTelegram(ctx, fake) }()

	var res throughputResult
	res.heapBefore = liveHeap(b, "before")
	b.StartTimer()
	cpuBefore, err := selfCPU()
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	for m := range tpMessages {
		for i, key := range webKeys {
			text := fmt.Sprintf("w%d m%d", i, m)
			ld.sent(key, text)
			pg.send(map[string]any{"type": "say", "key": key, "id": strconv.Itoa(m), "text": text})
		}
		for i := range conversations - len(webKeys) {
			topic := tpFirstTopic + i
			text := fmt.Sprintf("t%d m%d", i, m)
			ld.sent(tgKey(topic), text)
			fake.PushMessage(tpForum, topic, ownerUser, text)
		}
	}
	total := conversations * tpMessages
	// The model and Bot API fakes record every request: dropped as the
	// replies come, so the collector's work on them, which would grow
	// with the run, is not charged to the gateway.
	for n := min(1000, total); ; n = min(n+1000, total) {
		if !ld.waitReplies(ctx, n) {
			_, err := ld.check()
			b.Fatalf("%d of %d replies arrived: %v", ld.replyCount(), total, err)
		}
		r.model.Forget()
		fake.ForgetCalls()
		if n == total {
			break
		}
	}
	elapsed := time.Since(start)
	cpuAfter, err := selfCPU()
	if err != nil {
		b.Fatal(err)
	}
	b.StopTimer()

	lat, err := ld.check()
	ld.stop()
	wg.Wait()
	if err != nil {
		b.Fatal(err)
	}
	res.rate = float64(total) / elapsed.Seconds()
	res.p50 = float64(lat[len(lat)/2].Microseconds()) / 1000
	res.p99 = float64(lat[len(lat)*99/100].Microseconds()) / 1000
	res.cpuPerMsg = float64((cpuAfter - cpuBefore).Microseconds()) / float64(total)
	// What the load, the model and the Bot API fakes recorded is not the
	// gateway's.
	ld.forget()
	r.model.Forget()
	fake.ForgetCalls()
	fake.ForgetSent()
	res.heapAfter = liveHeap(b, "after")
	if res.rss, err = selfRSS(); err != nil {
		b.Fatal(err)
	}
	return res
}

// liveHeap is the in-use heap after a collection. With BATON_HEAPPROFILE
// set to a directory, it also writes a heap profile there, named by when.
func liveHeap(b *testing.B, when string) int64 {
	runtime.GC()
	if dir := os.Getenv("BATON_HEAPPROFILE"); dir != "" {
		f, err := os.Create(filepath.Join(dir, strings.ReplaceAll(b.Name(), "/", "-")+"-"+when+".pprof"))
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
			b.Fatal(err)
		}
		g, err := os.Create(filepath.Join(dir, strings.ReplaceAll(b.Name(), "/", "-")+"-"+when+".goroutines"))
		if err != nil {
			b.Fatal(err)
		}
		defer g.Close()
		if err := pprof.Lookup("goroutine").WriteTo(g, 1); err != nil {
			b.Fatal(err)
		}
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	b.Logf("%s: HeapInuse %.1f MiB, HeapAlloc %.1f MiB, StackInuse %.1f MiB, %d goroutines, %d objects", when,
		float64(ms.HeapInuse)/(1<<20), float64(ms.HeapAlloc)/(1<<20), float64(ms.StackInuse)/(1<<20), runtime.NumGoroutine(), ms.HeapObjects)
	return int64(ms.HeapInuse)
}

func tgKey(topic int) string {
	return platform.Address{Platform: telegram.Name, Kind: platform.Thread, Chat: strconv.Itoa(tpForum), Thread: strconv.Itoa(topic)}.Key()
}

// load is what was sent and what came back, per conversation.
type load struct {
	mu      sync.Mutex
	sentAt  map[string][]time.Time // per conversation, in sending order
	texts   map[string][]string
	replies map[string][]reply
	n       int
	more    chan struct{} // signalled on every reply
	done    chan struct{}
}

type reply struct {
	text string
	at   time.Time
}

func newLoad() *load {
	return &load{sentAt: map[string][]time.Time{}, texts: map[string][]string{}, replies: map[string][]reply{},
		more: make(chan struct{}, 1), done: make(chan struct{})}
}

func (l *load) sent(key, text string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sentAt[key] = append(l.sentAt[key], time.Now())
	l.texts[key] = append(l.texts[key], text)
}

func (l *load) got(key, text string, at time.Time) {
	l.mu.Lock()
	l.replies[key] = append(l.replies[key], reply{text, at})
	l.n++
	l.mu.Unlock()
	select {
	case l.more <- struct{}{}:
	default:
	}
}

func (l *load) replyCount() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.n
}

func (l *load) stop() { close(l.done) }

// forget drops the record of what was sent and received, once checked, so
// it does not count as the gateway's memory.
func (l *load) forget() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sentAt, l.texts, l.replies = map[string][]time.Time{}, map[string][]string{}, map[string][]reply{}
}

// waitReplies waits until n replies came, or ctx ends.
func (l *load) waitReplies(ctx context.Context, n int) bool {
	for l.replyCount() < n {
		select {
		case <-l.more:
		case <-ctx.Done():
			return false
		}
	}
	return true
}

// check verifies exactly one reply per message, in order, per
// conversation, and returns the reply latencies sorted.
func (l *load) check() ([]time.Duration, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var lat []time.Duration
	var problems []string
	for key, texts := range l.texts {
		got := l.replies[key]
		if len(got) != len(texts) {
			problems = append(problems, fmt.Sprintf("%s: %d messages, %d replies", key, len(texts), len(got)))
			continue
		}
		for i, want := range texts {
			if got[i].text != "echo: "+want {
				problems = append(problems, fmt.Sprintf("%s: reply %d is %q, want %q", key, i, got[i].text, "echo: "+want))
				break
			}
			lat = append(lat, got[i].at.Sub(l.sentAt[key][i]))
		}
	}
	if len(l.replies) != len(l.texts) {
		problems = append(problems, fmt.Sprintf("replies in %d conversations, messages in %d", len(l.replies), len(l.texts)))
	}
	if len(problems) > 0 {
		if len(problems) > 10 {
			problems = append(problems[:10], fmt.Sprintf("… %d more", len(problems)-10))
		}
		return nil, fmt.Errorf("lost, duplicated or reordered replies:\n%s", strings.Join(problems, "\n"))
	}
	slices.Sort(lat)
	return lat, nil
}

// readPage records the page's assistant messages as replies. As the page
// does, a message sent again under the same id (its acknowledgement came
// late, so the gateway tried once more) is shown, and counted, once. The
// offer to continue the conversation held elsewhere, which ends the first
// answer in each new conversation, is not part of the reply (withoutOffer).
func (l *load) readPage(ctx context.Context, pg *page) {
	shown := map[string]bool{}
	for {
		select {
		case f, ok := <-pg.in:
			if !ok {
				return
			}
			if f["type"] == "message" && f["role"] == "assistant" {
				key, _ := f["key"].(string)
				text, _ := f["text"].(string)
				text = withoutOffer(text)
				if id, _ := f["id"].(string); id != "" {
					if shown[id] {
						continue
					}
					shown[id] = true
				}
				l.got(key, text, time.Now())
			}
		case <-l.done:
			return
		case <-ctx.Done():
			return
		}
	}
}

// readTelegram records each message the bot posted as a reply once its
// text (without the offer, as on the page) is whole: the gateway may post a draft and edit it as the answer
// streams, so a message counts once, when its text first reads as a
// whole reply ("echo: t<conversation> m<digit>").
func (l *load) readTelegram(ctx context.Context, fake *telegramtest.Server) {
	type posted struct {
		thread  int
		counted bool
	}
	msgs := map[string]*posted{} // chat:message id
	seen := 0
	for {
		wctx, cancel := context.WithCancel(ctx)
		go func() {
			select {
			case <-l.done:
				cancel()
			case <-wctx.Done():
			}
		}()
		sent, err := fake.WaitSentAfter(wctx, seen)
		cancel()
		if err != nil {
			return
		}
		now := time.Now()
		for _, m := range sent {
			id := m.ChatID + ":" + strconv.Itoa(m.MessageID)
			p, ok := msgs[id]
			if !ok {
				p = &posted{thread: m.ThreadID}
				msgs[id] = p
			}
			if text := withoutOffer(m.Plain); !p.counted && wholeReply.MatchString(text) {
				p.counted = true
				l.got(tgKey(p.thread), text, now)
			}
		}
		seen += len(sent)
	}
}

var wholeReply = regexp.MustCompile(`^echo: t\d+ m\d$`)

// withoutOffer is a reply without the offer to continue the conversation
// held elsewhere, which ends the first answer in each new conversation
// and is not part of the reply.
func withoutOffer(text string) string {
	if i := strings.LastIndex(text, "\n\nYou were working on "); i >= 0 && strings.HasSuffix(text, "/continue to pick it up here.") {
		return text[:i]
	}
	return text
}

// selfCPU is the CPU time (user and system) this process has used.
func selfCPU() (time.Duration, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, fmt.Errorf("getrusage: %w", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}

// selfRSS is this process's resident set size in MiB.
func selfRSS() (float64, error) {
	raw, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			return kb / 1024, err
		}
	}
	return 0, fmt.Errorf("no VmRSS in /proc/self/status")
}
