package signal_test

import (
	"context"
	"io"
	"log/slog"
	"strings"
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
			SayFile: func(_ context.Context, at platform.Address, sender string, f platformtest.SaidFile) (string, error) {
				group := ""
				if at.Kind == platform.Group {
					group = at.Chat
				}
				return fake.PushFiles(sender, "Owner", group, f.Caption,
					signaltest.File{Filename: f.Name, ContentType: f.MediaType, Data: f.Data, Size: f.Size}), nil
			},
			Downloads: fake.Downloads,
			Files:     func(at platform.Address) []platformtest.ShownFile { return shownFiles(fake, at) },
			Caps:      []string{"Typer", "Limiter", "DownloadLimiter", "FileSender"},
		}
	})
}

// shownFiles is every attachment the daemon sent to an address, with the
// message's text as its caption; an image type is shown as a picture.
func shownFiles(fake *signaltest.Server, at platform.Address) []platformtest.ShownFile {
	var out []platformtest.ShownFile
	for _, s := range fake.Sent() {
		if at.Kind == platform.Group && s.GroupID != at.Chat || at.Kind == platform.DM && (len(s.Recipients) != 1 || s.Recipients[0] != at.Chat) {
			continue
		}
		for _, f := range s.Attachments {
			out = append(out, platformtest.ShownFile{Name: f.Filename, Data: f.Data, Caption: s.Message,
				Image: strings.HasPrefix(f.ContentType, "image/")})
		}
	}
	return out
}
