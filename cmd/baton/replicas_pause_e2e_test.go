package main

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/store"
	"github.com/baton-agent/baton/internal/testutil"
)

// TestReplicaPausedPastItsLease: a replica stops answering the store for
// longer than its lease — a process paused, a machine starved, a VM
// frozen — while its turns run and more messages wait behind them. The
// other replica takes over what it held; then the paused one comes back
// and finds its work taken. Every message still runs one turn, and its
// answer is shown once on every page, whichever replica answered it.
func TestReplicaPausedPastItsLease(t *testing.T) {
	const convs = 4
	rig := newReplicaRig(t, 1)
	a := rig.start(t)
	aID := a.self(t)
	b := rig.start(t)
	bID := b.self(t)
	page := openWebPage(t, a.gw.webURL)
	pageB := openWebPage(t, b.gw.webURL) // another tab of the chat, on B

	rig.holdPrefix.Store("slow-")
	var said []string
	for c := range convs {
		text := fmt.Sprintf("slow-c%d", c)
		page.say(t, fmt.Sprintf("web:dm:pc%d", c), text)
		said = append(said, text)
	}
	if !testutil.Poll(testutil.Context(t, hangGuard), func() bool { return rig.held.Load() >= convs }) {
		t.Fatalf("%d of %d turns reached the model:\n%s", rig.held.Load(), convs, rig.logs())
	}
	for c := range convs {
		text := fmt.Sprintf("next-c%d", c)
		page.say(t, fmt.Sprintf("web:dm:pc%d", c), text)
		said = append(said, text)
	}

	// A stops, mid-turn, until B holds everything A did.
	if err := a.gw.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	resumed := false
	resume := func() {
		if !resumed {
			resumed = true
			_ = a.gw.cmd.Process.Signal(syscall.SIGCONT)
		}
	}
	t.Cleanup(resume)
	if !testutil.Poll(testutil.Context(t, hangGuard), func() bool {
		pending, err := rig.st.PendingInbound(context.Background(), 0, 0)
		if err != nil {
			return false
		}
		taken := 0
		for _, in := range pending {
			if in.ClaimedBy == bID && in.ClaimedUntil.After(time.Now()) {
				taken++
			}
		}
		return taken == 2*convs
	}) {
		pending, _ := rig.st.PendingInbound(context.Background(), 0, 0)
		t.Fatalf("B never took over what A held (A is %s, B %s): %+v\n%s", aID, bID, pending, rig.logs())
	}
	close(rig.release)
	resume()

	// Each answer shown once on each page; each message one turn.
	for _, text := range said {
		key := fmt.Sprintf("web:dm:p%s", text[len(text)-2:])
		if !testutil.Poll(testutil.Context(t, hangGuard), func() bool {
			return page.count(key, "echo: "+text) > 0 && pageB.count(key, "echo: "+text) > 0
		}) {
			out, _ := rig.st.PendingDeliveries(context.Background(), "", 0)
			var tr []string
			if s, err := rig.st.BoundSession(context.Background(), key); err == nil {
				msgs, _ := rig.st.Transcript(context.Background(), s.ID)
				for _, m := range msgs {
					tr = append(tr, string(m.Role)+": "+m.Content)
				}
			}
			page.mu.Lock()
			shown := fmt.Sprint(page.shown)
			page.mu.Unlock()
			t.Fatalf("a page never showed the answer to %q\npending out %+v\ntranscript %q\nshown %s\n%s", text, out, tr, shown, rig.logs())
		}
	}
	if !testutil.Poll(testutil.Context(t, hangGuard), func() bool {
		pending, err := rig.st.PendingInbound(context.Background(), 0, 0)
		return err == nil && len(pending) == 0
	}) {
		t.Errorf("inbound left pending:\n%s", rig.logs())
	}
	time.Sleep(replicaLease) // what either replica would still send, it has sent
	for _, text := range said {
		key := fmt.Sprintf("web:dm:p%s", text[len(text)-2:])
		if a, b := page.count(key, "echo: "+text), pageB.count(key, "echo: "+text); a != 1 || b != 1 {
			t.Errorf("the answer to %q shown %d times on A's page, %d on B's", text, a, b)
		}
	}
	for c := range convs {
		s, err := rig.st.BoundSession(context.Background(), fmt.Sprintf("web:dm:pc%d", c))
		if err != nil {
			t.Fatal(err)
		}
		msgs, err := rig.st.Transcript(context.Background(), s.ID)
		if err != nil {
			t.Fatal(err)
		}
		var roles []string
		for _, m := range msgs {
			roles = append(roles, string(m.Role)+": "+m.Content)
		}
		if len(msgs) != 4 || msgs[0].Role != store.RoleUser || msgs[1].Role != store.RoleAssistant || msgs[2].Role != store.RoleUser || msgs[3].Role != store.RoleAssistant {
			t.Errorf("conversation pc%d: want two turns, each stored once:\n%q", c, roles)
		}
	}
	if t.Failed() {
		t.Logf("logs:\n%s", rig.logs())
	}
}

