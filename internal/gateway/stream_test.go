package gateway_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/llm/llmtest"
	"github.com/baton-agent/baton/internal/platform"
	"github.com/baton-agent/baton/internal/platform/telegram"
	"github.com/baton-agent/baton/internal/platform/telegram/telegramtest"
	"github.com/baton-agent/baton/internal/platform/web"
	"github.com/baton-agent/baton/internal/store"
	"github.com/baton-agent/baton/internal/testutil"
)

// Streaming by edits, through the Telegram fake: the gateway posts a
// reply's first words, edits the message as the model writes, at the
// platform's pace, opens a new message past the limit, and finishes with
// edits rather than posting the answer again.

// streamRig is a gateway with Telegram editing at most once per every.
func streamRig(t *testing.T, fake *telegramtest.Server, every time.Duration) *rig {
	t.Helper()
	tg, err := telegram.New(telegram.Config{Token: botToken, ServerURL: fake.URL(), PollTimeout: time.Second,
		EditEvery: every, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	r := newRig(t, rigOpts{
		extra:  []platform.Adapter{tg},
		owners: map[string][]string{"telegram": {"42"}},
		homes:  map[string]string{"web": web.Home.Key(), "telegram": "telegram:dm:42"},
	})
	r.waitLive(t, "telegram")
	return r
}

// words is n distinct words, so every prefix is told apart.
func words(n int) string {
	w := make([]string, n)
	for i := range w {
		w[i] = fmt.Sprintf("word%03d", i)
	}
	return strings.Join(w, " ")
}

// inDM is what the bot sent to the owner's private chat, in order.
func inDM(fake *telegramtest.Server) []telegramtest.SentMessage {
	var out []telegramtest.SentMessage
	for _, m := range fake.Sent() {
		if m.ChatID == "42" {
			out = append(out, m)
		}
	}
	return out
}

func TestStreamedReplyGrowsByEdits(t *testing.T) {
	fake := telegramtest.New(t, botToken)
	r := streamRig(t, fake, time.Millisecond)
	reply := words(12)
	r.model.Push(llmtest.Reply{Text: reply, Delay: 15 * time.Millisecond})
	fake.PushMessage(ownerTG, 0, ownerUser, "tell me")
	waitFor(t, "the whole reply", fake.Shown, func(m telegramtest.SentMessage) bool { return m.Plain == reply })
	waitAllSent(t, r.st)

	sent := inDM(fake)
	if len(sent) < 3 || sent[0].Method != "sendMessage" {
		t.Fatalf("want a post and at least two edits, got %+v", sent)
	}
	id := sent[0].MessageID
	prev := ""
	for i, m := range sent {
		if i > 0 && (m.Method != "editMessageText" || m.MessageID != id) {
			t.Fatalf("step %d is %s of message %d, want an edit of %d: %+v", i, m.Method, m.MessageID, id, sent)
		}
		if !strings.HasPrefix(reply, m.Plain) || len(m.Plain) <= len(prev) {
			t.Fatalf("step %d shows %q after %q: the message must only grow toward the reply", i, m.Plain, prev)
		}
		prev = m.Plain
	}
	if prev != reply {
		t.Errorf("the message ends as %q, want the reply", prev)
	}
	if shown := fake.Shown(); len(shown) != 1 {
		t.Errorf("%d messages shown, want the one reply: %+v", len(shown), shown)
	}
}

// With a pace longer than the turn, the message is posted once while the
// model writes and edited once into the answer when the turn ends: the
// pace holds back edits, never the final answer.
func TestStreamedReplyIsPacedAndFinishedAtOnce(t *testing.T) {
	fake := telegramtest.New(t, botToken)
	r := streamRig(t, fake, time.Hour)
	reply := words(10)
	// Written over a second: longer than the wait before the first post.
	r.model.Push(llmtest.Reply{Text: reply, Delay: 100 * time.Millisecond})
	fake.PushMessage(ownerTG, 0, ownerUser, "tell me")
	waitFor(t, "the whole reply", fake.Shown, func(m telegramtest.SentMessage) bool { return m.Plain == reply })
	waitAllSent(t, r.st)

	sent := inDM(fake)
	if len(sent) != 2 {
		t.Fatalf("want one post and one final edit, got %+v", sent)
	}
	if sent[0].Method != "sendMessage" || sent[0].Plain == reply || !strings.HasPrefix(reply, sent[0].Plain) {
		t.Errorf("first the first words are posted: %+v", sent[0])
	}
	if sent[1].Method != "editMessageText" || sent[1].MessageID != sent[0].MessageID || sent[1].Plain != reply {
		t.Errorf("then the same message is edited into the reply: %+v", sent[1])
	}
}

// A reply the model finishes at once is posted once, whole: no first
// words posted and then edited (two calls and a flicker for nothing).
func TestQuickReplyIsPostedOnce(t *testing.T) {
	fake := telegramtest.New(t, botToken)
	r := streamRig(t, fake, time.Hour)
	reply := words(10)
	r.model.Push(llmtest.Reply{Text: reply})
	fake.PushMessage(ownerTG, 0, ownerUser, "tell me")
	waitFor(t, "the whole reply", fake.Shown, func(m telegramtest.SentMessage) bool { return m.Plain == reply })
	waitAllSent(t, r.st)
	if sent := inDM(fake); len(sent) != 1 || sent[0].Method != "sendMessage" {
		t.Errorf("want the reply posted once, got %+v", sent)
	}
	if n := fake.CallCount("editMessageText"); n != 0 {
		t.Errorf("%d edits of a reply posted whole", n)
	}
	if n := fake.CallCount("sendChatAction"); n != 0 {
		t.Errorf("typing shown %d times for a reply ready at once", n)
	}
}

// Typing shows while a slower reply is written.
func TestTypingShowsWhileAReplyIsWritten(t *testing.T) {
	fake := telegramtest.New(t, botToken)
	r := streamRig(t, fake, time.Hour)
	reply := words(10)
	r.model.Push(llmtest.Reply{Text: reply, Delay: 100 * time.Millisecond}) // a second in all
	fake.PushMessage(ownerTG, 0, ownerUser, "tell me")
	waitFor(t, "the whole reply", fake.Shown, func(m telegramtest.SentMessage) bool { return m.Plain == reply })
	if n := fake.CallCount("sendChatAction"); n == 0 {
		t.Errorf("no typing while the reply was written")
	}
}

// A reply longer than Telegram's limit goes on in a new message while it
// is written; the final answer edits both into its parts and posts
// nothing again.
func TestStreamedReplyOverflowsIntoANewMessage(t *testing.T) {
	fake := telegramtest.New(t, botToken)
	r := streamRig(t, fake, time.Millisecond)
	reply := words(700) // 5,599 characters: two messages
	r.model.Push(llmtest.Reply{Text: reply, Delay: time.Millisecond})
	fake.PushMessage(ownerTG, 0, ownerUser, "tell me a lot")
	waitFor(t, "the reply's end", fake.Shown, func(m telegramtest.SentMessage) bool { return strings.HasSuffix(m.Plain, "word699") })
	waitAllSent(t, r.st)

	shown := fake.Shown()
	if len(shown) != 2 {
		t.Fatalf("%d messages shown, want 2", len(shown))
	}
	var texts []string
	for _, m := range shown {
		if n := platform.UTF16Len(m.Plain); n > telegram.MaxMessageLen {
			t.Errorf("a message of %d units, over the limit", n)
		}
		texts = append(texts, m.Plain)
	}
	if !slices.Equal(strings.Fields(strings.Join(texts, " ")), strings.Fields(reply)) {
		t.Errorf("the two messages do not make the reply in order")
	}
	posts, edits := 0, 0
	for _, m := range inDM(fake) {
		switch {
		case m.Method == "sendMessage":
			posts++
		case m.MessageID == shown[0].MessageID:
			edits++
		}
	}
	if posts != 2 {
		t.Errorf("%d posts, want 2: the final answer edits what was streamed", posts)
	}
	if edits < 2 {
		t.Errorf("the first message was edited %d times; it should have grown", edits)
	}
}

// editRig is a gateway with Telegram editing at most once per every, on
// o (a restart when o.again is set).
func editRig(t *testing.T, fake *telegramtest.Server, every time.Duration, o rigOpts) *rig {
	t.Helper()
	tg, err := telegram.New(telegram.Config{Token: botToken, ServerURL: fake.URL(), PollTimeout: time.Second,
		EditEvery: every, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	o.extra = append(o.extra, tg)
	o.owners = map[string][]string{"telegram": {"42"}}
	o.homes = map[string]string{"web": web.Home.Key(), "telegram": "telegram:dm:42"}
	r := newRig(t, o)
	r.waitLive(t, "telegram")
	return r
}

// A reply half streamed by edits when the gateway stopped or crashed is
// finished in place by the next start: the message shown half-written is
// edited into the answer, not left frozen with the answer posted again
// below it.
func TestFrozenStreamedReplyIsFinishedInPlace(t *testing.T) {
	for _, how := range []string{"stopped past the grace period", "crashed"} {
		t.Run(how, func(t *testing.T) {
			fake := telegramtest.New(t, botToken)
			r1 := editRig(t, fake, time.Millisecond, rigOpts{grace: 200 * time.Millisecond,
				script: []llmtest.Step{llmtest.Reply{Text: words(60), Delay: 60 * time.Millisecond}}})
			fake.PushMessage(ownerTG, 0, ownerUser, "tell me")
			// Posted, then edited: the message is half-written in the chat.
			testutil.Eventually(t, 0, func() bool {
				return fake.CallCount("editMessageText") > 0
			}, "the reply streamed by edits")
			again := r1
			if how == "crashed" {
				sid := ""
				testutil.Eventually(t, 0, func() bool {
					b, err := r1.st.LookupBinding(context.Background(), "telegram:dm:42")
					if err != nil {
						return false
					}
					sid = b.SessionID
					d, err := r1.st.Draft(context.Background(), sid)
					return err == nil && d != ""
				}, "the partial answer kept")
				again = crashCopy(t, r1)
			}
			r1.stop()
			frozen := inDM(fake)
			if len(frozen) == 0 || frozen[0].Method != "sendMessage" {
				t.Fatalf("nothing posted before the stop: %+v", frozen)
			}
			posts := fake.CallCount("sendMessage")

			answer := "Here it is, written again from the start."
			r2 := editRig(t, fake, time.Millisecond, rigOpts{again: again, script: []llmtest.Step{llmtest.Reply{Text: answer}}})
			waitFor(t, "the answer", fake.Shown, func(m telegramtest.SentMessage) bool { return m.Plain == answer })
			waitAllSent(t, r2.st)
			var shown []telegramtest.SentMessage
			for _, m := range fake.Shown() {
				if m.ChatID == "42" {
					shown = append(shown, m)
				}
			}
			if len(shown) != 1 || shown[0].MessageID != frozen[0].MessageID || shown[0].Plain != answer {
				t.Errorf("the chat shows %+v; want the message streamed before the stop (%d) edited into the answer, alone", shown, frozen[0].MessageID)
			}
			if n := fake.CallCount("sendMessage"); n != posts {
				t.Errorf("%d messages posted after the restart, want none", n-posts)
			}
		})
	}
}

// heldAnswer is the store, whose first write of an answer to the
// owner's Telegram chat into the outbox waits until release is closed:
// before the write when first, else after it (stored says when it
// waits). A gateway killed meanwhile stopped between the answer stored
// in the transcript (and, unless first, in the outbox) and its final
// edit.
type heldAnswer struct {
	store.Store
	first   bool
	once    sync.Once
	stored  chan struct{}
	release chan struct{}
}

func (s *heldAnswer) AnswerInbound(ctx context.Context, id int64, ds ...store.Delivery) (store.Answer, error) {
	if len(ds) == 0 || ds[0].AddressKey != "telegram:dm:42" {
		return s.Store.AnswerInbound(ctx, id, ds...)
	}
	hold := func() {
		s.once.Do(func() {
			close(s.stored)
			<-s.release
		})
	}
	if s.first {
		hold()
	}
	a, err := s.Store.AnswerInbound(ctx, id, ds...)
	if err == nil {
		hold()
	}
	return a, err
}

// A gateway killed after the streamed answer was stored (in the
// transcript only, or in the outbox too) and before its final edit was
// sent leaves the edit to the next start, which finishes the message
// left half-written: the outbox keeps which message each part edits,
// and until it has the answer the platform's memory does.
func TestStreamedAnswerStoredBeforeAKillIsFinishedInPlace(t *testing.T) {
	for _, where := range []string{"transcript", "outbox"} {
		t.Run("in the "+where, func(t *testing.T) { streamedAnswerStoredBeforeAKill(t, where == "transcript") })
	}
}

func streamedAnswerStoredBeforeAKill(t *testing.T, transcriptOnly bool) {
	fake := telegramtest.New(t, botToken)
	held := &heldAnswer{first: transcriptOnly, stored: make(chan struct{}), release: make(chan struct{})}
	answer := words(40)
	// Its first words are posted, and not edited again before the answer
	// (800 ms) is stored: the stream never shows its end.
	r1 := editRig(t, fake, time.Hour, rigOpts{grace: 100 * time.Millisecond,
		wrapStore: func(st store.Store) store.Store { held.Store = st; return held },
		script:    []llmtest.Step{llmtest.Reply{Text: answer, Delay: 20 * time.Millisecond}}})
	fake.PushMessage(ownerTG, 0, ownerUser, "tell me")
	testutil.Receive(t, held.stored, "the streamed answer stored")
	again := crashCopy(t, r1)
	// The first run goes without sending anything more: its turns are
	// suspended when the store answers.
	r1.halt()
	testutil.Eventually(t, 0, func() bool { return strings.Contains(r1.logs.String(), "after the grace period") }, "the first run's grace period to pass")
	close(held.release)
	r1.stop()
	frozen := inDM(fake)
	if len(frozen) == 0 || frozen[0].Method != "sendMessage" || frozen[len(frozen)-1].Plain == answer {
		t.Fatalf("want a half-written message before the restart, got %+v", frozen)
	}
	posts := fake.CallCount("sendMessage")

	r2 := editRig(t, fake, time.Millisecond, rigOpts{again: again})
	waitFor(t, "the answer", fake.Shown, func(m telegramtest.SentMessage) bool { return m.Plain == answer })
	waitAllSent(t, r2.st)
	var shown []telegramtest.SentMessage
	for _, m := range fake.Shown() {
		if m.ChatID == "42" {
			shown = append(shown, m)
		}
	}
	if len(shown) != 1 || shown[0].MessageID != frozen[0].MessageID {
		t.Errorf("the chat shows %+v; want the streamed message (%d) edited into the answer, alone", shown, frozen[0].MessageID)
	}
	if n := fake.CallCount("sendMessage"); n != posts {
		t.Errorf("%d messages posted after the restart, want none", n-posts)
	}
}

// refusedOnce is the store, refusing the first write of an answer to the
// owner's Telegram chat into the outbox, as a locked database does.
type refusedOnce struct {
	store.Store
	refused atomic.Bool
}

func (s *refusedOnce) AnswerInbound(ctx context.Context, id int64, ds ...store.Delivery) (store.Answer, error) {
	if len(ds) > 0 && ds[0].AddressKey == "telegram:dm:42" && s.refused.CompareAndSwap(false, true) {
		return store.Answer{}, fmt.Errorf("answer inbound %d: %w", id, errors.New("database is locked (5)"))
	}
	return s.Store.AnswerInbound(ctx, id, ds...)
}

// A streamed answer the store refuses to take into the outbox is stored
// on the next try still editing the streamed message: nothing is posted
// twice.
func TestStreamedAnswerRefusedOnceStillEditsItsMessage(t *testing.T) {
	fake := telegramtest.New(t, botToken)
	refusing := &refusedOnce{}
	answer := words(40)
	r := editRig(t, fake, time.Hour, rigOpts{
		wrapStore: func(st store.Store) store.Store { refusing.Store = st; return refusing },
		script:    []llmtest.Step{llmtest.Reply{Text: answer, Delay: 20 * time.Millisecond}}})
	fake.PushMessage(ownerTG, 0, ownerUser, "tell me")
	waitFor(t, "the answer", fake.Shown, func(m telegramtest.SentMessage) bool { return m.Plain == answer })
	waitAllSent(t, r.st)
	if !refusing.refused.Load() {
		t.Fatal("the store never refused the answer")
	}
	var shown []telegramtest.SentMessage
	for _, m := range fake.Shown() {
		if m.ChatID == "42" && !strings.HasPrefix(m.Plain, "⚠️") {
			shown = append(shown, m)
		}
	}
	if len(shown) != 1 || shown[0].Plain != answer {
		t.Errorf("the chat shows %+v; want the streamed message edited into the answer, alone", shown)
	}
}
