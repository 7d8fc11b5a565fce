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
				since := mem.since()
				if since == "" {
					return false
				}
				again, err := w.Bot.SyncedAfter(context.Background(), since, id)
				return err == nil && !again
			},
			Down:     proxy.Down,
			Up:       proxy.Up,
			FailSend: func(status int, wait time.Duration) { proxy.FailNext("send", status, wait) },
			Unsupport: func(capability string) bool {
				m, ok := methods[capability]
				if ok {
					proxy.Unsupported(m)
				}
				return ok
			},
			Caps: []string{"Threader", "Typer", "Editor", "EditPacer", "Limiter"},
		}
	})
}