// TestEveryPageSeesEveryAnswer: a person's two tabs of the web chat, each
// connected to another replica, both show every answer once, whichever
// replica answered, as with one gateway.
func TestEveryPageSeesEveryAnswer(t *testing.T) {
	rig := newReplicaRig(t, 1)
	a, b := rig.start(t), rig.start(t)
	pageA, pageB := openWebPage(t, a.gw.webURL), openWebPage(t, b.gw.webURL)
	pageA.say(t, "web:dm:two-tabs", "from the laptop")
	pageB.say(t, "web:dm:two-tabs", "from the phone")
	for _, text := range []string{"echo: from the laptop", "echo: from the phone"} {
		for name, p := range map[string]*webPage{"A": pageA, "B": pageB} {
			if !testutil.Poll(testutil.Context(t, hangGuard), func() bool { return p.count("web:dm:two-tabs", text) > 0 }) {
				pageA.mu.Lock()
				pageB.mu.Lock()
				in, _ := rig.st.PendingInbound(context.Background(), 0, 0)
				var tr []string
				if s, err := rig.st.BoundSession(context.Background(), "web:dm:two-tabs"); err == nil {
					msgs, _ := rig.st.Transcript(context.Background(), s.ID)
					for _, m := range msgs {
						tr = append(tr, string(m.Role)+": "+m.Content)
					}
				}
				shown := fmt.Sprintf("A: %v\nB: %v\npending %+v\ntranscript %q", pageA.shown, pageB.shown, in, tr)
				pageB.mu.Unlock()
				pageA.mu.Unlock()
				t.Fatalf("the tab on replica %s never showed %q:\n%s\n%s", name, text, shown, rig.logs())
			}
		}
	}
	time.Sleep(replicaLease) // what either replica would still send, it has sent
	for _, text := range []string{"echo: from the laptop", "echo: from the phone"} {
		if na, nb := pageA.count("web:dm:two-tabs", text), pageB.count("web:dm:two-tabs", text); na != 1 || nb != 1 {
			t.Errorf("%q shown %d times on the tab on A, %d on B", text, na, nb)
		}
	}
}

// TestParkedMessageAnsweredOnReplicas: on a store shared by replicas, a
// message said at a place while its conversation was elsewhere is kept,
// and answered once /continue brings the conversation back.
func TestParkedMessageAnsweredOnReplicas(t *testing.T) {
	rig := newReplicaRig(t, 1)
	p := rig.start(t)
	page := openWebPage(t, p.gw.webURL)
	const key = "web:dm:parked"
	page.say(t, key, "first")
	waitShownOn(t, rig, page, key, "echo: first")
	s, err := rig.st.BoundSession(t.Context(), key)
	if err != nil {
		t.Fatal(err)
	}
	page.say(t, key, "/handoff telegram")
	if !testutil.Poll(testutil.Context(t, hangGuard), func() bool {
		now, err := rig.st.GetSession(t.Context(), s.ID)
		return err == nil && strings.HasPrefix(now.Holder, "telegram:")
	}) {
		t.Fatalf("the conversation never moved to Telegram:\n%s", rig.logs())
	}
	page.say(t, key, "while it was away")
	waitShownOn(t, rig, page, key, "This conversation is in Telegram now")
	page.say(t, key, "/continue")
	waitShownOn(t, rig, page, key, "echo: while it was away")
}

// waitShownOn waits until page was shown a message in key containing sub.
func waitShownOn(t *testing.T, rig *replicaRig, page *webPage, key, sub string) {
	t.Helper()
	found := func() bool {
		page.mu.Lock()
		defer page.mu.Unlock()
		for k := range page.shown {
			if strings.HasPrefix(k, key+"\x00") && strings.Contains(k, sub) {
				return true
			}
		}
		return false
	}
	if !testutil.Poll(testutil.Context(t, hangGuard), found) {
		page.mu.Lock()
		shown := fmt.Sprint(page.shown)
		page.mu.Unlock()
		t.Fatalf("the page never showed %q in %s; shown %s\n%s", sub, key, shown, rig.logs())
	}
}
