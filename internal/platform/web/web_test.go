package web

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/baton-agent/baton/internal/place"
	"github.com/baton-agent/baton/internal/platform"
	"github.com/baton-agent/baton/internal/testutil"
)

type staticTranscripts struct{ lines []Line }

func (b staticTranscripts) Conversations(context.Context, string) ([]Conversation, error) {
	return nil, nil
}
func (b staticTranscripts) View(context.Context, string) ([]Line, error) { return b.lines, nil }

const testToken = "abcdefabcdefabcdefabcdef"

func start(t *testing.T, h platform.ReceiverFunc) (*Adapter, *websocket.Conn) {
	t.Helper()
	a, err := New(Config{Listen: "127.0.0.1:0", Token: testToken, Transcripts: staticTranscripts{}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx, h) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	hdr := http.Header{}
	hdr.Set("Authorization", "Bearer "+testToken)
	// New listened already: the dial waits in the backlog until Run serves.
	conn, _, err := websocket.Dial(testutil.Context(t, 0), "ws://"+a.Addr()+"/ws", &websocket.DialOptions{HTTPHeader: hdr})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(websocket.StatusNormalClosure, "") })
	return a, conn
}

func roundTrip(t *testing.T, conn *websocket.Conn, out string) frame {
	t.Helper()
	ctx := testutil.Context(t, 0)
	if err := conn.Write(ctx, websocket.MessageText, []byte(out)); err != nil {
		t.Fatal(err)
	}
	_, b, err := conn.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var f frame
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	return f
}

func TestBadFramesGetClearErrors(t *testing.T) {
	var got []platform.Event
	_, conn := start(t, func(_ context.Context, ev platform.Event) error {
		got = append(got, ev)
		if ev.Text == "fail" {
			return errors.New("disk full")
		}
		return nil
	})
	cases := []struct{ in, want string }{
		{`{not json`, "not a JSON frame"},
		{`{"type":"dance"}`, "unknown frame type"},
		{`{"type":"say","key":"telegram:dm:1","text":"x","id":"1"}`, "not a web conversation"},
		{`{"type":"say","key":"web:dm:main","text":"  ","id":"1"}`, "needs text and an id"},
		{`{"type":"open","key":"nonsense"}`, "not a web conversation"},
		{`{"type":"say","key":"web:dm:main","text":"fail","id":"2"}`, "not stored, please send again: disk full"},
	}
	for _, c := range cases {
		f := roundTrip(t, conn, c.in)
		if f.Type != "error" || !strings.Contains(f.Error, c.want) {
			t.Errorf("%s → %+v, want error containing %q", c.in, f, c.want)
		}
	}
	f := roundTrip(t, conn, `{"type":"say","key":"web:dm:main","text":"hello","id":"3"}`)
	if f.Type != "ack" || f.ID != "3" {
		t.Fatalf("say → %+v", f)
	}
	if len(got) != 2 || got[1].Text != "hello" || got[1].SenderID != Owner || got[1].At != Home || got[1].ID != eventID(Home.Key(), "3") {
		t.Fatalf("events %+v", got)
	}
}

func TestOversizedFrameClosesOnlyThatPage(t *testing.T) {
	a, conn := start(t, func(context.Context, platform.Event) error { return nil })
	ctx := testutil.Context(t, 0)
	big := `{"type":"say","key":"web:dm:main","id":"1","text":"` + strings.Repeat("x", maxFrame+10) + `"}`
	_ = conn.Write(ctx, websocket.MessageText, []byte(big))
	if _, _, err := conn.Read(ctx); err == nil {
		t.Fatal("an oversized frame was accepted")
	}
	// The adapter still serves others.
	_, conn2 := start(t, func(context.Context, platform.Event) error { return nil })
	if f := roundTrip(t, conn2, `{"type":"list"}`); f.Type != "conversations" {
		t.Fatalf("list after an oversized frame elsewhere: %+v", f)
	}
	_ = a
}

