package discord_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/platform"
	"github.com/baton-agent/baton/internal/platform/discord"
	"github.com/baton-agent/baton/internal/platform/discord/discordtest"
	"github.com/baton-agent/baton/internal/platform/fakekit"
	"github.com/baton-agent/baton/internal/platform/platformtest"
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

// A picture sent alone arrives as a photo, its bytes read from the CDN
// URL the message gave; a person's file whose URL is not on the CDN the
// adapter knows is refused without a request, as is one once the CDN
// forgets it (a link past its expiry), without the signed URL in the
// error.
func TestAttachmentsReadFromTheCDNOnly(t *testing.T) {
	fake := discordtest.New(t, token)
	a := newAdapter(t, fake, token)
	ev := &events{}
	keepRunning(t, a, ev)
	testutil.Eventually(t, testutil.Patience, func() bool { return fake.Connected() == 1 }, "the connection")

	pic := platformtest.SamplePNG()
	id, err := fake.SayFile(fake.Home(), owner, discordtest.File{Name: "shot.png", ContentType: "image/png", Data: pic})
	if err != nil {
		t.Fatal(err)
	}
	got := ev.await(t, id)
	if got.Text != "" || len(got.Attachments) != 1 {
		t.Fatalf("a picture alone arrived as %+v", got)
	}
	att := got.Attachments[0]
	if att.Kind != platform.KindPhoto || att.Name != "shot.png" || att.MediaType != "image/png" || att.Size != int64(len(pic)) {
		t.Errorf("the picture is described as %+v", att)
	}
	if data, err := readAll(t, att); err != nil || !bytes.Equal(data, pic) {
		t.Errorf("the picture read back as %d bytes: %v", len(data), err)
	}

	// A voice message recorded in the app is a voice note.
	id, err = fake.SayFile(fake.Home(), owner, discordtest.File{Name: "voice-message.ogg", ContentType: "audio/ogg", Data: []byte("OggS...."), Voice: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if v := ev.await(t, id).Attachments; len(v) != 1 || v[0].Kind != platform.KindVoice {
		t.Errorf("a voice message arrived as %+v", v)
	}

	// Another adapter that knows the CDN elsewhere: the fake's URL is not
	// on it, so it is never asked.
	other, err := discord.New(discord.Config{Token: token, APIURL: fake.APIURL(), CDNURL: "https://cdn.discordapp.com",
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	ev2 := &events{}
	keepRunning(t, other, ev2)
	testutil.Eventually(t, testutil.Patience, func() bool { return fake.Connected() == 2 }, "the second connection")
	id, _ = fake.SayFile(fake.Home(), owner, discordtest.File{Name: "x.txt", ContentType: "text/plain", Data: []byte("x"), Caption: "see"})
	before := fake.Downloads()
	_, err = readAll(t, ev2.await(t, id).Attachments[0])
	if !errors.Is(err, platform.ErrPermanent) || !strings.Contains(err.Error(), "not on Discord's CDN") {
		t.Errorf("a URL off the CDN: %v, want a permanent refusal", err)
	}
	if fake.Downloads() != before {
		t.Error("a URL off the CDN was fetched")
	}

	// The CDN hangs up: transient, and the error does not quote the URL.
	fake.DownWith(fakekit.Hangup)
	_, err = readAll(t, ev.await(t, id).Attachments[0])
	fake.Up()
	if err == nil || errors.Is(err, platform.ErrPermanent) || strings.Contains(err.Error(), "hm=") || strings.Contains(err.Error(), "/attachments/") {
		t.Errorf("the CDN down: %v, want a transient error without the URL", err)
	}
}

// SendFile to a channel Discord does not know is refused for good; a
// file larger than it said is cut off at the limit, never posted; a rate
// limit asks for its wait.
func TestSendFileRefusals(t *testing.T) {
	fake := discordtest.New(t, token)
	a := newAdapter(t, fake, token)
	ctx := testutil.Context(t, 0)
	home := platform.Address{Platform: discord.Name, Kind: platform.Group, Chat: fake.Home()}

	lying := platform.File{Name: "big.bin", MediaType: "application/octet-stream", Size: 10,
		Open: func(context.Context) (io.ReadCloser, error) {
			return io.NopCloser(bytes.NewReader(make([]byte, discord.MaxUpload+1))), nil
		}}
	_, err := a.SendFile(ctx, home, lying)
	var tl *platform.TooLargeError
	if !errors.As(err, &tl) || !tl.Sending {
		t.Errorf("a file larger than it said: %v, want a *platform.TooLargeError", err)
	}
	if p := fake.Posts(); len(p) != 0 {
		t.Errorf("posted %+v", p)
	}

	gone := platform.Address{Platform: discord.Name, Kind: platform.Group, Chat: "123"}
	_, err = a.SendFile(ctx, gone, platform.File{Name: "a.txt", MediaType: "text/plain", Size: 1,
		Open: func(context.Context) (io.ReadCloser, error) { return io.NopCloser(strings.NewReader("a")), nil }})
	if !errors.Is(err, platform.ErrPermanent) || !strings.Contains(err.Error(), "a.txt") {
		t.Errorf("a file to an unknown channel: %v, want permanent", err)
	}

	// A file rate limited asks for its wait.
	fake.FailNext(discordtest.RouteCreateMessage, 429, 2*time.Second)
	_, err = a.SendFile(ctx, home, platform.File{Name: "a.txt", MediaType: "text/plain", Size: 1,
		Open: func(context.Context) (io.ReadCloser, error) { return io.NopCloser(strings.NewReader("a")), nil }})
	if c, wait := platform.Classify(err); c != platform.ClassRetryAfter || wait < time.Second {
		t.Errorf("a rate-limited file: %v (%v, %v)", err, c, wait)
	}
}

// A file goes to Discord as it is read, not through the REST client's
// debug log: its bytes never show in the adapter's log, even at debug
// level.
func TestSendFileKeepsItsBytesOutOfTheLog(t *testing.T) {
	fake := discordtest.New(t, token)
	logs := &testutil.SyncBuffer{}
	a, err := discord.New(discord.Config{Token: token, APIURL: fake.APIURL(), CDNURL: fake.CDNURL(),
		Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatal(err)
	}
	home := platform.Address{Platform: discord.Name, Kind: platform.Group, Chat: fake.Home()}
	secret := "the-contents-of-a-private-file"
	if _, err := a.SendFile(t.Context(), home, platform.File{Name: "private.txt", MediaType: "text/plain", Size: int64(len(secret)),
		Open: func(context.Context) (io.ReadCloser, error) { return io.NopCloser(strings.NewReader(secret)), nil }}); err != nil {
		t.Fatal(err)
	}
	if p := fake.Posts(); len(p) != 1 || string(p[0].Attachments[0].Data) != secret {
		t.Fatalf("posted %+v", p)
	}
	if strings.Contains(logs.String(), secret) {
		t.Errorf("the file's bytes are in the log:\n%s", logs.String())
	}
}

// A picture whose name does not end in its type's extension is sent
// under one that does, so Discord shows it inline; a document keeps its
// name as it is.
func TestPictureNamedForDiscord(t *testing.T) {
	fake := discordtest.New(t, token)
	a := newAdapter(t, fake, token)
	home := platform.Address{Platform: discord.Name, Kind: platform.Group, Chat: fake.Home()}
	pic := platformtest.SamplePNG()
	for _, f := range []struct{ name, media, want string }{
		{"chart", "image/png", "chart.png"},
		{"photo.JPEG", "image/jpeg", "photo.JPEG"},
		{"shot.png", "image/png", "shot.png"},
		{"notes", "text/plain", "notes"},
	} {
		if _, err := a.SendFile(t.Context(), home, platform.File{Name: f.name, MediaType: f.media, Size: int64(len(pic)),
			Open: func(context.Context) (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(pic)), nil }}); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	for _, p := range fake.Posts() {
		for _, att := range p.Attachments {
			got = append(got, fmt.Sprintf("%s:%v", att.Filename, att.IsImage()))
		}
	}
	if strings.Join(got, " ") != "chart.png:true photo.JPEG:true shot.png:true notes:false" {
		t.Errorf("sent as %q", got)
	}
}

// A caption longer than a message goes with the file as far as it fits,
// the rest in a message after it; a stored delivery whose answer was
// lost, sent again, shows the file and the rest of its caption once.
func TestLongCaptionFollowsOnce(t *testing.T) {
	fake := discordtest.New(t, token)
	a := newAdapter(t, fake, token)
	home := platform.Address{Platform: discord.Name, Kind: platform.Group, Chat: fake.Home()}
	caption := strings.Repeat("word ", 350) + "\n\n" + strings.Repeat("more ", 200)
	f := platform.File{Name: "log.txt", MediaType: "text/plain", Size: 3,
		Open: func(context.Context) (io.ReadCloser, error) { return io.NopCloser(strings.NewReader("log")), nil }}
	f.Caption = caption
	once := platform.WithDeliveryKey(t.Context(), "delivery:long")
	fake.LoseNext(discordtest.RouteCreateMessage)
	if _, err := a.SendFile(once, home, f); err == nil {
		t.Fatal("a SendFile whose answer was lost succeeded")
	}
	first, err := a.SendFile(once, home, f)
	if err != nil {
		t.Fatal(err)
	}
	if again, err := a.SendFile(once, home, f); err != nil || again != first {
		t.Errorf("sent again: %q, %v; want %q", again, err, first)
	}
	shown := fake.Shown()
	if len(shown) != 2 || len(shown[0].Attachments) != 1 || len(shown[1].Attachments) != 0 {
		t.Fatalf("shown %d messages, want the file and the rest of its caption: %+v", len(shown), shown)
	}
	words := func(s string) string { return strings.Join(strings.Fields(s), " ") }
	if got := words(shown[0].Content + " " + shown[1].Content); got != words(caption) {
		t.Errorf("the caption shown is %d characters, want %d", len(got), len(words(caption)))
	}
}
