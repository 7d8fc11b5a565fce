package gateway_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/gateway/control"
	"github.com/baton-agent/baton/internal/llm/llmtest"
	"github.com/baton-agent/baton/internal/platform"
	"github.com/baton-agent/baton/internal/platform/slack"
	"github.com/baton-agent/baton/internal/platform/slack/slacktest"
	"github.com/baton-agent/baton/internal/platform/web"
	"github.com/baton-agent/baton/internal/testutil"
)

const (
	slackBot   = "xoxb-1-gateway-test"
	slackApp   = "xapp-1-gateway-test"
	slackOwner = "U0OWNER"
	slackHome  = "C0HOME"
)

func slackRig(t *testing.T, fake *slacktest.Server, home string) *rig {
	t.Helper()
	a, err := slack.New(slack.Config{BotToken: slackBot, AppToken: slackApp, APIURL: fake.APIURL(),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	r := newRig(t, rigOpts{
		extra:  []platform.Adapter{a},
		owners: map[string][]string{"slack": {slackOwner}},
		homes:  map[string]string{"web": web.Home.Key(), "slack": home},
	})
	r.waitLive(t, "slack")
	return r
}

// shownWhere waits for a message of the bot, as people see it now, that
// matches.
func shownWhere(t *testing.T, fake *slacktest.Server, what string, match func(slacktest.Post) bool) slacktest.Post {
	t.Helper()
	var found slacktest.Post
	err := fake.Wait(testutil.Context(t, 0), func() bool {
		for _, p := range fake.Shown() {
			if match(p) {
				found = p
				return true
			}
		}
		return false
	})
	if err != nil {
		t.Fatalf("the bot never showed %s; it showed %+v", what, fake.Shown())
	}
	return found
}

// handoffToSlack hands the session off to Slack from the terminal and
// returns the final progress and every step seen.
func handoffToSlack(t *testing.T, r *rig, sessionID string) (control.Progress, []string) {
	t.Helper()
	ctx := context.Background()
	h, err := r.client.RequestHandoff(ctx, control.HandoffRequest{SessionID: sessionID, From: "cli", To: "slack"})
	if err != nil {
		t.Fatal(err)
	}
	var steps []string
	final, err := r.client.Watch(ctx, h.ID, func(p control.Progress) { steps = append(steps, p.Step) })
	if err != nil || final.State != "completed" {
		t.Fatalf("handoff %+v %v (steps %q)", final, err, steps)
	}
	return final, steps
}

func TestSlackHandoffThreadAndBack(t *testing.T) {
	fake := slacktest.New(t, slackBot, slackApp)
	r := slackRig(t, fake, "slack:group:"+slackHome)
	sess := r.terminalSession(t)
	ctx := context.Background()

	// Terminal → /handoff slack: a root message naming the session in the
	// home channel, the agent's greeting in its thread.
	r.model.Push(llmtest.Reply{Text: "Hi on Slack — we were booking the 9:40 train."})
	final, _ := handoffToSlack(t, r, sess.ID)
	posts := fake.Posts()
	if len(posts) == 0 || posts[0].ThreadTS != "" || !strings.Contains(posts[0].Text, "Trip planning") {
		t.Fatalf("the first post is not a root message naming the session: %+v", posts)
	}
	root := posts[0].TS
	if want := (platform.Address{Platform: "slack", Kind: platform.Thread, Chat: slackHome, Thread: root}).Key(); final.Destination != want {
		t.Fatalf("destination %q, want the root's thread %q", final.Destination, want)
	}
	inThread := func(sub string) func(slacktest.Post) bool {
		return func(p slacktest.Post) bool { return p.ThreadTS == root && strings.Contains(p.Text, sub) }
	}
	shownWhere(t, fake, "the greeting in the thread", inThread("Hi on Slack"))

	// The person's reply in the thread continues the same session, with
	// the whole transcript; typing shows under the thread meanwhile.
	r.model.Push(llmtest.Reply{Text: "Done, it is *booked*.", Delay: 600 * time.Millisecond}) // long enough for typing to show
	fake.PushMessage(slacktest.Message{Channel: slackHome, User: slackOwner, Text: "book it please", ThreadTS: root})
	shownWhere(t, fake, "the answer in the thread", inThread("Done, it is _booked_."))
	if b, err := r.st.LookupBinding(ctx, final.Destination); err != nil || b.SessionID != sess.ID {
		t.Fatalf("the thread is bound to %+v (%v), want session %s", b, err, sess.ID)
	}
	msgs := settled(t, r, sess.ID, "Done, it is *booked*.")
	if msgs[0].Content != "plan a trip to Lisbon" || msgs[len(msgs)-2].Content != "book it please" || msgs[len(msgs)-2].Platform != "slack" {
		t.Fatalf("transcript %+v", msgs)
	}
	reqs := r.model.Requests()
	body, _ := json.Marshal(reqs[len(reqs)-1])
	for _, want := range []string{"plan a trip to Lisbon", "Noted: the 9:40 train.", "Hi on Slack", "book it please"} {
		if !strings.Contains(string(body), want) {
			t.Errorf("the model did not see %q", want)
		}
	}
	if st := fake.Statuses(); len(st) == 0 || st[0].ThreadTS != root {
		t.Errorf("no typing status under the thread: %+v", st)
	}

	// Nothing leaked into the channel: every post but the root is in the thread.
	for _, p := range fake.Posts()[1:] {
		if p.ThreadTS != root || p.Broadcast {
			t.Errorf("a post left the thread: %+v", p)
		}
	}
}

// An envelope is acknowledged only once its message is stored: while the
// database refuses the write, nothing is acknowledged and Slack delivers
// the envelope again; once stored, it is acknowledged and answered once.
func TestSlackAcksOnlyStoredMessages(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out SQLite's busy timeout")
	}
	fake := slacktest.New(t, slackBot, slackApp)
	r := slackRig(t, fake, "slack:dm:D0OWNER")

	// Another writer holds the database's write lock. It waits for the
	// lock as baton's own connections do: the store's background indexer
	// may be writing when it asks.
	db, err := sql.Open("sqlite", filepath.Join(r.home, "state.db")+"?_busy_timeout=10000")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	lock, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lock.ExecContext(context.Background(), "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	locked := true
	t.Cleanup(func() {
		if locked {
			lock.ExecContext(context.Background(), "ROLLBACK")
		}
		lock.Close()
	})

	r.model.Push(llmtest.Reply{Text: "Stored at last."})
	_, env := fake.PushMessage(slacktest.Message{Channel: "D0OWNER", User: slackOwner, Text: "remember this"})
	// The store gives up after its busy timeout; the envelope, never
	// acknowledged, comes again on the next connection.
	testutil.Eventually(t, 2*testutil.Patience, func() bool { return fake.Deliveries(env) >= 2 }, "the envelope delivered again")
	if fake.Acked(env) {
		t.Fatal("the envelope was acknowledged although its message was never stored")
	}
	if _, err := lock.ExecContext(context.Background(), "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	locked = false

	shownWhere(t, fake, "the answer", func(p slacktest.Post) bool { return strings.Contains(p.Text, "Stored at last.") })
	testutil.Eventually(t, testutil.Patience, func() bool { return fake.Acked(env) }, "the stored envelope acknowledged")
	waitAllSent(t, r.st)
	b, err := r.st.LookupBinding(context.Background(), "slack:dm:D0OWNER")
	if err != nil {
		t.Fatal(err)
	}
	msgs := settled(t, r, b.SessionID, "Stored at last.")
	n := 0
	for _, m := range msgs {
		if m.Content == "remember this" {
			n++
		}
	}
	if n != 1 {
		t.Errorf("the message is in the transcript %d times, want 1", n)
	}
	if c := countMatching(fake.Shown(), func(p slacktest.Post) bool { return strings.Contains(p.Text, "Stored at last.") }); c != 1 {
		t.Errorf("answered %d times, want 1", c)
	}
}
