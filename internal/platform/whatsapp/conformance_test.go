package whatsapp_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/platform"
	"github.com/baton-agent/baton/internal/platform/platformtest"
	"github.com/baton-agent/baton/internal/platform/whatsapp"
	"github.com/baton-agent/baton/internal/platform/whatsapp/whatsapptest"
)

const self = "4915550000@s.whatsapp.net"

func newAdapter(t *testing.T, fake *whatsapptest.Fake, home string) *whatsapp.Adapter {
	t.Helper()
	a, err := whatsapp.New(whatsapp.Config{Client: fake, Home: home, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// The suite runs against the in-memory fake: FailSend makes it answer
// with WhatsApp's server codes (the HTTP-like statuses whatsmeow reports),
// which the adapter classifies as the suite expects.
func TestConformance(t *testing.T) {
	t.Run("in-process", func(t *testing.T) { conformance(t, false) })
	t.Run("through-baton-whatsapp", func(t *testing.T) { conformance(t, true) })
}

// conformance runs the suite with the adapter talking to the fake
// directly, or through baton-whatsapp's protocol (Serve on pipes) as the
// gateway does.
func conformance(t *testing.T, piped bool) {
	platformtest.Run(t, func(t *testing.T) platformtest.Harness {
		fake := whatsapptest.New(self)
		// adapter is one run of the adapter on the fake account.
		adapter := func(t *testing.T) platform.Adapter {
			var client whatsapp.Client = fake
			if piped {
				p, _, err := whatsapp.StartPiped(t.Context(), fake, nil, slog.New(slog.DiscardHandler))
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { p.Close() })
				client = p
			}
			a, err := whatsapp.New(whatsapp.Config{Client: client, Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				t.Fatal(err)
			}
			return a
		}
		a := adapter(t)
		return platformtest.Harness{
			Adapter: a,
			Home:    whatsapp.HomeAddress(self),
			Person:  self,
			Say: func(_ context.Context, at platform.Address, sender, text string) (string, error) {
				id := fake.Push(whatsapp.Message{Chat: at.Chat, Sender: sender, SenderName: "Owner", FromMe: sender == self, Text: text})
				return at.Chat + "/" + id, nil
			},
			Acked: func(id string) bool {
				_, msgID, _ := cut(id)
				return fake.Acked(msgID)
			},
			Down:      fake.Down,
			Up:        fake.Up,
			FailSend:  func(status int, wait time.Duration) { fake.FailNextSend(status, wait) },
			LoseSend:  fake.LoseNextSend,
			Restarted: adapter,
			Shown: func(at platform.Address) []string {
				var out []string
				for _, m := range fake.Shown() {
					if m.Chat == at.Chat && m.File == nil {
						out = append(out, m.Text)
					}
				}
				return out
			},
			SayFile: func(_ context.Context, at platform.Address, sender string, f platformtest.SaidFile) (string, error) {
				id := fake.PushFile(whatsapp.Message{Chat: at.Chat, Sender: sender, SenderName: "Owner", FromMe: sender == self, Text: f.Caption},
					whatsapp.Media{Kind: platform.KindDocument, Name: f.Name, MediaType: f.MediaType, Size: f.Size}, f.Data)
				return at.Chat + "/" + id, nil
			},
			Downloads: fake.Downloads,
			Files: func(at platform.Address) []platformtest.ShownFile {
				var out []platformtest.ShownFile
				for _, m := range fake.Shown() {
					if m.Chat == at.Chat && m.File != nil {
						out = append(out, platformtest.ShownFile{Name: m.File.Name, Data: m.File.Data, Caption: m.Text, Image: m.File.Image})
					}
				}
				return out
			},
			Unsupport: func(capability string) bool {
				if capability != "Typer" {
					return false
				}
				fake.NoPresence()
				return true
			},
			Caps: []string{"Typer", "Limiter", "DownloadLimiter", "FileSender"},
		}
	})
}

func cut(id string) (string, string, bool) {
	for i := len(id) - 1; i >= 0; i-- {
		if id[i] == '/' {
			return id[:i], id[i+1:], true
		}
	}
	return "", id, false
}
