package web

import (
	"errors"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/baton-agent/baton/internal/platform"
	"github.com/baton-agent/baton/internal/testutil"
)

// connectTab opens the websocket of a page in the browser tab named tab.
func connectTab(t *testing.T, a *Adapter, tab string) *websocket.Conn {
	t.Helper()
	hdr := http.Header{}
	hdr.Set("Authorization", "Bearer "+testToken)
	conn, _, err := websocket.Dial(testutil.Context(t, 0), "ws://"+a.Addr()+"/ws?tab="+url.QueryEscape(tab), &websocket.DialOptions{HTTPHeader: hdr})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(websocket.StatusNormalClosure, "") })
	return conn
}

// settled waits until the adapter has read every frame the page sent
// before: a "new" is answered by the same reader that handles
// acknowledgements.
func settled(t *testing.T, conn *websocket.Conn) {
	t.Helper()
	writeFrame(t, conn, frame{Type: "new"})
	for {
		if f := readFrame(t, conn); f.Type == "conversation" {
			return
		}
	}
}

// say sends what the person typed in the page and waits until it is stored.
func say(t *testing.T, conn *websocket.Conn, id, text string) {
	t.Helper()
	writeFrame(t, conn, frame{Type: "say", Key: Home.Key(), ID: id, Text: text})
	if f := readFrame(t, conn); f.Type != "ack" || f.ID != id {
		t.Fatalf("say %q: %+v, want its ack", text, f)
	}
}

// echoed reads the next frame of a page and checks it is what another
// tab said: every page shows what is said in any tab.
func echoed(t *testing.T, conn *websocket.Conn, id, text string) {
	t.Helper()
	if f := readFrame(t, conn); f.Type != "said" || f.ID != id || f.Text != text || f.Key != Home.Key() || f.At == 0 {
		t.Fatalf("the other tab got %+v, want %q said in %s", f, text, Home.Key())
	}
}

// Two tabs on one conversation: the answer to a command typed in tab B is
// delivered when B showed it; tab A showing it first does not count.
func TestAnswerWaitsForTheTabThatAsked(t *testing.T) {
	a := serve(t, Config{AckWait: time.Hour}, &asker{})
	tabA, tabB := connectTab(t, a, "a"), connectTab(t, a, "b")
	say(t, tabB, "p1", "/status")
	echoed(t, tabA, "p1", "/status")

	sent := make(chan error, 1)
	go func() {
		_, err := a.Send(platform.WithDeliveryKey(testutil.Context(t, 0), "in:1:part:0"), Home, "status: all well")
		sent <- err
	}()
	f := readFrame(t, tabA)
	if f.Type != "message" || f.Text != "status: all well" {
		t.Fatalf("tab A got %+v", f)
	}
	writeFrame(t, tabA, frame{Type: "ack", ID: f.ID})
	settled(t, tabA)
	select {
	case err := <-sent:
		t.Fatalf("Send returned (%v) when tab A showed the answer; tab B asked for it", err)
	default:
	}
	fb := readFrame(t, tabB)
	if fb.Type != "message" || fb.ID != f.ID {
		t.Fatalf("tab B got %+v, want the answer with id %s", fb, f.ID)
	}
	writeFrame(t, tabB, frame{Type: "ack", ID: fb.ID})
	if err := testutil.Receive(t, sent, "Send to return once tab B showed it"); err != nil {
		t.Fatalf("Send: %v", err)
	}
}

