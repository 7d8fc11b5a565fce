package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/baton-agent/baton/internal/platform/telegram/telegramtest"
	"github.com/baton-agent/baton/internal/store"
	"github.com/baton-agent/baton/internal/testutil"
)

// benchEnvInt reads a size from the environment, or def.
func benchEnvInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

// BenchmarkReplicaThroughput is the gateway's throughput with 1, 2 and 3
// replicas (`baton gateway` processes, each its own home and web chat)
// on one Postgres database: BATON_BENCH_INBOUND messages (3,000), a
// tenth of them to Telegram (read by the leading replica) and the rest
// to the web chats, a page on every replica, spread over conversations.
// The model echoes at once, so what is measured is the gateway and the
// store. Every run checks that each message was answered once and ran
// one turn: msg/s is reported with lost and duplicated, both 0. The
// three-replica run then hands BATON_BENCH_HANDOFFS (300) web
// conversations to Telegram and checks each landed once.
//
// With BATON_BENCH_REPLICA_CPU set to a number of cores (e.g. 0.3), each
// replica, once started, is put in a cpu cgroup of its own allowed that
// much CPU time (cgroup v1, as root), as if each ran on a small machine
// of its own: whether throughput then grows with replicas shows whether
// they contend in the store, apart from how many cores this host has.
// Each replica's CPU use (rN-cores) and how often it hit its budget
// (throttled-%) are reported; so are Postgres's and this binary's (the
// driver, pages and fakes) CPU per message, which do not get a budget,
// and the database's backends running a statement and waiting for a
// lock, on average (pg-active, pg-lock-waiting).
//
// Run it alone: go test ./cmd/baton -run '^$' -bench ReplicaThroughput -benchtime 1x
func BenchmarkReplicaThroughput(b *testing.B) {
	for _, n := range []int{1, 2, 3} {
		b.Run(fmt.Sprintf("replicas=%d", n), func(b *testing.B) {
			for b.Loop() {
				replicaRun(b, n)
			}
		})
	}
}

