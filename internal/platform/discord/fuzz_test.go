package discord

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/baton-agent/baton/internal/platform"
)

// Any MESSAGE_CREATE payload decodes without panicking; what is handed to
// the gateway is a person's message with text or files (never the bot's
// own, a bot's, a webhook's or a system message), with its id and
// author, at the channel it was said in.
func FuzzMessage(f *testing.F) {
	for _, s := range []string{
		`{"id":"1","channel_id":"dm1","author":{"id":"42","username":"owner"},"content":"hello","timestamp":"2026-11-23T10:00:00Z"}`,
		`{"id":"2","channel_id":"c1","guild_id":"g1","type":19,"author":{"id":"42","username":"owner","global_name":"Owner"},"content":"<@7> /handoff cli"}`,
		`{"id":"3","channel_id":"t1","guild_id":"g1","author":{"id":"42"},"content":"in a thread"}`,
		`{"id":"4","channel_id":"c1","guild_id":"g1","author":{"id":"7"},"content":"my own"}`,
		`{"id":"5","channel_id":"c1","guild_id":"g1","author":{"id":"9","bot":true},"content":"a bot"}`,
		`{"id":"6","channel_id":"c1","guild_id":"g1","webhook_id":"w","author":{"id":"9"},"content":"a hook"}`,
		`{"id":"7","channel_id":"c1","guild_id":"g1","type":7,"author":{"id":"42"},"content":"joined"}`,
		`{"id":"8","channel_id":"c1","author":{"id":"42"},"content":"   "}`,
		`{"id":"10","channel_id":"c1","guild_id":"g1","author":{"id":"42"},"content":"","attachments":[{"id":"11","filename":"a.png","content_type":"image/png","size":5,"url":"https://cdn.discordapp.com/attachments/c1/11/a.png?ex=1&is=1&hm=x&"}]}`,
		`{"id":"12","channel_id":"c1","guild_id":"g1","author":{"id":"42"},"content":"x","attachments":[{"id":""},{"filename":7}]}`,
		`{"id":9}`, `[]`, `null`, `"x"`,
	} {
		f.Add([]byte(s))
	}
	a, err := New(Config{Token: "MTIz.test.token", APIURL: "http://127.0.0.1:1/api/v10"})
	if err != nil {
		f.Fatal(err)
	}
	a.botID = "7"
	// Known channels only: an unknown guild channel would be looked up
	// over REST.
	a.learn(wireChannel{ID: "c1", Type: 0, GuildID: "g1"})
	a.learn(wireChannel{ID: "t1", Type: 11, GuildID: "g1", ParentID: "c1"})
	known := map[string]bool{"c1": true, "t1": true}
	f.Fuzz(func(t *testing.T, raw []byte) {
		var m wireMessage
		if json.Unmarshal(raw, &m) == nil && m.GuildID != "" && !known[m.ChannelID] {
			return
		}
		var got []platform.Event
		c := &conn{a: a, r: platform.ReceiverFunc(func(_ context.Context, ev platform.Event) error {
			got = append(got, ev)
			return nil
		})}
		if err := c.message(context.Background(), raw); err != nil {
			t.Fatalf("message %s: %v", raw, err)
		}
		for _, ev := range got {
			if ev.ID == "" || ev.ID != m.ID || ev.SenderID != m.Author.ID || ev.SenderID == "7" || m.Author.Bot || m.Author.System || m.WebhookID != "" {
				t.Fatalf("message %s handed over as %+v", raw, ev)
			}
			for _, att := range ev.Attachments {
				if att.Open == nil || (att.Kind != platform.KindPhoto && att.Kind != platform.KindDocument) {
					t.Fatalf("message %s handed over with attachment %+v", raw, att)
				}
			}
			if ev.At.Platform != Name || strings.TrimSpace(ev.Text) == "" && len(ev.Attachments) == 0 {
				t.Fatalf("message %s handed over at %+v with text %q", raw, ev.At, ev.Text)
			}
			if ev.At.Kind == platform.Thread && (ev.At.Thread != m.ChannelID || ev.At.Chat != "c1") {
				t.Fatalf("thread message %s at %+v", raw, ev.At)
			}
		}
	})
}