// The tab that asked is away (reloading, reconnecting) when its answer
// comes: another tab's showing it delivers it, and the tab that asked is
// sent it when it is back, until it says it showed it.
func TestAnswerReachesTheTabThatAskedWhenItIsBack(t *testing.T) {
	a := serve(t, Config{AckWait: time.Hour}, &asker{})
	tabA, tabB := connectTab(t, a, "a"), connectTab(t, a, "b")
	say(t, tabB, "p1", "/status")
	echoed(t, tabA, "p1", "/status")
	tabB.Close(websocket.StatusGoingAway, "reload")
	testutil.Eventually(t, 0, func() bool { return pages(a) == 1 }, "tab B to be gone")

	f := sendShown(t, a, tabA, Home, "status: all well")

	for try := range 2 {
		back := connectTab(t, a, "b")
		writeFrame(t, back, frame{Type: "list"})
		got := readFrame(t, back)
		if got.Type != "message" || got.ID != f.ID || got.Text != "status: all well" {
			t.Fatalf("try %d: tab B back got %+v first, want the answer it missed", try, got)
		}
		if try == 0 {
			// Gone again before showing it: it is sent once more.
			back.Close(websocket.StatusGoingAway, "reload")
			testutil.Eventually(t, 0, func() bool { return pages(a) == 1 }, "tab B to be gone again")
			continue
		}
		if f := readFrame(t, back); f.Type != "conversations" {
			t.Fatalf("then %+v, want the list", f)
		}
		writeFrame(t, back, frame{Type: "ack", ID: got.ID})
		settled(t, back)
		back.Close(websocket.StatusGoingAway, "reload")
		testutil.Eventually(t, 0, func() bool { return pages(a) == 1 }, "tab B to be gone again")
	}
	// Shown: a later connection of tab B is not sent it again.
	back := connectTab(t, a, "b")
	writeFrame(t, back, frame{Type: "list"})
	if got := readFrame(t, back); got.Type != "conversations" {
		t.Fatalf("tab B, having shown the answer, got %+v", got)
	}
}

// An approval question is shown in whichever tab the person looks at: a
// tab that opens the conversation after another tab showed the question
// gets it too, until it is answered (in any tab) or expires.
func TestApprovalQuestionShownInEveryTab(t *testing.T) {
	a := serve(t, Config{AckWait: time.Hour}, &asker{})
	tabA, tabB := connectTab(t, a, "a"), connectTab(t, a, "b")
	q := sendMessageShown(t, a, tabA, Home, question("shell", "rm -rf build"))

	// openHome opens the home conversation in a new tab and returns the
	// frames that came before the page's next request was answered.
	openHome := func(tab string) []frame {
		conn := connectTab(t, a, tab)
		writeFrame(t, conn, frame{Type: "open", Key: Home.Key()})
		writeFrame(t, conn, frame{Type: "list"})
		var got []frame
		for {
			f := readFrame(t, conn)
			if f.Type == "conversations" {
				return got
			}
			got = append(got, f)
		}
	}
	got := openHome("c")
	if len(got) != 2 || got[0].Type != "history" || got[1].Type != "message" || got[1].ID != q.ID || got[1].Approval == nil || got[1].Approval.Tool != "shell" {
		t.Fatalf("a tab opened while the question waits got %+v, want the history and the question", got)
	}

	say(t, tabA, "p1", "/yes")
	// A tab that shows the question is told it is answered, and how.
	if f := readFrame(t, tabB); f.Type != "message" || f.ID != q.ID {
		t.Fatalf("tab B got %+v, want the question", f)
	}
	if f := readFrame(t, tabB); f.Type != "answered" || f.Key != Home.Key() || f.Text != "approve" {
		t.Fatalf("tab B got %+v, want the question answered with approve", f)
	}
	if got := openHome("d"); len(got) != 1 || got[0].Type != "history" {
		t.Fatalf("a tab opened after the answer got %+v, want only the history", got)
	}

	// A question that expires is not shown afterwards either.
	sendMessageShown(t, a, tabA, Home, question("shell", "make deploy"))
	if got := openHome("e"); len(got) != 2 || got[1].Approval == nil || got[1].Approval.Subject != "make deploy" {
		t.Fatalf("the second question: %+v", got)
	}
	sendMessageShown(t, a, tabA, Home, expired("shell", time.Minute))
	if got := openHome("f"); len(got) != 1 || got[0].Type != "history" {
		t.Fatalf("a tab opened after the question expired got %+v, want only the history", got)
	}
}