func replicaRun(b *testing.B, replicas int) {
	inbound := benchEnvInt("BATON_BENCH_INBOUND", 3000)
	handoffs := 0
	if replicas == 3 {
		handoffs = benchEnvInt("BATON_BENCH_HANDOFFS", 300)
	}
	const users = 30 // Telegram private chats
	const convs = 60 // web conversations, spread over the replicas
	tgPer := max(inbound/10/users, 1)
	tgCount := tgPer * users
	webTotal := inbound - tgCount
	budget := replicaCPUBudget(b)
	rig := newReplicaRig(b, users)
	var limits []*cpuBudget
	for range replicas {
		p := rig.start(b)
		if budget > 0 {
			limits = append(limits, limitCPU(b, p.gw.cmd.Process.Pid, budget, func() { p.gw.stop(b) }))
		}
	}
	if !testutil.Poll(testutil.Context(b, hangGuard), func() bool { return rig.procs[0].leader() != "" }) {
		b.Fatal("nobody leads Telegram")
	}
	pages := make([]*webPage, replicas)
	for i, p := range rig.procs {
		pages[i] = openWebPage(b, p.gw.webURL)
	}
	// The messages, spread over the replicas' conversations.
	type msg struct {
		page      int
		key, text string
	}
	byConv := map[string][]msg{}
	perPage := make([]int, replicas)
	for i := range webTotal {
		c := i % convs
		ri := c % replicas
		key := fmt.Sprintf("web:dm:c%d", c)
		byConv[key] = append(byConv[key], msg{ri, key, fmt.Sprintf("w%d", i)})
		perPage[ri]++
	}

	cpuBefore := rig.cpu(b)
	pgBefore, selfBefore := postgresCPU(), selfCPU()
	throttleBefore := make([]throttle, len(limits))
	for i, l := range limits {
		throttleBefore[i] = l.stat(b)
	}
	locks := sampleLocks(b, rig.url)
	start := time.Now()
	var wg sync.WaitGroup
	for _, ms := range byConv {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, m := range ms {
				pages[m.page].say(b, m.key, m.text)
			}
		}()
	}
	var tgSaid []string
	for k := range tgPer {
		for u := 1; u <= users; u++ {
			text := fmt.Sprintf("t-u%d-%d", u, k)
			rig.fake.PushMessage(int64(u), 0, telegramtest.User{ID: int64(u), FirstName: "Owner"}, text)
			tgSaid = append(tgSaid, fmt.Sprintf("%d\x00echo: %s", u, text))
		}
	}
	wg.Wait()
	// Each page shows the answers to what it said (and, mirrored, the
	// other replicas' answers: a page's count alone says nothing).
	shownBy := testutil.Context(b, 5*hangGuard)
	for _, ms := range byConv {
		for _, m := range ms {
			if !testutil.Poll(shownBy, func() bool { return pages[m.page].count(m.key, "echo: "+m.text) > 0 }) {
				b.Fatalf("replica %d's page never showed the answer to %q (shown %d in all, %d its own)\n%s", m.page, m.text, pages[m.page].total(), perPage[m.page], rig.logs())
			}
		}
	}
	replied := func() map[string]int {
		out := map[string]int{}
		for _, m := range rig.fake.Sent() {
			if m.Method == "sendMessage" {
				out[m.ChatID+"\x00"+m.Plain]++
			}
		}
		return out
	}
	if !testutil.Poll(testutil.Context(b, 5*hangGuard), func() bool { return len(replied()) >= tgCount }) {
		b.Fatalf("Telegram answered %d of %d\n%s", len(replied()), tgCount, rig.logs())
	}
	elapsed := time.Since(start)
	locks.end()
	cpuAfter := rig.cpu(b)
	pgCPU, driverCPU := postgresCPU()-pgBefore, selfCPU()-selfBefore
	var cpu time.Duration
	for i := range cpuAfter {
		cpu += cpuAfter[i] - cpuBefore[i]
	}
	var periods, throttled int64
	for i, l := range limits {
		t := l.stat(b)
		periods += t.periods - throttleBefore[i].periods
		throttled += t.throttled - throttleBefore[i].throttled
	}

	// Exactly once.
	lost, dup := 0, 0
	got := replied()
	for _, s := range tgSaid {
		switch n := got[s]; {
		case n == 0:
			lost++
		case n > 1:
			dup += n - 1
		}
	}
	for _, ms := range byConv {
		for _, m := range ms {
			switch n := pages[m.page].count(m.key, "echo: "+m.text); {
			case n == 0:
				lost++
			case n > 1:
				dup += n - 1
			}
		}
	}
	turns := 0
	keys := []string{}
	for k := range byConv {
		keys = append(keys, k)
	}
	for _, n := range rig.userTexts(b, keys) {
		turns += n
	}
	dup += max(turns-(webTotal+tgCount), 0) // a turn run twice
	total := float64(webTotal + tgCount)
	b.ReportMetric(total/elapsed.Seconds(), "msg/s")
	// What the replicas spent, all together, per message: flat as
	// replicas are added means they scale where there are cores for them.
	b.ReportMetric(float64(cpu.Microseconds())/1000/total, "gateway-cpu-ms/msg")
	// Each replica's share of a core while the messages ran: at its
	// budget, the budget is what limits it.
	for i := range cpuAfter {
		b.ReportMetric((cpuAfter[i]-cpuBefore[i]).Seconds()/elapsed.Seconds(), fmt.Sprintf("r%d-cores", i))
	}
	if budget > 0 {
		b.ReportMetric(budget, "budget-cores")
		if periods > 0 {
			b.ReportMetric(100*float64(throttled)/float64(periods), "throttled-%")
		}
	}
	// What has no budget: the store server, and this binary (the load
	// driver, the pages, the fakes and the model).
	b.ReportMetric(float64(pgCPU.Microseconds())/1000/total, "pg-cpu-ms/msg")
	b.ReportMetric(float64(driverCPU.Microseconds())/1000/total, "driver-cpu-ms/msg")
	active, waiting := locks.means()
	b.ReportMetric(active, "pg-active")
	b.ReportMetric(waiting, "pg-lock-waiting")
	b.ReportMetric(float64(lost), "lost")
	b.ReportMetric(float64(dup), "duplicated")
	if lost != 0 || dup != 0 || turns != webTotal+tgCount {
		b.Errorf("%d lost, %d duplicated, %d turns for %d messages", lost, dup, turns, webTotal+tgCount)
	}
	if handoffs > 0 {
		handoffRun(b, rig, pages, handoffs)
	}
}

