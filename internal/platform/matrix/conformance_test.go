package matrix_test

import (
	"context"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/platform"
	"github.com/baton-agent/baton/internal/platform/matrix/matrixtest"
	"github.com/baton-agent/baton/internal/platform/platformtest"
)

// TestConformance runs the adapters' suite against a real Dendrite; a
// fakekit proxy in front of it takes the homeserver down and fails calls
// on demand.
func TestConformance(t *testing.T) {
	platformtest.Run(t, func(t *testing.T) platformtest.Harness {
		w := newWorld(t)
		proxy := matrixtest.NewProxy(t, w.hs)
		mem := newMemory()
		a := w.adapter(t, proxy.URL(), mem)
		methods := map[string]string{"Typer": "typing", "Editor": "edit"}
		return platformtest.Harness{
			Adapter: a,
			Home:    w.home,
			Person:  w.Owner.ID,
			Say: func(ctx context.Context, at platform.Address, sender, text string) (string, error) {
				u := w.Owner
				if sender == w.Stranger.ID {
					u = w.Stranger
				}
				if at.Thread != "" {
					return u.SayInThread(ctx, at.Chat, at.Thread, "", text)
				}
				return u.Say(ctx, at.Chat, text)
			},
			// Acknowledged: the stored sync token is past the event, so a
			// restart would not read it again.
			Acked: func(id string) bool {
				since := since(mem)
				if since == "" {
					return false
				}
				again, err := w.Bot.SyncedAfter(context.Background(), since, id)
				return err == nil && !again
			},
			Down:      proxy.Down,
			Up:        proxy.Up,
			FailSend:  func(status int, wait time.Duration) { proxy.FailNext("send", status, wait) },
			LoseSend:  func() { proxy.LoseNext("send") },
			Restarted: func(t *testing.T) platform.Adapter { return w.adapter(t, w.hs.URL(), newMemory()) },
			Shown: func(at platform.Address) []string {
				msgs, err := w.Owner.Messages(context.Background(), at.Chat)
				if err != nil {
					return nil
				}
				return botBodies(w, msgs)
			},
			Unsupport: func(capability string) bool {
				m, ok := methods[capability]
				if ok {
					proxy.Unsupported(m)
				}
				return ok
			},
			SayFile: func(ctx context.Context, at platform.Address, sender string, f platformtest.SaidFile) (string, error) {
				u := w.Owner
				if sender == w.Stranger.ID {
					u = w.Stranger
				}
				return u.SayFile(ctx, at.Chat, at.Thread, f.Name, f.MediaType, f.Caption, f.Data, f.Size)
			},
			Downloads: func() int { return proxy.CallCount("download") },
			Files: func(at platform.Address) []platformtest.ShownFile {
				return shownFiles(w, at)
			},
			Caps: []string{"Threader", "Typer", "Editor", "EditPacer", "Limiter", "Prober", "DownloadLimiter", "FileSender"},
		}
	})
}

// botBodies is the bot's messages among msgs, in order.
func botBodies(w *world, msgs []matrixtest.Message) []string {
	var out []string
	for _, m := range msgs {
		if m.Sender == w.Bot.ID {
			out = append(out, m.Body)
		}
	}
	return out
}

// shownFiles is the bot's files at an address, as a person's client
// shows them: in the thread for a thread, outside threads for the room.
func shownFiles(w *world, at platform.Address) []platformtest.ShownFile {
	ctx := context.Background()
	msgs, err := w.Owner.Messages(ctx, at.Chat)
	if err != nil {
		return nil
	}
	var out []platformtest.ShownFile
	for _, m := range msgs {
		f, ok := matrixtest.FileOf(m)
		if !ok || m.Sender != w.Bot.ID || m.Thread != at.Thread {
			continue
		}
		data, err := w.Owner.Download(ctx, f.URL)
		if err != nil {
			return nil
		}
		out = append(out, platformtest.ShownFile{Name: f.Name, Data: data, Caption: f.Caption, Image: f.MsgType == "m.image"})
	}
	return out
}
