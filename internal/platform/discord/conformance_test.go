package discord_test

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/platform"
	"github.com/baton-agent/baton/internal/platform/discord"
	"github.com/baton-agent/baton/internal/platform/discord/discordtest"
	"github.com/baton-agent/baton/internal/platform/platformtest"
	"github.com/baton-agent/baton/internal/testutil"
)

const token = "MTIz.test.token"

var owner = discordtest.User{ID: "4242", Username: "owner"}

// newAdapter points an adapter at fake, its log shown when the test fails.
func newAdapter(t *testing.T, fake *discordtest.Server, tok string) *discord.Adapter {
	t.Helper()
	logs := &testutil.SyncBuffer{}
	a, err := discord.New(discord.Config{Token: tok, APIURL: fake.APIURL(), CDNURL: fake.CDNURL(), RequestTimeout: 5 * time.Second,
		Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("adapter log:\n%s", logs.String())
		}
	})
	return a
}

func TestConformance(t *testing.T) {
	platformtest.Run(t, func(t *testing.T) platformtest.Harness {
		fake := discordtest.New(t, token)
		// Heartbeats often, so acknowledgements show soon.
		fake.SetHeartbeat(100 * time.Millisecond)
		a := newAdapter(t, fake, token)
		routes := map[string]string{
			"Typer": discordtest.RouteTyping, "Threader": discordtest.RouteStartThread, "Editor": discordtest.RouteEditMessage,
		}
		return platformtest.Harness{
			Adapter: a,
			Home:    platform.Address{Platform: discord.Name, Kind: platform.Group, Chat: fake.Home()},
			Person:  owner.ID,
			Say: func(_ context.Context, at platform.Address, sender, text string) (string, error) {
				return fake.Say(channelOf(at), discordtest.User{ID: sender, Username: "person"}, text)
			},
			SayFile: func(_ context.Context, at platform.Address, sender string, f platformtest.SaidFile) (string, error) {
				return fake.SayFile(channelOf(at), discordtest.User{ID: sender, Username: "person"},
					discordtest.File{Name: f.Name, ContentType: f.MediaType, Data: f.Data, Size: f.Size, Caption: f.Caption})
			},
			Downloads: fake.Downloads,
			Files: func(at platform.Address) []platformtest.ShownFile {
				var out []platformtest.ShownFile
				for _, p := range fake.Shown() {
					if p.ChannelID != channelOf(at) {
						continue
					}
					for _, a := range p.Attachments {
						out = append(out, platformtest.ShownFile{Name: a.Filename, Data: a.Data, Caption: p.Content, Image: a.IsImage()})
					}
				}
				return out
			},
			Acked:     fake.Acked,
			LoseSend:  func() { fake.LoseNext(discordtest.RouteCreateMessage) },
			Restarted: func(t *testing.T) platform.Adapter { return newAdapter(t, fake, token) },
			Shown: func(at platform.Address) []string {
				var out []string
				for _, p := range fake.Shown() {
					if p.ChannelID == at.Chat {
						out = append(out, p.Content)
					}
				}
				return out
			},
			Down:     fake.Down,
			Up:       fake.Up,
			FailSend: func(status int, wait time.Duration) { fake.FailNext(discordtest.RouteCreateMessage, status, wait) },
			Unsupport: func(capability string) bool {
				r, ok := routes[capability]
				if ok {
					fake.Unsupported(r)
				}
				return ok
			},
			Caps: []string{"Threader", "Typer", "Editor", "EditPacer", "Limiter", "Prober", "DownloadLimiter", "FileSender"},
		}
	})
}

var _ = http.StatusOK

// channelOf is the channel a message at an address is in.
func channelOf(at platform.Address) string {
	if at.Thread != "" {
		return at.Thread
	}
	return at.Chat
}

// A probe that finds no session starts left fails, so a down Discord is
// not restarted into an identify it would refuse; once they reset, it
// answers.
func TestProbeWaitsForSessionStarts(t *testing.T) {
	fake := discordtest.New(t, token)
	a := newAdapter(t, fake, token)
	fake.SessionStartsUsed(true)
	if err := a.Probe(t.Context()); err == nil || !strings.Contains(err.Error(), "no session starts left") {
		t.Errorf("probe with no session starts left: %v", err)
	}
	fake.SessionStartsUsed(false)
	if err := a.Probe(t.Context()); err != nil {
		t.Errorf("probe once they reset: %v", err)
	}
}
