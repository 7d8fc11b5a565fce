package gateway_test

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/gateway/control"
	"github.com/baton-agent/baton/internal/llm/llmtest"
	"github.com/baton-agent/baton/internal/platform"
	"github.com/baton-agent/baton/internal/platform/telegram"
	"github.com/baton-agent/baton/internal/platform/telegram/telegramtest"
	"github.com/baton-agent/baton/internal/platform/web"
	"github.com/baton-agent/baton/internal/testutil"
)

// A forum that refuses topics (the bot may not manage them there) does
// not switch topics off in another forum of the same Telegram bot: the
// refusal belongs to that group.
func TestTopicsRefusedInOneGroupStillOpenInAnother(t *testing.T) {
	const noRights, withTopics = -100111, -100222
	fake := telegramtest.New(t, botToken)
	fake.AddChat(telegramtest.Chat{ID: noRights, Type: telegramtest.Supergroup, Title: "no rights", IsForum: true, NoTopicRights: true})
	fake.AddChat(telegramtest.Chat{ID: withTopics, Type: telegramtest.Supergroup, Title: "topics", IsForum: true})
	tg, err := telegram.New(telegram.Config{Token: botToken, ServerURL: fake.URL(), PollTimeout: time.Second,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	first := platform.Address{Platform: "telegram", Kind: platform.Group, Chat: "-100111"}
	second := platform.Address{Platform: "telegram", Kind: platform.Group, Chat: "-100222"}
	r := newRig(t, rigOpts{
		extra:  []platform.Adapter{tg},
		owners: map[string][]string{"telegram": {"42"}},
		homes:  map[string]string{"web": web.Home.Key(), "telegram": first.Key()},
	})
	r.waitLive(t, "telegram")
	ctx := context.Background()

	handoff := func(greeting string) control.Progress {
		t.Helper()
		r.model.Push(llmtest.Reply{Text: greeting})
		h, err := r.client.RequestHandoff(ctx, control.HandoffRequest{SessionID: r.terminalSession(t).ID, From: "cli", To: "telegram"})
		if err != nil {
			t.Fatal(err)
		}
		final, err := r.client.Watch(ctx, h.ID, nil)
		if err != nil || final.State != "completed" {
			t.Fatalf("handoff %+v %v", final, err)
		}
		if !testutil.Poll(testutil.Context(t, 0), func() bool {
			for _, m := range fake.Shown() {
				if strings.Contains(m.Plain, greeting) {
					return true
				}
			}
			return false
		}) {
			t.Fatalf("the greeting %q never came; sent %+v", greeting, fake.Shown())
		}
		return final
	}

	// The first group refuses: the handoff lands in it, without a topic.
	if final := handoff("Here in the first group."); final.Destination != first.Key() {
		t.Fatalf("destination %q, want the first group itself", final.Destination)
	}
	if topics := fake.Topics(); len(topics) != 0 {
		t.Fatalf("topics %+v in a group that refuses them", topics)
	}

	// Handoffs now land in the second group, which has topics: it gets one.
	if err := r.st.SetHomeChannel(ctx, "telegram", second.Key()); err != nil {
		t.Fatal(err)
	}
	final := handoff("Here in a topic of the second group.")
	topics := fake.Topics()
	if len(topics) != 1 || topics[0].ChatID != second.Chat {
		t.Fatalf("topics %+v, want one in the second group (destination %q)", topics, final.Destination)
	}
	dest, err := platform.ParseKey(final.Destination)
	if err != nil || dest.Chat != second.Chat || dest.Thread != itoa(int64(topics[0].ThreadID)) {
		t.Fatalf("destination %q (%v), want the topic %d", final.Destination, err, topics[0].ThreadID)
	}
}
