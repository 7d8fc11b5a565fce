package imessage_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/platform"
	"github.com/baton-agent/baton/internal/platform/imessage"
	"github.com/baton-agent/baton/internal/platform/imessage/imessagetest"
	"github.com/baton-agent/baton/internal/platform/platformtest"
	"github.com/baton-agent/baton/internal/testutil"
)

type collector struct {
	mu     sync.Mutex
	events []platform.Event
	errs   []string // what Run returned
}

func (c *collector) Receive(_ context.Context, ev platform.Event) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.events = append(c.events, ev)
	return nil
}

func (c *collector) Live() {}

func (c *collector) all() []platform.Event {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]platform.Event(nil), c.events...)
}

func (c *collector) texts() []string {
	var out []string
	for _, e := range c.all() {
		out = append(out, e.Text)
	}
	return out
}

// run runs the adapter until stop or the test's end; stop waits for it.
func run(t *testing.T, a *imessage.Adapter, c *collector) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			if err := a.Run(ctx, c); err != nil {
				c.mu.Lock()
				c.errs = append(c.errs, err.Error())
				c.mu.Unlock()
			}
		}
	}()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); <-done }) }
	t.Cleanup(stop)
	return stop
}

func TestWebhookNeedsTheSecret(t *testing.T) {
	fake := imessagetest.New(t, password)
	a := newAdapter(t, fake, false)
	c := &collector{}
	run(t, a, c)
	testutil.Eventually(t, 0, func() bool { return fake.CallCount("message/query") > 0 }, "the adapter to be running")

	u, _ := url.Parse(a.WebhookURL())
	body := `{"type":"new-message","data":{"guid":"X1","text":"let me in","isFromMe":false,"dateCreated":1,"handle":{"address":"+15559999999"},"chats":[{"guid":"iMessage;-;+15559999999"}]}}`
	for _, q := range []string{"", "?secret=wrong", "?password=" + password} {
		resp, err := http.Post("http://"+u.Host+imessage.WebhookPath+q, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("webhook with %q answered %d, want 401", q, resp.StatusCode)
		}
	}
	// Malformed with the secret: 400, and nothing handed over.
	resp, err := http.Post(a.WebhookURL(), "application/json", strings.NewReader(`{"type":"new-message","data":`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("malformed webhook answered %d", resp.StatusCode)
	}
	fake.Receive(owner, imessagetest.DM(owner), "a real one")
	testutil.Eventually(t, 0, func() bool { return len(c.all()) == 1 }, "the real message")
	if got := c.texts(); len(got) != 1 || got[0] != "a real one" {
		t.Errorf("handed over %q", got)
	}
}

// Tapbacks and baton's own messages are not handed over; a file without
// text is, and text with a file is, without the file's placeholder.
func TestWhatIsHandedOver(t *testing.T) {
	fake := imessagetest.New(t, password)
	a := newAdapter(t, fake, false)
	c := &collector{}
	run(t, a, c)
	testutil.Eventually(t, 0, func() bool { return fake.CallCount("message/query") > 0 }, "the adapter to be running")
	dm := imessagetest.DM(owner)
	handle := &imessagetest.Handle{Address: owner, Service: "iMessage"}
	chats := []imessagetest.Chat{{GUID: dm, Style: 45}}
	target := fake.Receive(owner, dm, "book the train")
	love, guid := "love", target
	fake.ReceiveMessage(imessagetest.Message{Text: "Loved “book the train”", AssociatedMessageGUID: &guid, AssociatedMessageType: &love, Handle: handle, Chats: chats})
	photo := fake.ReceiveFile(owner, dm, imessagetest.Attachment{TransferName: "IMG_1.HEIC", MimeType: "image/heic", Data: []byte("a picture")}, "")
	fake.ReceiveMessage(imessagetest.Message{Text: "\ufffcthe ticket", Attachments: []imessagetest.Attachment{{GUID: "A2", TransferName: "ticket.pdf"}}, Handle: handle, Chats: chats})
	if _, err := a.Send(testutil.Context(t, 0), platform.Address{Platform: "imessage", Kind: platform.DM, Chat: dm}, "**on it**"); err != nil {
		t.Fatal(err)
	}
	group := fake.Receive("+15552222222", "iMessage;+;chat4242", "hi all")
	testutil.Eventually(t, 0, func() bool { return len(c.all()) >= 4 }, "four messages")
	// Another catch-up passes without repeating anything.
	n := fake.CallCount("message/query")
	testutil.Eventually(t, 0, func() bool { return fake.CallCount("message/query") > n+1 }, "two more catch-ups")
	got := c.all()
	if len(got) != 4 || got[0].Text != "book the train" || got[0].ID != target || got[1].ID != photo || got[1].Text != "" ||
		got[2].Text != "the ticket" || got[3].ID != group {
		t.Fatalf("handed over %+v", got)
	}
	if atts := got[1].Attachments; len(atts) != 1 || atts[0].Kind != platform.KindPhoto || atts[0].Name != "IMG_1.HEIC" {
		t.Errorf("a photo alone arrived with %+v", atts)
	}
	if atts := got[2].Attachments; len(atts) != 1 || atts[0].Kind != platform.KindDocument || atts[0].Name != "ticket.pdf" {
		t.Errorf("a file with text arrived with %+v", atts)
	}
	if got[0].At != (platform.Address{Platform: "imessage", Kind: platform.DM, Chat: dm}) || got[0].SenderID != owner {
		t.Errorf("a DM arrived as %+v", got[0])
	}
	if got[3].At.Kind != platform.Group || got[3].At.Chat != "iMessage;+;chat4242" {
		t.Errorf("a group message arrived at %+v", got[3].At)
	}
	if s := fake.Sent(); len(s) != 1 || s[0].Text != "on it" {
		t.Errorf("sent %+v", s)
	}
}

// A message whose webhook never came (BlueBubbles does not retry one that
// failed) is fetched at the next check.
func TestMissedWebhookIsFetched(t *testing.T) {
	fake := imessagetest.New(t, password)
	a := newAdapter(t, fake, false)
	c := &collector{}
	run(t, a, c)
	fake.Receive(owner, imessagetest.DM(owner), "first")
	testutil.Eventually(t, 0, func() bool { return len(c.all()) == 1 }, "the first message")
	fake.SetWebhook("")
	missed := fake.Receive(owner, imessagetest.DM(owner), "no webhook for this one")
	defer func() {
		if t.Failed() {
			c.mu.Lock()
			t.Logf("Run errors %q; calls %+v", c.errs, fake.Calls())
			c.mu.Unlock()
		}
	}()
	testutil.Eventually(t, 0, func() bool { return len(c.all()) == 2 }, "the missed message")
	if got := c.all(); got[1].ID != missed || len(fake.Hooks()) != 1 {
		t.Errorf("events %+v, hooks %+v", got, fake.Hooks())
	}
}

func TestTypingNeedsPrivateAPI(t *testing.T) {
	fake := imessagetest.New(t, password)
	a := newAdapter(t, fake, false)
	err := a.Typing(testutil.Context(t, 0), platform.Address{Platform: "imessage", Kind: platform.DM, Chat: imessagetest.DM(owner)})
	if cl, _ := platform.Classify(err); cl != platform.ClassUnsupported {
		t.Errorf("typing without the Private API: %v (%v)", err, cl)
	}
	if fake.CallCount("chat/typing") != 0 {
		t.Error("asked the server for typing it cannot do")
	}
	fake.EnablePrivateAPI()
	b := newAdapter(t, fake, true)
	if err := b.Typing(testutil.Context(t, 0), platform.Address{Platform: "imessage", Kind: platform.DM, Chat: imessagetest.DM(owner)}); err != nil {
		t.Fatal(err)
	}
	if got := fake.Typing(); len(got) != 1 || got[0] != imessagetest.DM(owner) {
		t.Errorf("typing in %q", got)
	}
}

// A wrong password is refused credentials, and the password appears in
// no error.
func TestWrongPasswordRefused(t *testing.T) {
	fake := imessagetest.New(t, password)
	a, err := imessage.New(imessage.Config{URL: fake.URL(), Password: "wrong-secret-pw", Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	err = a.Run(testutil.Context(t, 0), &collector{})
	if cl, _ := platform.Classify(err); cl != platform.ClassRefused {
		t.Errorf("Run with a wrong password: %v (%v)", err, cl)
	}
	if strings.Contains(err.Error(), "wrong-secret-pw") {
		t.Errorf("the password leaked: %v", err)
	}
	fake.Down()
	_, err = a.Send(testutil.Context(t, 0), platform.Address{Platform: "imessage", Kind: platform.DM, Chat: "iMessage;-;x"}, "hi")
	if err == nil || strings.Contains(err.Error(), "wrong-secret-pw") {
		t.Errorf("send while down: %v", err)
	}
}

// baton restarted: what people wrote while it was down (no webhook can
// reach a stopped baton) is fetched by the next process, from where the
// last one left off as kept in Memory. The last message before the
// restart may come once more (the catch-up starts at its millisecond;
// the gateway's inbox knows it by its guid); nothing older does.
func TestWhatWasWrittenWhileDownIsFetchedAfterARestart(t *testing.T) {
	fake := imessagetest.New(t, password)
	mem := platformtest.NewMemory()
	adapter := func() *imessage.Adapter {
		a, err := imessage.New(imessage.Config{URL: fake.URL(), Password: password, Listen: "127.0.0.1:0",
			WebhookSecret: "hook-secret", CheckEvery: 50 * time.Millisecond,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Memory: mem})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { a.Close() })
		fake.SetWebhook(a.WebhookURL())
		return a
	}
	dm := imessagetest.DM(owner)
	c := &collector{}
	stop := run(t, adapter(), c)
	older := fake.Receive(owner, dm, "long before the restart")
	last := fake.Receive(owner, dm, "just before the restart")
	testutil.Eventually(t, 0, func() bool { return len(c.all()) == 2 }, "the first messages")
	stop()

	fake.SetWebhook("")
	var during []string
	for i := range 3 {
		during = append(during, fake.Receive(owner, dm, fmt.Sprint("while baton is down ", i)))
	}
	// The fake dates messages a millisecond apart at least, ahead of the
	// wall clock when they come quicker: let the clock pass them, so that
	// a restart that forgot where it left off would start after them.
	resumeAt := time.Now().Add(10 * time.Millisecond)
	testutil.Eventually(t, 0, func() bool { return time.Now().After(resumeAt) }, "the clock to pass the messages' dates")
	c2 := &collector{}
	run(t, adapter(), c2)
	has := func(id string) bool {
		for _, e := range c2.all() {
			if e.ID == id {
				return true
			}
		}
		return false
	}
	testutil.Eventually(t, 0, func() bool { return has(during[2]) }, "the messages written while baton was down")
	after := fake.Receive(owner, dm, "after the restart")
	testutil.Eventually(t, 0, func() bool { return has(after) }, "the message after the restart")
	var got []string
	for _, e := range c2.all() {
		switch e.ID {
		case older:
			t.Errorf("a message from long before the restart came again")
		case last:
		default:
			got = append(got, e.ID)
		}
	}
	if want := append(during, after); !slices.Equal(got, want) {
		t.Errorf("after the restart %v came, want %v", got, want)
	}
}