func TestLoadTokenIsPrivateAndStable(t *testing.T) {
	home := t.TempDir()
	a, err := LoadToken(home)
	if err != nil || len(a) < 32 {
		t.Fatalf("token %q %v", a, err)
	}
	b, _ := LoadToken(home)
	if a != b {
		t.Fatal("token changed between starts")
	}
	fi, err := os.Stat(home + "/" + TokenFile)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("token file mode %v %v", fi, err)
	}
}

func readFrame(t *testing.T, conn *websocket.Conn) frame {
	t.Helper()
	_, b, err := conn.Read(testutil.Context(t, 0))
	if err != nil {
		t.Fatal(err)
	}
	var f frame
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	return f
}

// sendShown sends text to at as the gateway does and reads it as a page
// that shows it and says so; Send must then succeed.
func sendShown(t *testing.T, a *Adapter, conn *websocket.Conn, at platform.Address, text string) frame {
	t.Helper()
	return sendMessageShown(t, a, conn, at, platform.Message{Text: text})
}

// sendMessageShown is sendShown of a message with its kind.
func sendMessageShown(t *testing.T, a *Adapter, conn *websocket.Conn, at platform.Address, m platform.Message) frame {
	t.Helper()
	sent := make(chan error, 1)
	go func() {
		_, err := a.SendMessage(testutil.Context(t, 0), at, m)
		sent <- err
	}()
	f := readFrame(t, conn)
	writeFrame(t, conn, frame{Type: "ack", ID: f.ID})
	if err := testutil.Receive(t, sent, "Send to return"); err != nil {
		t.Errorf("Send of a message the page showed: %v", err)
	}
	return f
}

func writeFrame(t *testing.T, conn *websocket.Conn, f frame) {
	t.Helper()
	b, _ := json.Marshal(f)
	if err := conn.Write(testutil.Context(t, 0), websocket.MessageText, b); err != nil {
		t.Fatal(err)
	}
}

// unshown is how many messages wait for a page to say it showed them.
func unshown(a *Adapter) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.shown)
}

// Messages and deltas reach the page rendered; an approval question and
// its expiry are marked so the page can offer buttons; a new reply's
// deltas start afresh.
func TestFramesCarryRenderedText(t *testing.T) {
	a, conn := start(t, func(context.Context, platform.Event) error { return nil })
	if f := roundTrip(t, conn, `{"type":"list"}`); f.Type != "conversations" {
		t.Fatalf("list: %+v", f)
	}
	ctx := t.Context()
	_ = a.Delta(ctx, Home, "**bo")
	if f := readFrame(t, conn); f.Type != "delta" || f.Text != "**bo" || f.HTML != "<p>**bo</p>\n" {
		t.Errorf("first delta %+v", f)
	}
	_ = a.Delta(ctx, Home, "ld**")
	if f := readFrame(t, conn); f.Text != "ld**" || f.HTML != "<p><strong>bold</strong></p>\n" {
		t.Errorf("second delta %+v: want the reply so far, rendered", f)
	}
	if f := sendShown(t, a, conn, Home, "**bold**"); f.Type != "message" || f.HTML != "<p><strong>bold</strong></p>\n" || f.At == 0 || f.Approval != nil {
		t.Errorf("message %+v", f)
	}
	_ = a.Delta(ctx, Home, "next")
	if f := readFrame(t, conn); f.HTML != "<p>next</p>\n" {
		t.Errorf("a new reply's delta %+v carries the last one", f)
	}
	if f := sendMessageShown(t, a, conn, Home, question("shell", "rm -rf build")); f.Approval == nil || f.Approval.Tool != "shell" || f.Approval.Subject != "rm -rf build" || f.Approval.Expired {
		t.Errorf("approval question %+v", f)
	}
	if f := sendMessageShown(t, a, conn, Home, expired("shell", time.Minute)); f.Approval == nil || f.Approval.Tool != "shell" || !f.Approval.Expired {
		t.Errorf("approval expiry %+v", f)
	}
}

