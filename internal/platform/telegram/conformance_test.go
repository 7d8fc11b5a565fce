package telegram_test

import (
	"context"
	"log/slog"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/platform"
	"github.com/baton-agent/baton/internal/platform/platformtest"
	"github.com/baton-agent/baton/internal/platform/telegram"
	"github.com/baton-agent/baton/internal/platform/telegram/telegramtest"
	"github.com/baton-agent/baton/internal/testutil"
)

// forum is the harness's home: a forum supergroup, so NewThread opens
// topics there.
const forum = -100777

func TestConformance(t *testing.T) {
	platformtest.Run(t, func(t *testing.T) platformtest.Harness {
		srv := telegramtest.New(t, token)
		srv.AddChat(telegramtest.Chat{ID: forum, Type: telegramtest.Supergroup, Title: "work", IsForum: true})
		logs := &testutil.SyncBuffer{}
		tg, err := telegram.New(telegram.Config{
			Token: token, ServerURL: srv.URL(), PollTimeout: time.Second,
			Logger: slog.New(slog.NewTextHandler(logs, nil)),
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if t.Failed() {
				t.Logf("adapter log:\n%s", logs.String())
			}
		})
		var mu sync.Mutex
		updates := map[string]int64{} // event id → the update that carried it
		where := func(at platform.Address) (chat int64, thread int, err error) {
			if chat, err = strconv.ParseInt(at.Chat, 10, 64); err != nil {
				return 0, 0, err
			}
			if at.Thread != "" {
				thread, err = strconv.Atoi(at.Thread)
			}
			return chat, thread, err
		}
		methods := map[string]string{
			"Typer": "sendChatAction", "Threader": "createForumTopic",
			"Commander": "setMyCommands", "Editor": "editMessageText",
		}
		return platformtest.Harness{
			Adapter: tg,
			Home:    platform.Address{Platform: telegram.Name, Kind: platform.Group, Chat: strconv.Itoa(forum)},
			Person:  strconv.FormatInt(owner.ID, 10),
			Say: func(_ context.Context, at platform.Address, sender, text string) (string, error) {
				chat, thread, err := where(at)
				if err != nil {
					return "", err
				}
				from := owner
				if from.ID, err = strconv.ParseInt(sender, 10, 64); err != nil {
					return "", err
				}
				upd, msg := srv.PushMessage(chat, thread, from, text)
				id := at.Chat + ":" + strconv.Itoa(msg)
				mu.Lock()
				updates[id] = upd
				mu.Unlock()
				return id, nil
			},
			SayFile: func(_ context.Context, at platform.Address, sender string, f platformtest.SaidFile) (string, error) {
				chat, thread, err := where(at)
				if err != nil {
					return "", err
				}
				from := owner
				if from.ID, err = strconv.ParseInt(sender, 10, 64); err != nil {
					return "", err
				}
				upd, msg := srv.PushFile(chat, thread, from, telegramtest.File{
					Kind: telegramtest.Document, Name: f.Name, MimeType: f.MediaType, Data: f.Data, Caption: f.Caption, Size: f.Size,
				})
				id := at.Chat + ":" + strconv.Itoa(msg)
				mu.Lock()
				updates[id] = upd
				mu.Unlock()
				return id, nil
			},
			Downloads: srv.Downloads,
			Files: func(at platform.Address) []platformtest.ShownFile {
				chat, thread, err := where(at)
				if err != nil {
					t.Fatal(err)
				}
				var out []platformtest.ShownFile
				for _, f := range srv.SentFiles() {
					if f.ChatID == strconv.FormatInt(chat, 10) && f.ThreadID == thread {
						out = append(out, platformtest.ShownFile{Name: f.Name, Data: f.Data, Caption: f.Caption, Image: f.Photo()})
					}
				}
				return out
			},
			Acked: func(id string) bool {
				mu.Lock()
				upd, ok := updates[id]
				mu.Unlock()
				return ok && srv.Confirmed() > upd
			},
			Down:     srv.Down,
			Up:       srv.Up,
			FailSend: func(status int, wait time.Duration) { srv.FailNext("sendMessage", status, int(wait/time.Second)) },
			Unsupport: func(capability string) bool {
				m, ok := methods[capability]
				if ok {
					srv.Unsupported(m)
				}
				return ok
			},
			Caps: []string{"Threader", "Typer", "Editor", "EditPacer", "Limiter", "Commander", "Prober", "DownloadLimiter", "FileSender"},
		}
	})
}
