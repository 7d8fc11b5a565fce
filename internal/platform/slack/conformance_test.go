package slack_test

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/platform"
	"github.com/baton-agent/baton/internal/platform/platformtest"
	"github.com/baton-agent/baton/internal/platform/slack"
	"github.com/baton-agent/baton/internal/platform/slack/slacktest"
	"github.com/baton-agent/baton/internal/testutil"
)

const (
	botToken = "xoxb-1-test"
	appToken = "xapp-1-test"
	owner    = "U0OWNER"
	channel  = "C0HOME"
)

// newAdapter is an adapter pointed at fake, its log shown if t fails.
func newAdapter(t *testing.T, fake *slacktest.Server) *slack.Adapter {
	t.Helper()
	return newAdapterWith(t, fake, nil)
}

// newAdapterWith is newAdapter keeping what lasts across restarts in mem.
func newAdapterWith(t *testing.T, fake *slacktest.Server, mem platform.Memory) *slack.Adapter {
	t.Helper()
	logs := &testutil.SyncBuffer{}
	a, err := slack.New(slack.Config{
		BotToken: botToken, AppToken: appToken, APIURL: fake.APIURL(), FilesURL: fake.FilesURL(),
		Logger: slog.New(slog.NewTextHandler(logs, nil)), Memory: mem,
	})
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
		fake := slacktest.New(t, botToken, appToken)
		mem := platformtest.NewMemory()
		a := newAdapterWith(t, fake, mem)
		var mu sync.Mutex
		envelopes := map[string]string{} // event id → the envelope that carried it
		// Only edits can be refused alone here: a thread's root is an
		// ordinary post (refusing it refuses every Send), and typing is
		// shown in threads only, not at the harness's home; both are
		// refused in TestOptionalMethodsRefused instead.
		methods := map[string]string{"Editor": "chat.update"}
		return platformtest.Harness{
			Adapter: a,
			Home:    platform.Address{Platform: slack.Name, Kind: platform.Group, Chat: channel},
			Person:  owner,
			Say: func(_ context.Context, at platform.Address, sender, text string) (string, error) {
				ts, env := fake.PushMessage(slacktest.Message{Channel: at.Chat, User: sender, Text: text, ThreadTS: at.Thread})
				id := at.Chat + ":" + ts
				mu.Lock()
				envelopes[id] = env
				mu.Unlock()
				return id, nil
			},
			SayFile: func(_ context.Context, at platform.Address, sender string, f platformtest.SaidFile) (string, error) {
				ts, env := fake.PushFile(slacktest.Message{Channel: at.Chat, User: sender, Text: f.Caption, ThreadTS: at.Thread},
					slacktest.File{Name: f.Name, Mimetype: f.MediaType, Data: f.Data, Size: f.Size})
				id := at.Chat + ":" + ts
				mu.Lock()
				envelopes[id] = env
				mu.Unlock()
				return id, nil
			},
			Downloads: fake.Downloads,
			Files: func(at platform.Address) []platformtest.ShownFile {
				var out []platformtest.ShownFile
				for _, f := range fake.Shares() {
					if f.Channel == at.Chat && f.ThreadTS == at.Thread {
						out = append(out, platformtest.ShownFile{Name: f.Name, Data: f.Data, Caption: f.Comment, Image: f.IsImage()})
					}
				}
				return out
			},
			Acked: func(id string) bool {
				mu.Lock()
				env, ok := envelopes[id]
				mu.Unlock()
				return ok && fake.Acked(env)
			},
			LoseSend: func() {
				fake.LoseNext("chat.postMessage")
				fake.LoseNext("files.completeUploadExternal")
			},
			Restarted: func(t *testing.T) platform.Adapter { return newAdapterWith(t, fake, mem) },
			Shown: func(at platform.Address) []string {
				var out []string
				for _, p := range fake.Shown() {
					if p.Channel == at.Chat && p.ThreadTS == at.Thread {
						out = append(out, p.Text)
					}
				}
				return out
			},
			Down:     fake.Down,
			Up:       fake.Up,
			FailSend: func(status int, wait time.Duration) { fake.FailNext("chat.postMessage", status, wait) },
			Unsupport: func(capability string) bool {
				m, ok := methods[capability]
				if ok {
					fake.Unsupported(m)
				}
				return ok
			},
			Caps: []string{"Threader", "Typer", "Editor", "EditPacer", "Limiter", "Prober", "DownloadLimiter", "FileSender"},
		}
	})
}
