package imessage_test

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/platform"
	"github.com/baton-agent/baton/internal/platform/imessage"
	"github.com/baton-agent/baton/internal/platform/imessage/imessagetest"
	"github.com/baton-agent/baton/internal/platform/platformtest"
)

const (
	password = "bb-server-password"
	owner    = "+15550001111"
)

// newAdapter is an adapter for fake, its webhook set in the fake.
func newAdapter(t *testing.T, fake *imessagetest.Server, privateAPI bool) *imessage.Adapter {
	t.Helper()
	a, err := imessage.New(imessage.Config{
		URL: fake.URL(), Password: password, Listen: "127.0.0.1:0", PrivateAPI: privateAPI,
		WebhookSecret: "hook-secret", CheckEvery: 50 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	fake.SetWebhook(a.WebhookURL())
	return a
}

func TestConformance(t *testing.T) {
	platformtest.Run(t, func(t *testing.T) platformtest.Harness {
		fake := imessagetest.New(t, password)
		fake.EnablePrivateAPI()
		return platformtest.Harness{
			Adapter: newAdapter(t, fake, true),
			Home:    platform.Address{Platform: imessage.Name, Kind: platform.DM, Chat: imessagetest.DM(owner)},
			Person:  owner,
			Say: func(_ context.Context, at platform.Address, sender, text string) (string, error) {
				return fake.Receive(sender, at.Chat, text), nil
			},
			Down:     fake.Down,
			Up:       fake.Up,
			FailSend: func(status int, wait time.Duration) { fake.FailNext("message/text", status, wait) },
			Unsupport: func(capability string) bool {
				if capability != "Typer" {
					return false
				}
				fake.Unsupported("chat/typing")
				return true
			},
			SayFile: func(_ context.Context, at platform.Address, sender string, f platformtest.SaidFile) (string, error) {
				return fake.ReceiveFile(sender, at.Chat, imessagetest.Attachment{TransferName: f.Name, MimeType: f.MediaType, TotalBytes: f.Size, Data: f.Data}, f.Caption), nil
			},
			Downloads: fake.Downloads,
			Files:     func(at platform.Address) []platformtest.ShownFile { return shownFiles(fake, at.Chat) },
			Caps:      []string{"Typer", "Limiter", "DownloadLimiter", "FileSender"},
		}
	})
}

// shownFiles is each file baton sent to chat as the phone shows it: a
// picture inline, anything else by its name, and the text baton sent
// right after it as its caption (BlueBubbles takes no text with a file).
func shownFiles(fake *imessagetest.Server, chat string) []platformtest.ShownFile {
	var sent []imessagetest.Message
	for _, m := range fake.Sent() {
		if len(m.Chats) > 0 && m.Chats[0].GUID == chat {
			sent = append(sent, m)
		}
	}
	var out []platformtest.ShownFile
	for i, m := range sent {
		for _, a := range m.Attachments {
			f := platformtest.ShownFile{Name: a.TransferName, Data: a.Data, Image: strings.HasPrefix(a.MimeType, "image/")}
			if i+1 < len(sent) && len(sent[i+1].Attachments) == 0 {
				f.Caption = sent[i+1].Text
			}
			out = append(out, f)
		}
	}
	return out
}
