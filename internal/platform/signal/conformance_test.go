package signal_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/platform"
	"github.com/baton-agent/baton/internal/platform/platformtest"
	"github.com/baton-agent/baton/internal/platform/signal"
	"github.com/baton-agent/baton/internal/platform/signal/signaltest"
)

const (
	account = "+4915550000"
	owner   = "+4915550001"
)

func newAdapter(t *testing.T, fake *signaltest.Server) *signal.Adapter {
	t.Helper()
	a, err := signal.New(signal.Config{URL: fake.URL(), Account: account, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestConformance(t *testing.T) {
	platformtest.Run(t, func(t *testing.T) platformtest.Harness {
		fake := signaltest.New(t, account)
		return platformtest.Harness{
			Adapter: newAdapter(t, fake),
			Home:    platform.Address{Platform: signal.Name, Kind: platform.DM, Chat: owner},
			Person:  owner,
			Say: func(_ context.Context, at platform.Address, sender, text string) (string, error) {
				group := ""
				if at.Kind == platform.Group {
					group = at.Chat
				}
				return fake.PushMessage(sender, "Owner", group, text), nil
			},
			Down:     fake.Down,
			Up:       fake.Up,
			FailSend: func(status int, wait time.Duration) { fake.FailNext("send", status, wait) },
			Unsupport: func(capability string) bool {
				if capability != "Typer" {
					return false
				}
				fake.Unsupported("sendTyping")
				return true
			},
			Caps: []string{"Typer", "Limiter"},
		}
	})
}