// handoffRun hands n web conversations, spread over the replicas, to
// Telegram, and checks that each landed once: one forum topic, one
// greeting there, the handoff completed.
func handoffRun(b *testing.B, rig *replicaRig, pages []*webPage, n int) {
	topicsBefore := len(rig.fake.Topics())
	start := time.Now()
	var wg sync.WaitGroup
	sem := make(chan struct{}, 30)
	for h := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			ri := h % len(pages)
			key := fmt.Sprintf("web:dm:h%d", h)
			pages[ri].say(b, key, fmt.Sprintf("before handoff %d", h))
			pages[ri].say(b, key, "/handoff telegram")
		}()
	}
	wg.Wait()
	ended := func() (completed, failed int) {
		for h := range n {
			s, err := rig.st.BoundSession(context.Background(), fmt.Sprintf("web:dm:h%d", h))
			if err != nil {
				continue
			}
			hf, err := rig.st.HandoffState(context.Background(), s.ID)
			switch {
			case err != nil:
			case hf.State == store.HandoffCompleted:
				completed++
			case hf.State == store.HandoffFailed:
				failed++
			}
		}
		return completed, failed
	}
	if !testutil.Poll(testutil.Context(b, 5*hangGuard), func() bool { c, f := ended(); return c+f == n }) {
		c, f := ended()
		b.Fatalf("%d handoffs completed, %d failed, of %d\n%s", c, f, n, rig.logs())
	}
	elapsed := time.Since(start)
	completed, failed := ended()
	topics := rig.fake.Topics()[topicsBefore:]
	greetings := map[int]int{}
	for _, m := range rig.fake.Sent() {
		if m.ChatID == fmt.Sprint(replicaForum) && m.Method == "sendMessage" {
			greetings[m.ThreadID]++
		}
	}
	twice := 0
	for _, tp := range topics {
		if greetings[tp.ThreadID] != 1 {
			twice++
		}
	}
	b.ReportMetric(float64(n)/elapsed.Seconds(), "handoffs/s")
	b.ReportMetric(float64(failed), "handoffs-failed")
	if completed != n || len(topics) != n || twice != 0 {
		var why []string
		for h := range n {
			s, _ := rig.st.BoundSession(context.Background(), fmt.Sprintf("web:dm:h%d", h))
			if hf, err := rig.st.HandoffState(context.Background(), s.ID); err == nil && hf.State == store.HandoffFailed {
				why = append(why, hf.Error)
			}
		}
		b.Errorf("%d of %d handoffs completed, %d topics, %d topics without exactly one greeting; failures: %s",
			completed, n, len(topics), twice, strings.Join(why, "; "))
	}
}

// cpu is the processor time (user and system) each of the rig's
// gateways has used so far.
func (r *replicaRig) cpu(b *testing.B) []time.Duration {
	out := make([]time.Duration, len(r.procs))
	for i, p := range r.procs {
		cpu, _, _, err := procCPU(p.gw.cmd.Process.Pid, false)
		if err != nil {
			b.Fatal(err)
		}
		out[i] = cpu
	}
	return out
}

// lockSampler asks Postgres, every few milliseconds while the messages
// run, how many of the database's backends are running a statement and
// how many of those wait for a lock another holds (a row, a transaction):
// replicas contending in the store would show as lock waits.
type lockSampler struct {
	stop    context.CancelFunc
	done    chan struct{}
	samples int
	active  int
	waiting int
}

func sampleLocks(b *testing.B, dbURL string) *lockSampler {
	b.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		cancel()
		b.Fatalf("connect to sample lock waits: %v", err)
	}
	s := &lockSampler{stop: cancel, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		defer conn.Close(context.Background())
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			var active, waiting int
			err := conn.QueryRow(ctx, `SELECT count(*) FILTER (WHERE state = 'active'),
				count(*) FILTER (WHERE state = 'active' AND wait_event_type = 'Lock')
				FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`).Scan(&active, &waiting)
			if err == nil {
				s.samples++
				s.active += active
				s.waiting += waiting
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	b.Cleanup(s.end)
	return s
}

// end stops the sampling; it may be called more than once.
func (s *lockSampler) end() {
	s.stop()
	<-s.done
}

// means are the backends running a statement and those waiting for a
// lock, on average over the samples.
func (s *lockSampler) means() (active, waiting float64) {
	if s.samples == 0 {
		return 0, 0
	}
	return float64(s.active) / float64(s.samples), float64(s.waiting) / float64(s.samples)
}
