package gateway_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/gateway/control"
	"github.com/baton-agent/baton/internal/llm/llmtest"
	"github.com/baton-agent/baton/internal/platform"
	"github.com/baton-agent/baton/internal/platform/discord"
	"github.com/baton-agent/baton/internal/platform/discord/discordtest"
	"github.com/baton-agent/baton/internal/platform/web"
	"github.com/baton-agent/baton/internal/testutil"
)

const discordToken = "MTIz.gateway.test"

var discordOwner = discordtest.User{ID: "4242", Username: "owner"}

func discordRig(t *testing.T, fake *discordtest.Server) *rig {
	t.Helper()
	dc, err := discord.New(discord.Config{Token: discordToken, APIURL: fake.APIURL(), RequestTimeout: 5 * time.Second,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	r := newRig(t, rigOpts{
		extra:  []platform.Adapter{dc},
		owners: map[string][]string{"discord": {discordOwner.ID}},
		homes:  map[string]string{"web": web.Home.Key(), "discord": "discord:group:" + fake.Home()},
	})
	r.waitLive(t, "discord")
	return r
}

// shown waits until the bot shows a message that matches, and returns it.
func shown(t *testing.T, fake *discordtest.Server, what string, match func(discordtest.Post) bool) discordtest.Post {
	t.Helper()
	var found discordtest.Post
	ok := fake.Wait(testutil.Context(t, 0), func() bool {
		for _, p := range fake.Shown() {
			if match(p) {
				found = p
				return true
			}
		}
		return false
	}) == nil
	if !ok {
		t.Fatalf("the bot never showed %s; it showed %+v", what, fake.Shown())
	}
	return found
}

func in(channel, sub string) func(discordtest.Post) bool {
	return func(p discordtest.Post) bool { return p.ChannelID == channel && strings.Contains(p.Content, sub) }
}

// settled waits until the session's transcript ends with answer: a reply
// streamed by edits shows before the turn is stored.
func handOff(t *testing.T, r *rig, sessionID, to string) control.Progress {
	t.Helper()
	ctx := testutil.Context(t, 0)
	h, err := r.client.RequestHandoff(ctx, control.HandoffRequest{SessionID: sessionID, From: "cli", To: to})
	if err != nil {
		t.Fatal(err)
	}
	final, err := r.client.Watch(ctx, h.ID, nil)
	if err != nil || final.State != "completed" {
		t.Fatalf("handoff %+v %v", final, err)
	}
	return final
}

func TestDiscordHandoffThreadAndBack(t *testing.T) {
	fake := discordtest.New(t, discordToken)
	r := discordRig(t, fake)
	sess := r.terminalSession(t)
	ctx := context.Background()
	home := fake.Home()

	// Terminal → /handoff discord: a thread in the home channel named
	// after the session, archived after a day, the greeting in it.
	r.model.Push(llmtest.Reply{Text: "Hi on Discord — we were booking the 9:40 train."})
	final := handOff(t, r, sess.ID, "discord")
	threads := fake.Threads()
	if len(threads) != 1 || !strings.HasPrefix(threads[0].Name, "Trip planning") || threads[0].ParentID != home || threads[0].Archive != 1440 {
		t.Fatalf("threads %+v", threads)
	}
	thread := threads[0].ID
	if final.Destination != "discord:thread:"+home+":"+thread {
		t.Fatalf("destination %q, thread %s under %s", final.Destination, thread, home)
	}
	shown(t, fake, "the greeting in the thread", in(thread, "Hi on Discord"))

	// The person's reply in the thread continues the same session, with
	// the whole transcript.
	r.model.Push(llmtest.Reply{Text: "Done, it is booked."})
	if _, err := fake.Say(thread, discordOwner, "book it please"); err != nil {
		t.Fatal(err)
	}
	shown(t, fake, "the answer", in(thread, "Done, it is booked."))
	if b, err := r.st.LookupBinding(ctx, final.Destination); err != nil || b.SessionID != sess.ID {
		t.Fatalf("the thread is bound to %+v (%v), want session %s", b, err, sess.ID)
	}
	msgs := settled(t, r, sess.ID, "Done, it is booked.")
	if m := msgs[len(msgs)-2]; m.Content != "book it please" || m.Platform != "discord" {
		t.Fatalf("the thread's message went to %+v", m)
	}
	if msgs[0].Content != "plan a trip to Lisbon" {
		t.Errorf("the transcript lost its start: %+v", msgs[0])
	}
	reqs := r.model.Requests()
	body, _ := json.Marshal(reqs[len(reqs)-1])
	for _, want := range []string{"plan a trip to Lisbon", "Noted: the 9:40 train.", "Hi on Discord", "book it please"} {
		if !strings.Contains(string(body), want) {
			t.Errorf("the model was not shown %q", want)
		}
	}

	// Nothing the bot posted could ping anyone, and nothing was posted in
	// the home channel: the conversation stayed in its thread.
	for _, p := range fake.Posts() {
		if len(p.Pings) > 0 || !strings.Contains(p.AllowedMentions, `"parse":[]`) {
			t.Errorf("a post could ping %v (allowed_mentions %s)", p.Pings, p.AllowedMentions)
		}
		if p.ChannelID == home {
			t.Errorf("posted in the home channel: %+v", p)
		}
	}
}
