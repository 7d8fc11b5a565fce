package slack_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/baton-agent/baton/internal/platform"
	"github.com/baton-agent/baton/internal/platform/platformtest"
	"github.com/baton-agent/baton/internal/platform/slack"
	"github.com/baton-agent/baton/internal/platform/slack/slacktest"
	"github.com/baton-agent/baton/internal/testutil"
)

func readAll(t *testing.T, att platform.Attachment) ([]byte, error) {
	t.Helper()
	rc, err := att.Open(t.Context())
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return io.ReadAll(rc)
}

// A picture shared alone in a thread arrives as a photo in that thread,
// read with the bot token from the file host; a token without files:read
// gets Slack's sign-in page, refused for good with the scope to add; an
// adapter that knows the file host elsewhere never fetches the file.
func TestFilesReadFromTheFileHostOnly(t *testing.T) {
	fake := slacktest.New(t, botToken, appToken)
	a := newAdapter(t, fake)
	b := &inbox{}
	supervise(t, a, b)
	testutil.Eventually(t, testutil.Patience, func() bool { return fake.OpenSockets() == 1 }, "the socket")

	pic := platformtest.SamplePNG()
	root, _ := fake.PushMessage(slacktest.Message{Channel: channel, User: owner, Text: "a thread"})
	ts, _ := fake.PushFile(slacktest.Message{Channel: channel, User: owner, ThreadTS: root},
		slacktest.File{Name: "shot.png", Mimetype: "image/png", Data: pic})
	ev := b.event(t, channel+":"+ts)
	want := platform.Address{Platform: slack.Name, Kind: platform.Thread, Chat: channel, Thread: root}
	if ev.At != want || ev.Text != "" || len(ev.Attachments) != 1 {
		t.Fatalf("a picture alone arrived as %+v", ev)
	}
	att := ev.Attachments[0]
	if att.Kind != platform.KindPhoto || att.Name != "shot.png" || att.MediaType != "image/png" || att.Size != int64(len(pic)) || att.ID == "" {
		t.Errorf("the picture is described as %+v", att)
	}
	if data, err := readAll(t, att); err != nil || !bytes.Equal(data, pic) {
		t.Errorf("the picture read back as %d bytes: %v", len(data), err)
	}

	fake.WithoutFilesScope()
	_, err := readAll(t, att)
	if !errors.Is(err, platform.ErrPermanent) || !strings.Contains(err.Error(), "files:read") || strings.Contains(err.Error(), botToken) {
		t.Errorf("a token without files:read: %v, want a permanent refusal naming the scope", err)
	}

	elsewhere, err := slack.New(slack.Config{BotToken: botToken, AppToken: appToken, APIURL: fake.APIURL(),
		FilesURL: "https://files.slack.com", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	b2 := &inbox{}
	supervise(t, elsewhere, b2)
	testutil.Eventually(t, testutil.Patience, func() bool { return fake.OpenSockets() == 2 }, "the second socket")
	ts, _ = fake.PushFile(slacktest.Message{Channel: channel, User: owner, Text: "the log"},
		slacktest.File{Name: "run.txt", Mimetype: "text/plain", Data: []byte("log")})
	ev = b2.event(t, channel+":"+ts)
	before := fake.Downloads()
	if _, err := readAll(t, ev.Attachments[0]); !errors.Is(err, platform.ErrPermanent) || !strings.Contains(err.Error(), "not on Slack's file host") {
		t.Errorf("a file off the file host: %v", err)
	}
	if fake.Downloads() != before {
		t.Error("a file off the file host was fetched")
	}
}

// A file sent to a thread whose answer is lost — after
// files.completeUploadExternal shared it, or after its bytes went but
// before it was shared — and sent again with the same delivery key, by
// the same adapter and by one restarted on the same Memory, is shown in
// the thread once, and every try that succeeds names the same message.
func TestSendFileOnceThroughLostAnswersAndRestarts(t *testing.T) {
	fake := slacktest.New(t, botToken, appToken)
	mem := platformtest.NewMemory()
	adapter := func() *slack.Adapter {
		a, err := slack.New(slack.Config{BotToken: botToken, AppToken: appToken, APIURL: fake.APIURL(),
			FilesURL: fake.FilesURL(), Memory: mem, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	a, restarted := adapter(), adapter()
	ctx := testutil.Context(t, 0)
	thread := platform.Address{Platform: slack.Name, Kind: platform.Thread, Chat: channel, Thread: "1700000000.000100"}
	file := func(name string) platform.File {
		return platform.File{Name: name, MediaType: "text/plain", Size: 4, Caption: "*the* log",
			Open: func(context.Context) (io.ReadCloser, error) { return io.NopCloser(strings.NewReader("once")), nil }}
	}

	for i, lose := range []string{"files.completeUploadExternal", slacktest.RouteUpload} {
		name := []string{"shared.txt", "uploaded.txt"}[i]
		once := platform.WithDeliveryKey(ctx, "delivery:"+name)
		fake.LoseNext(lose)
		if _, err := a.SendFile(once, thread, file(name)); err == nil {
			t.Fatalf("%s: a SendFile whose answer was lost succeeded", name)
		}
		first, err := a.SendFile(once, thread, file(name))
		if err != nil {
			t.Fatalf("%s: the SendFile again: %v", name, err)
		}
		again, err := restarted.SendFile(once, thread, file(name))
		if err != nil || again != first {
			t.Errorf("%s: after a restart: %q, %v; want %q", name, again, err, first)
		}
	}
	var got []string
	for _, s := range fake.Shares() {
		if s.Channel != channel || s.ThreadTS != thread.Thread || string(s.Data) != "once" || s.Comment != "_the_ log" {
			t.Errorf("shared %+v", s)
		}
		got = append(got, s.Name)
	}
	if strings.Join(got, " ") != "shared.txt uploaded.txt" {
		t.Errorf("shown in the thread: %q, want each file once", got)
	}
	// A file not stored is no delivery: sent twice, it shows twice.
	for range 2 {
		if _, err := a.SendFile(ctx, thread, file("twice.txt")); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(fake.Shares()); n != 4 {
		t.Errorf("%d files shown, want 4", n)
	}
	if v := mem.WithPrefix("deliveries"); strings.Count(v, `"token"`) != 2 {
		t.Errorf("deliveries kept: %s, want the two stored ones", v)
	}
}

// SendFile refusals: an empty file, one larger than it said (nothing
// shared), one to a channel Slack does not know.
func TestSendFileRefusals(t *testing.T) {
	fake := slacktest.New(t, botToken, appToken)
	a := newAdapter(t, fake)
	ctx := testutil.Context(t, 0)
	home := platform.Address{Platform: slack.Name, Kind: platform.Group, Chat: channel}
	of := func(name string, size int64, data string) platform.File {
		return platform.File{Name: name, MediaType: "text/plain", Size: size,
			Open: func(context.Context) (io.ReadCloser, error) { return io.NopCloser(strings.NewReader(data)), nil }}
	}
	if _, err := a.SendFile(ctx, home, of("empty.txt", 0, "")); !errors.Is(err, platform.ErrPermanent) {
		t.Errorf("an empty file: %v", err)
	}
	if _, err := a.SendFile(ctx, home, of("lying.txt", 2, "longer")); !errors.Is(err, platform.ErrPermanent) {
		t.Errorf("a file longer than it said: %v", err)
	}
	fake.FailNextWith("files.completeUploadExternal", "channel_not_found")
	if _, err := a.SendFile(ctx, home, of("lost.txt", 2, "ok")); !errors.Is(err, platform.ErrPermanent) || !strings.Contains(err.Error(), "channel_not_found") {
		t.Errorf("an unknown channel: %v", err)
	}
	if s := fake.Shares(); len(s) != 0 {
		t.Errorf("shared %+v", s)
	}
}

// Slack shares an upload in the background. A file whose answer was lost
// after completion, tried again before Slack shows it anywhere, is not
// uploaded again: the try fails for a later one (transient), which finds
// it shared.
func TestSendFileWaitsForASlowShare(t *testing.T) {
	fake := slacktest.New(t, botToken, appToken)
	a := newAdapter(t, fake)
	ctx := platform.WithDeliveryKey(testutil.Context(t, 0), "delivery:slow")
	home := platform.Address{Platform: slack.Name, Kind: platform.Group, Chat: channel}
	f := platform.File{Name: "slow.txt", MediaType: "text/plain", Size: 4,
		Open: func(context.Context) (io.ReadCloser, error) { return io.NopCloser(strings.NewReader("slow")), nil }}
	fake.HoldShares()
	fake.LoseNext("files.completeUploadExternal")
	if _, err := a.SendFile(ctx, home, f); err == nil {
		t.Fatal("a SendFile whose answer was lost succeeded")
	}
	_, err := a.SendFile(ctx, home, f)
	if c, _ := platform.Classify(err); err == nil || c != platform.ClassTransient || !strings.Contains(err.Error(), "still sharing") {
		t.Errorf("a try while Slack shares the file: %v, want a transient failure", err)
	}
	fake.ReleaseShares()
	ts, err := a.SendFile(ctx, home, f)
	if err != nil || ts == "" {
		t.Fatalf("a try once it is shared: %q, %v", ts, err)
	}
	if s := fake.Shares(); len(s) != 1 || s[0].TS != ts || fake.Uploads() != 1 {
		t.Errorf("shared %+v after %d uploads, want once as %s", s, fake.Uploads(), ts)
	}
}

// A reply in a thread whose answer was lost, sent again with the same
// delivery key by the same adapter and by one restarted on the same
// Memory, is shown in the thread once: the message is found by the token
// in its metadata, which Slack gives only to a client asking for it.
func TestSendInAThreadOnceThroughALostAnswerAndARestart(t *testing.T) {
	fake := slacktest.New(t, botToken, appToken)
	mem := platformtest.NewMemory()
	a, restarted := newAdapterWith(t, fake, mem), newAdapterWith(t, fake, mem)
	ctx := testutil.Context(t, 0)
	root, _ := fake.PushMessage(slacktest.Message{Channel: channel, User: owner, Text: "a thread"})
	thread := platform.Address{Platform: slack.Name, Kind: platform.Thread, Chat: channel, Thread: root}
	once := platform.WithDeliveryKey(ctx, "delivery:reply")
	fake.LoseNext("chat.postMessage")
	if _, err := a.Send(once, thread, "the reply"); err == nil {
		t.Fatal("a Send whose answer was lost succeeded")
	}
	first, err := a.Send(once, thread, "the reply")
	if err != nil {
		t.Fatal(err)
	}
	if again, err := restarted.Send(once, thread, "the reply"); err != nil || again != first {
		t.Errorf("after a restart: %q, %v; want %q", again, err, first)
	}
	var shown []string
	for _, p := range fake.Shown() {
		if p.ThreadTS == root {
			shown = append(shown, p.Text)
		}
	}
	if len(shown) != 1 || shown[0] != "the reply" {
		t.Errorf("shown in the thread: %q, want the reply once", shown)
	}
}