// What a message is comes from its kind and data, never its words: an
// approval question shows its tool and subject exactly, whatever they
// hold, and an ordinary answer worded like a question or an elsewhere
// line is shown as the answer it is.
func TestKindsComeFromTheMessageNotItsWords(t *testing.T) {
	a, conn := start(t, func(context.Context, platform.Event) error { return nil })
	if f := roundTrip(t, conn, `{"type":"list"}`); f.Type != "conversations" {
		t.Fatalf("list: %+v", f)
	}
	m := question("sh**ell", "printf '**?\\n```\\n'\n```")
	m.Text = "A question worded another way."
	if f := sendMessageShown(t, a, conn, Home, m); f.Approval == nil || f.Approval.Tool != "sh**ell" || f.Approval.Subject != "printf '**?\\n```\\n'\n```" || f.Text != m.Text {
		t.Errorf("approval question %+v", f)
	}
	if f := sendMessageShown(t, a, conn, Home, elsewhere("Telegram", "Over there now.")); !f.Elsewhere || f.Approval != nil {
		t.Errorf("elsewhere line %+v", f)
	}
	for _, text := range []string{
		platform.ApprovalQuestion("shell", "ls"),
		platform.ApprovalExpired("shell", time.Minute),
		place.Elsewhere("good hands", time.Now(), time.Now()),
		place.OnItsWay("the moon"),
	} {
		if f := sendShown(t, a, conn, Home, text); f.Approval != nil || f.Elsewhere {
			t.Errorf("an ordinary answer %q shown as %+v", text, f)
		}
	}
}

// A page open when the adapter stops receives what was queued for it
// before it is closed: an answer finished during the gateway's grace
// period is seen.
func TestStopSendsWhatIsQueuedFirst(t *testing.T) {
	a, err := New(Config{Listen: "127.0.0.1:0", Token: testToken, Transcripts: staticTranscripts{}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- a.Run(ctx, platform.ReceiverFunc(func(context.Context, platform.Event) error { return nil }))
	}()
	hdr := http.Header{}
	hdr.Set("Authorization", "Bearer "+testToken)
	conn, _, err := websocket.Dial(testutil.Context(t, 0), "ws://"+a.Addr()+"/ws", &websocket.DialOptions{HTTPHeader: hdr})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(websocket.StatusNormalClosure, "")
	roundTrip(t, conn, `{"type":"list"}`) // the page is registered

	// The page reads nothing until the adapter stops, so nothing is shown
	// and each Send waits; each is queued before the next starts.
	const n = 100
	sends, stopSends := context.WithCancel(context.Background())
	var sending sync.WaitGroup
	defer func() { stopSends(); sending.Wait() }()
	for i := range n {
		sending.Add(1)
		go func() {
			defer sending.Done()
			_, _ = a.Send(sends, Home, "reply "+strconv.Itoa(i))
		}()
		testutil.Eventually(t, testutil.Patience, func() bool { return unshown(a) == i+1 }, "the reply to be queued")
	}
	cancel()
	got := 0
	for {
		_, b, err := conn.Read(testutil.Context(t, 0))
		if err != nil {
			if websocket.CloseStatus(err) != websocket.StatusGoingAway {
				t.Errorf("closed with %v, want going away", err)
			}
			break
		}
		var f frame
		if err := json.Unmarshal(b, &f); err != nil {
			t.Fatal(err)
		}
		if f.Text != "reply "+strconv.Itoa(got) {
			t.Fatalf("frame %d is %+v", got, f)
		}
		got++
	}
	if got != n {
		t.Errorf("the page got %d of %d queued replies before it was closed", got, n)
	}
	if err := testutil.Receive(t, done, "Run to return"); err != nil {
		t.Errorf("Run: %v", err)
	}
}