// The tab that asked is open but never says it showed the answer (a
// frozen background tab): once the wait for it is over, another tab's
// showing it counts, and the silent tab gets it when it reconnects.
func TestSilentTabThatAskedDoesNotHoldTheConversation(t *testing.T) {
	a, tabA, tabB, waitOver, sent := askedInB(t)
	f := readFrame(t, tabA)
	writeFrame(t, tabA, frame{Type: "ack", ID: f.ID})
	settled(t, tabA)
	close(waitOver) // tab B said nothing
	if err := testutil.Receive(t, sent, "Send to return"); err != nil {
		t.Fatalf("Send shown by another tab while the one that asked was silent: %v", err)
	}

	tabB.Close(websocket.StatusGoingAway, "unfrozen, reloaded")
	testutil.Eventually(t, 0, func() bool { return pages(a) == 1 }, "tab B to be gone")
	back := connectTab(t, a, "b")
	writeFrame(t, back, frame{Type: "list"})
	if got := readFrame(t, back); got.Type != "message" || got.ID != f.ID {
		t.Fatalf("tab B back got %+v, want the answer", got)
	}
}

// Nobody showed it: the wait ends in a failure, to be tried again, even
// though a tab asked.
func TestNobodyShowedTheAnswer(t *testing.T) {
	_, tabA, tabB, waitOver, sent := askedInB(t)
	readFrame(t, tabA)
	readFrame(t, tabB)
	close(waitOver)
	if err := testutil.Receive(t, sent, "Send to return"); !errors.Is(err, errNotShown) {
		t.Fatalf("Send nobody showed: %v, want %v", err, errNotShown)
	}
}

// The tab that asked comes back while its answer waits for another tab:
// once shown there, it is sent to the tab that asked at once.
func TestTabBackDuringTheWaitGetsTheAnswer(t *testing.T) {
	a := serve(t, Config{AckWait: time.Hour}, &asker{})
	tabA, tabB := connectTab(t, a, "a"), connectTab(t, a, "b")
	say(t, tabB, "p1", "/status")
	echoed(t, tabA, "p1", "/status")
	tabB.Close(websocket.StatusGoingAway, "reload")
	testutil.Eventually(t, 0, func() bool { return pages(a) == 1 }, "tab B to be gone")

	sent := make(chan error, 1)
	go func() {
		_, err := a.Send(testutil.Context(t, 0), Home, "status: all well")
		sent <- err
	}()
	f := readFrame(t, tabA)
	back := connectTab(t, a, "b")
	testutil.Eventually(t, 0, func() bool { return pages(a) == 2 }, "tab B to be back")
	writeFrame(t, tabA, frame{Type: "ack", ID: f.ID})
	if err := testutil.Receive(t, sent, "Send to return"); err != nil {
		t.Fatalf("Send: %v", err)
	}
	if got := readFrame(t, back); got.Type != "message" || got.ID != f.ID {
		t.Fatalf("tab B back got %+v, want the answer", got)
	}
}

// askedInB opens tabs A and B on the home conversation, has B ask for
// /status and starts sending the answer (its result on sent). The wait
// for the asking tab's acknowledgement ends when waitOver is closed.
func askedInB(t *testing.T) (a *Adapter, tabA, tabB *websocket.Conn, waitOver chan time.Time, sent chan error) {
	t.Helper()
	a = serve(t, Config{}, &asker{})
	waitOver = make(chan time.Time)
	a.ackTimeout = func(time.Duration) <-chan time.Time { return waitOver }
	tabA, tabB = connectTab(t, a, "a"), connectTab(t, a, "b")
	say(t, tabB, "p1", "/status")
	echoed(t, tabA, "p1", "/status")
	sent = make(chan error, 1)
	go func() {
		_, err := a.Send(testutil.Context(t, 0), Home, "status: all well")
		sent <- err
	}()
	return a, tabA, tabB, waitOver, sent
}
