package web

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/baton-agent/baton/internal/platform"
	"github.com/baton-agent/baton/internal/testutil"
	"github.com/baton-agent/baton/internal/testutil/browser"
)

// The page is tested in a real Chromium through its DOM: what it shows,
// where and how large, never how the pixels look.

// memTranscripts is a store's conversations and transcripts kept in
// memory; tests add to it as a turn would.
type memTranscripts struct {
	mu    sync.Mutex
	convs []Conversation
	lines map[string][]Line
}

func (m *memTranscripts) Conversations(context.Context, string) ([]Conversation, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]Conversation(nil), m.convs...), nil
}

func (m *memTranscripts) View(_ context.Context, key string) ([]Line, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]Line{}, m.lines[key]...), nil
}

func (m *memTranscripts) add(key string, ls ...Line) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.lines == nil {
		m.lines = map[string][]Line{}
	}
	m.lines[key] = append(m.lines[key], ls...)
}

// chat is the web adapter serving a page to a browser tab, with what the
// page said handed to events.
type chat struct {
	a      *Adapter
	store  *memTranscripts
	events chan platform.Event
	ctx    context.Context // the browser tab
	// refuse, when it holds an error, fails the next Receive with it, as
	// a store that could not store the message.
	refuse  chan error
	refused chan platform.Event
}

// openChat serves the page with the transcripts in store and signs the
// tab in, at width × height.
func openChat(t *testing.T, tab context.Context, store *memTranscripts, width, height int64) *chat {
	t.Helper()
	return openChatOn(t, tab, store, store, width, height)
}

// openChatOn is openChat showing transcripts, which store is a part of
// (one that keeps files, say). The files of what the page says are read
// as the gateway reads them, while the event is received, and kept with
// the event.
func openChatOn(t *testing.T, tab context.Context, transcripts platform.Transcripts, store *memTranscripts, width, height int64) *chat {
	t.Helper()
	a, err := New(Config{Listen: "127.0.0.1:0", Token: testToken, Transcripts: transcripts, SpoolDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	c := &chat{a: a, store: store, events: make(chan platform.Event, 64), ctx: tab, refuse: make(chan error, 1), refused: make(chan platform.Event, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- a.Run(ctx, platform.ReceiverFunc(func(ctx context.Context, ev platform.Event) error {
			select {
			case err := <-c.refuse:
				c.refused <- ev
				return err
			default:
			}
			if err := keepFiles(ctx, &ev); err != nil {
				return err
			}
			c.events <- ev
			return nil
		}))
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	if err := chromedp.Do(tab, chromedp.EmulateViewport(width, height), colorScheme("light"), chromedp.Navigate(a.URL())); err != nil {
		t.Fatal(err)
	}
	browser.Poll(tab, t, "the page to connect", `document.querySelectorAll("#conversations li").length > 0 && document.getElementById("status").innerText === ""`)
	return c
}

func colorScheme(s string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := cdp.Call(ctx, t, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
			Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: s}}})
		return err
	})
}

func (c *chat) poll(t *testing.T, what, js string) { t.Helper(); browser.Poll(c.ctx, t, what, js) }

func (c *chat) do(t *testing.T, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(c.ctx, browser.Patience)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		t.Fatal(err)
	}
}

func (c *chat) said(t *testing.T) platform.Event {
	t.Helper()
	return testutil.Receive(t, c.events, "the page to say something")
}

// box is an element's place and size in the viewport, and whether it is
// shown at all.
type box struct {
	Left, Right, Width, Height float64
	Visible                    bool
}

func (c *chat) box(t *testing.T, sel string) box {
	t.Helper()
	return browser.Eval[box](c.ctx, t, `(() => { const e = document.querySelector(`+browser.JSString(sel)+`);
		if (!e) return {Visible: false};
		const r = e.getBoundingClientRect(), s = getComputedStyle(e);
		return {Left: r.left, Right: r.right, Width: r.width, Height: r.height,
			Visible: s.display !== "none" && s.visibility !== "hidden" && r.width > 0 && r.right > 0 && r.left < innerWidth}; })()`)
}

func (c *chat) text(t *testing.T, js string) string { return browser.Eval[string](c.ctx, t, js) }

type size struct {
	name          string
	width, height int64
}

var widths = []size{{"phone", 390, 844}, {"desktop", 1280, 800}}

// TestPage drives the page in one browser at a phone's width and a
// desktop's: the sign-in page; markdown, tool cards and /help's columns; approval buttons;
// the layout and its colours; the composer; unread marks; a message sent
// again shown once.
func TestPage(t *testing.T) {
	tab := browser.Start(t)
	for _, w := range widths {
		t.Run(w.name, func(t *testing.T) {
			for _, part := range []struct {
				name string
				test func(*testing.T, context.Context, size)
			}{
				{"sign-in page", signInPage},
				{"markdown, tool cards, columns", markdownToolCardsAndColumns},
				{"approval buttons", approvalButtons},
				{"layout and colours", layoutAndColours},
				{"composer", composer},
				{"unread marks", unreadMarks},
				{"a message sent again shows once", repeatShownOnce},
			} {
				t.Run(part.name, func(t *testing.T) { part.test(t, tab, w) })
			}
		})
	}
}

const richReply = "## Plan\n\nThe steps:\n\n- read the file\n- **change** it\n\n| file | lines |\n|---|--:|\n| main.go | 120 |\n\n" +
	"> measure twice\n\nSee [the docs](https://go.dev/doc) or [this](javascript:alert(1)).\n\n```go\nfmt.Println(\"hi\")\n```\n\nRaw <b>tags</b> stay text.<script>alert(1)</script>"

const helpReply = "You can type:\n\nGeneral:\n  /help [command]  show help (also /h, /?)\n  /new             start a new session\n  /handoff <to>    move this conversation elsewhere\n"

func markdownToolCardsAndColumns(t *testing.T, tab context.Context, w size) {
	var out []string
	for i := range 20 {
		out = append(out, fmt.Sprintf("line %d", i+1))
	}
	store := &memTranscripts{}
	now := time.Now()
	store.add(Home.Key(),
		Line{Role: "user", Text: "plan it", Time: now},
		Line{Role: "tool", Tool: "shell", Call: "call", CallID: "c1", Detail: `{"command":"seq 1 20","timeout":30}`, Time: now},
		Line{Role: "tool", Tool: "shell", Call: "result", CallID: "c1", Detail: strings.Join(out, "\n"), Time: now},
		Line{Role: "assistant", Text: richReply, Time: now},
		Line{Role: "assistant", Text: helpReply, Time: now},
	)
	c := openChat(t, tab, store, w.width, w.height)
	c.poll(t, "the transcript", `document.querySelectorAll("#messages > li").length === 4`)

	// Markdown, rendered by the gateway.
	for sel, want := range map[string]string{
		"#messages li.assistant h2":                           "Plan",
		"#messages li.assistant ul > li:nth-child(2) strong":  "change",
		"#messages li.assistant .table table td[align=right]": "120",
		"#messages li.assistant blockquote":                   "measure twice",
		"#messages li.assistant .code pre code.language-go":   `fmt.Println("hi")`,
		"#messages li.assistant .code button.copy":            "Copy",
	} {
		if got := c.text(t, `(document.querySelector(`+browser.JSString(sel)+`) || {}).textContent || ""`); strings.TrimSpace(got) != want {
			t.Errorf("%s shows %q, want %q", sel, got, want)
		}
	}
	links := c.text(t, `[...document.querySelectorAll("#messages a")].map(a => a.textContent + " " + a.href + " " + a.rel + " " + a.target).join("|")`)
	if links != "the docs https://go.dev/doc noopener noreferrer _blank" {
		t.Errorf("links %q: want only the http one, opening safely", links)
	}
	if n := c.text(t, `String(document.querySelectorAll("#messages script, #messages b").length)`); n != "0" {
		t.Errorf("%s raw HTML elements made it into the page", n)
	}
	if !strings.Contains(c.text(t, `document.getElementById("messages").innerText`), "Raw <b>tags</b> stay text.") {
		t.Error("raw HTML is not shown as text")
	}
	// Nothing is wider than the screen: wide content scrolls in its own box.
	if sw := c.text(t, `String(document.documentElement.scrollWidth)`); sw != fmt.Sprint(w.width) {
		t.Errorf("the page is %s px wide on a %d px screen", sw, w.width)
	}

	// The copy button copies the code.
	c.do(t, chromedp.Click(chromedp.CSS(".code button.copy")))
	c.poll(t, "the copy button to say it copied", `document.querySelector(".code button.copy").textContent === "Copied"`)

	// /help's columns: each name beside what it says.
	rows := c.text(t, `[...document.querySelectorAll("#messages .columns .col-row")].map(r => r.querySelector(".col-name").textContent + " = " + r.querySelector(".col-desc").textContent).join("|")`)
	if want := "/help [command] = show help (also /h, /?)|/new = start a new session|/handoff <to> = move this conversation elsewhere"; rows != want {
		t.Errorf("help columns %q, want %q", rows, want)
	}

	// The tool call is one card: its name, its arguments in short,
	// the output folded.
	if n := c.text(t, `String(document.querySelectorAll("#messages li.tool").length)`); n != "1" {
		t.Fatalf("%s tool cards, want 1 (call and result together)", n)
	}
	if got := c.text(t, `document.querySelector("li.tool .tool-name").textContent + " | " + document.querySelector("li.tool .tool-args").textContent`); got != "shell | command: seq 1 20, timeout: 30" {
		t.Errorf("tool card head %q", got)
	}
	if strings.Contains(c.text(t, `document.getElementById("messages").innerText`), `{"command"`) {
		t.Error("raw JSON of the call shows")
	}
	folded := c.box(t, "li.tool .tool-result")
	if full := browser.Eval[float64](c.ctx, t, `document.querySelector("li.tool .tool-result").scrollHeight`); folded.Height >= full || !folded.Visible {
		t.Errorf("output not folded: shows %.0f px of %.0f", folded.Height, full)
	}
	c.do(t, chromedp.Click(chromedp.CSS("li.tool .tool-more")))
	c.poll(t, "the card to unfold", `(() => { const r = document.querySelector("li.tool .tool-result"); return r.clientHeight >= r.scrollHeight && document.querySelector("li.tool .tool-more").textContent === "Show less"; })()`)
	if d := c.box(t, "li.tool .tool-detail"); !d.Visible {
		t.Error("the unfolded card does not show the whole arguments")
	}
	if got := c.text(t, `document.querySelector("li.tool .tool-detail").textContent`); !strings.Contains(got, `"timeout": 30`) {
		t.Errorf("arguments shown %q", got)
	}
}

func approvalButtons(t *testing.T, tab context.Context, w size) {
	store := &memTranscripts{}
	c := openChat(t, tab, store, w.width, w.height)
	ctx := t.Context()
	store.add(Home.Key(), Line{Role: "user", Text: "clean up", Time: time.Now()},
		Line{Role: "tool", Tool: "shell", Call: "call", CallID: "c1", Detail: `{"command":"rm -rf build"}`, Time: time.Now()})
	if _, err := c.a.SendMessage(ctx, Home, question("shell", "rm -rf build")); err != nil {
		t.Fatal(err)
	}
	c.poll(t, "the question", `document.querySelectorAll('li.approval[data-state="pending"] button').length === 3`)
	if b := c.box(t, `li.approval button[data-answer="approve"]`); !b.Visible || b.Height < 24 {
		t.Errorf("the approve button is not there to press: %+v", b)
	}
	if r := c.box(t, "li.approval"); r.Right > float64(w.width) {
		t.Errorf("the question overflows the screen: %+v", r)
	}
	c.do(t, chromedp.Click(chromedp.CSS(`li.approval button[data-answer="approve"]`)))
	if ev := c.said(t); ev.Text != "/approve" || ev.At != Home {
		t.Fatalf("the button said %q at %s", ev.Text, ev.At.Key())
	}
	c.poll(t, "the answer in place of the buttons", `document.querySelector('li.approval[data-state="approve"] .approval-answer').textContent.includes("Allowed once") && !document.querySelector("li.approval button")`)

	// The turn goes on and ends: the page reloads the transcript,
	// and the question stays answered.
	store.add(Home.Key(), Line{Role: "tool", Tool: "shell", Call: "result", CallID: "c1", Detail: "", Time: time.Now()},
		Line{Role: "assistant", Text: "Cleaned up.", Time: time.Now()})
	if _, err := c.a.Send(ctx, Home, "Cleaned up."); err != nil {
		t.Fatal(err)
	}
	c.poll(t, "the answer", `document.getElementById("messages").innerText.includes("Cleaned up.")`)
	if got := c.text(t, `[...document.querySelectorAll("#messages > li")].map(l => l.className + ":" + (l.dataset.state || "")).join(" ")`); got != "user: approval:approve tool: assistant md:" {
		t.Errorf("after the answer the page shows %q", got)
	}

	// An answer typed instead of pressed answers the card too.
	if _, err := c.a.SendMessage(ctx, Home, question("shell", "make deploy")); err != nil {
		t.Fatal(err)
	}
	c.poll(t, "the second question", `document.querySelectorAll('li.approval[data-state="pending"]').length === 1`)
	c.do(t, chromedp.SendKeys(chromedp.CSS("#input"), "/deny"), enter())
	if ev := c.said(t); ev.Text != "/deny" {
		t.Fatalf("typed answer %q", ev.Text)
	}
	c.poll(t, "the typed answer shown", `!document.querySelector('li.approval[data-state="pending"]') && !!document.querySelector('li.approval[data-state="deny"]')`)

	// A question nobody answered in time is not left waiting.
	if _, err := c.a.SendMessage(ctx, Home, question("shell", "make test")); err != nil {
		t.Fatal(err)
	}
	c.poll(t, "the third question", `document.querySelectorAll('li.approval[data-state="pending"]').length === 1`)
	if _, err := c.a.SendMessage(ctx, Home, expired("shell", time.Minute)); err != nil {
		t.Fatal(err)
	}
	c.poll(t, "the expired question", `!document.querySelector('li.approval[data-state="pending"]') && !!document.querySelector('li.approval[data-state="expired"]')`)
}

// repeatShownOnce: a delivery sent again (its page's acknowledgement was
// lost, the gateway restarted) is shown once, and the page acknowledges
// it again, so the try counts as delivered.
func repeatShownOnce(t *testing.T, tab context.Context, w size) {
	c := openChat(t, tab, &memTranscripts{}, w.width, w.height)
	ctx := platform.WithDeliveryKey(t.Context(), "in:7:part:0")
	for try := range 2 {
		if _, err := c.a.Send(ctx, Home, "Shown once."); err != nil {
			t.Fatalf("try %d: %v", try+1, err)
		}
	}
	if _, err := c.a.Send(t.Context(), Home, "Then this."); err != nil {
		t.Fatal(err)
	}
	c.poll(t, "the later message", `document.getElementById("messages").innerText.includes("Then this.")`)
	shownOnce := `[...document.querySelectorAll("#messages li")].filter(l => l.innerText.includes("Shown once.")).length`
	if n := browser.Eval[int](c.ctx, t, shownOnce); n != 1 {
		t.Errorf("a message sent twice is shown %d times", n)
	}

	// A reload keeps what the page showed, and still knows it as shown
	// when it is sent once more.
	c.do(t, chromedp.Reload())
	c.poll(t, "the reloaded page to connect", `document.querySelectorAll("#conversations li").length > 0 && document.getElementById("status").innerText === ""`)
	c.poll(t, "the message kept across the reload", shownOnce+` === 1`)
	if _, err := c.a.Send(ctx, Home, "Shown once."); err != nil {
		t.Fatal(err)
	}
	if _, err := c.a.Send(t.Context(), Home, "And that."); err != nil {
		t.Fatal(err)
	}
	c.poll(t, "the message after the reload", `document.getElementById("messages").innerText.includes("And that.")`)
	if n := browser.Eval[int](c.ctx, t, shownOnce); n != 1 {
		t.Errorf("after a reload, a message sent again is shown %d times", n)
	}
}

func layoutAndColours(t *testing.T, tab context.Context, w size) {
	store := &memTranscripts{convs: []Conversation{{Key: "web:thread:main:abc", Title: "Trip plans", Updated: time.Now()}}}
	store.add(Home.Key(), Line{Role: "assistant", Text: "Hello", Time: time.Now()})
	c := openChat(t, tab, store, w.width, w.height)
	c.poll(t, "the list", `document.querySelectorAll("#conversations li").length === 2`)
	c.do(t, js(`document.querySelector('#conversations li[data-key="web:dm:main"]').click()`))
	c.poll(t, "home open", `document.getElementById("title").innerText === "Home"`)

	side, main, menu := c.box(t, "#sidebar"), c.box(t, "main"), c.box(t, "#menu")
	if w.width < 768 {
		// A phone: the list is a drawer, closed; the conversation
		// takes the whole width.
		if side.Visible || !menu.Visible || main.Width != float64(w.width) {
			t.Fatalf("phone layout: sidebar %+v, menu %+v, main %+v", side, menu, main)
		}
		c.do(t, chromedp.Click(chromedp.CSS("#menu")))
		c.poll(t, "the drawer to open", `document.getElementById("sidebar").getBoundingClientRect().left === 0 && getComputedStyle(document.getElementById("sidebar")).visibility === "visible"`)
		if side = c.box(t, "#sidebar"); side.Width > 0.86*float64(w.width) || side.Width < 200 {
			t.Errorf("open drawer %+v", side)
		}
		c.do(t, chromedp.Click(chromedp.CSS(`#conversations li[data-key="web:thread:main:abc"]`)))
		c.poll(t, "the drawer to close on a choice", `document.getElementById("title").innerText === "Trip plans" && getComputedStyle(document.getElementById("sidebar")).visibility === "hidden"`)
	} else {
		if !side.Visible || side.Width != 260 || menu.Visible || main.Left != 260 || main.Width != float64(w.width)-260 {
			t.Fatalf("wide layout: sidebar %+v, menu %+v, main %+v", side, menu, main)
		}
	}
	// The composer spans the conversation and the send button is
	// big enough to press.
	if in, send := c.box(t, "#input"), c.box(t, "#send"); in.Width < main.Width*0.6 || send.Height < 36 || send.Right > float64(w.width) {
		t.Errorf("composer: input %+v, send %+v", in, send)
	}

	// Light and dark follow the system.
	colours := func() string {
		return c.text(t, `[document.body, document.getElementById("composer"), document.getElementById("input")].map(e => getComputedStyle(e).backgroundColor + "/" + getComputedStyle(e).color).join(" ")`)
	}
	light := colours()
	c.do(t, colorScheme("dark"))
	dark := colours()
	if !strings.HasPrefix(light, "rgb(246, 246, 247)/rgb(29, 29, 31)") || !strings.HasPrefix(dark, "rgb(22, 22, 24)/rgb(232, 232, 234)") {
		t.Errorf("colours light %q, dark %q", light, dark)
	}
	if lum(t, dark) >= lum(t, light) {
		t.Errorf("dark is not darker: %q vs %q", dark, light)
	}
	c.do(t, colorScheme("light"))
}

// lum is the first colour's brightness in a list of computed colours.
func lum(t *testing.T, colours string) float64 {
	var r, g, b float64
	if _, err := fmt.Sscanf(colours, "rgb(%v, %v, %v)", &r, &g, &b); err != nil {
		t.Fatalf("colour %q: %v", colours, err)
	}
	return 0.2126*r + 0.7152*g + 0.0722*b
}

func composer(t *testing.T, tab context.Context, w size) {
	c := openChat(t, tab, &memTranscripts{}, w.width, w.height)
	h0 := c.box(t, "#input").Height
	shiftEnter := enter(chromedp.ModifierShift)
	c.do(t, chromedp.Click(chromedp.CSS("#input")), chromedp.KeyEvent("one"), shiftEnter, chromedp.KeyEvent("two"), shiftEnter, chromedp.KeyEvent("three"))
	if v := c.text(t, `document.getElementById("input").value`); v != "one\ntwo\nthree" {
		t.Fatalf("Shift+Enter: input holds %q", v)
	}
	if n := c.text(t, `String(document.querySelectorAll("#messages li.user").length)`); n != "0" {
		t.Fatal("Shift+Enter sent the message")
	}
	if h := c.box(t, "#input").Height; h < h0+30 {
		t.Errorf("the input did not grow with three lines: %.0f → %.0f px", h0, h)
	}
	c.do(t, enter())
	if ev := c.said(t); ev.Text != "one\ntwo\nthree" {
		t.Fatalf("Enter sent %q", ev.Text)
	}
	c.poll(t, "the input emptied", `document.getElementById("input").value === "" && document.querySelectorAll("#messages li.user").length === 1`)
	if h := c.box(t, "#input").Height; math.Abs(h-h0) > 1 {
		t.Errorf("the emptied input stayed %.0f px (was %.0f)", h, h0)
	}

	// The reply streams in, rendered as it is written.
	for _, piece := range []string{"Counting: **one", ", two**"} {
		if err := c.a.Delta(t.Context(), Home, piece); err != nil {
			t.Fatal(err)
		}
	}
	c.poll(t, "the streamed reply", `(document.querySelector("#messages li.streaming strong") || {}).textContent === "one, two"`)
}

func unreadMarks(t *testing.T, tab context.Context, w size) {
	other := platform.Address{Platform: Name, Kind: platform.Thread, Chat: HomeChat, Thread: "abc"}
	store := &memTranscripts{convs: []Conversation{{Key: other.Key(), Title: "Trip plans", Updated: time.Now()}}}
	c := openChat(t, tab, store, w.width, w.height)
	c.do(t, js(`document.querySelector('#conversations li[data-key="web:dm:main"]').click()`))
	c.poll(t, "home open", `document.getElementById("title").innerText === "Home" && document.querySelectorAll("#conversations li").length === 2`)

	// Answers in another conversation mark it and the title.
	for range 2 {
		if _, err := c.a.Send(t.Context(), other, "Flights found."); err != nil {
			t.Fatal(err)
		}
	}
	c.poll(t, "the unread mark", `document.title === "(2) baton" && document.querySelector('#conversations li[data-key="`+other.Key()+`"] .badge').textContent === "2"`)
	if w.width < 768 && !strings.Contains(c.text(t, `document.getElementById("menu").className`), "unread") {
		t.Error("the closed drawer's button does not show that something is unread")
	}
	c.do(t, js(`document.querySelector('#conversations li[data-key="`+other.Key()+`"]').click()`))
	c.poll(t, "the mark cleared once read", `document.title === "baton" && !document.querySelector("#conversations .badge")`)

	// An answer in the open conversation while the tab is in the
	// background marks the title until the tab is seen again.
	c.do(t, hidden(true))
	if _, err := c.a.Send(t.Context(), other, "Booked."); err != nil {
		t.Fatal(err)
	}
	c.poll(t, "the title badge of a background tab", `document.title === "(1) baton"`)
	c.do(t, hidden(false))
	c.poll(t, "the badge cleared when the tab is seen", `document.title === "baton"`)
}

// hidden puts the tab in the background or brings it back. Headless
// Chromium keeps every tab visible, so the page is told as the browser
// would tell it: document.hidden and a visibilitychange event.
func hidden(h bool) chromedp.Action[chromedp.Void] {
	state := "visible"
	if h {
		state = "hidden"
	}
	return js(`Object.defineProperty(document, "visibilityState", {value: "` + state + `", configurable: true});
		Object.defineProperty(document, "hidden", {value: ` + fmt.Sprint(h) + `, configurable: true});
		document.dispatchEvent(new Event("visibilitychange"))`)
}

// enter presses Enter as a keyboard does: the line break it types is
// part of the key press, so a page that handles the key stops it.
func enter(modifiers ...chromedp.Modifier) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		var mods chromedp.Modifier
		for _, m := range modifiers {
			mods |= m
		}
		down := input.DispatchKeyEventParams{Type: input.DispatchKeyEventTypeKeyDown, Key: "Enter", Code: "Enter", WindowsVirtualKeyCode: 13, NativeVirtualKeyCode: 13, Text: "\r", UnmodifiedText: "\r", Modifiers: int64(mods)}
		if _, err := cdp.Call(ctx, t, input.DispatchKeyEvent, down); err != nil {
			return err
		}
		up := down
		up.Type, up.Text, up.UnmodifiedText = input.DispatchKeyEventTypeKeyUp, "", ""
		_, err := cdp.Call(ctx, t, input.DispatchKeyEvent, up)
		return err
	})
}

// js runs statements in the page.
func js(statements string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := chromedp.Evaluate[bool]("(() => { "+statements+"; return true; })()")(ctx, t)
		return err
	})
}

// A sign-in is a persistent cookie: the plain address still opens the
// page after the browser is quit and started again.
func TestSignInOutlivesBrowserRestart(t *testing.T) {
	store := &memTranscripts{}
	profile := filepath.Join(t.TempDir(), "chromium")
	tab, stop := browser.StartWithProfile(t, profile)
	c := openChat(t, tab, store, 1280, 800)
	cookies, err := chromedp.Run(tab, chromedp.Action[[]*network.Cookie](getCookies))
	if err != nil {
		t.Fatal(err)
	}
	var signIn *network.Cookie
	for _, ck := range cookies {
		if ck.Name == cookieName {
			signIn = ck
		}
	}
	if signIn == nil {
		t.Fatalf("no sign-in cookie among %d", len(cookies))
	}
	lasts := time.Until(time.Unix(int64(signIn.Expires), 0))
	if signIn.Session || lasts < DefaultSignIn-time.Hour || lasts > DefaultSignIn+time.Hour || !signIn.HTTPOnly || signIn.SameSite != network.CookieSameSiteStrict {
		t.Errorf("sign-in cookie %+v (lasts %v): want a persistent, HttpOnly, SameSite=Strict cookie of 30 days", signIn, lasts)
	}
	stop()

	tab2, stop2 := browser.StartWithProfile(t, profile)
	defer stop2()
	plain := "http://" + c.a.Addr() + "/"
	if err := chromedp.Do(tab2, chromedp.Navigate(plain)); err != nil {
		t.Fatal(err)
	}
	browser.Poll(tab2, t, "the page, signed in, after a restart", `!!document.getElementById("messages") && document.getElementById("title").innerText === "Home"`)
}

var clearCookies = chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
	_, err := cdp.Call(ctx, t, network.ClearBrowserCookies, cdp.Empty{})
	return err
})

func getCookies(ctx context.Context, t *chromedp.Target) ([]*network.Cookie, error) {
	res, err := cdp.Call(ctx, t, network.GetCookies, network.GetCookiesParams{})
	if err != nil {
		return nil, err
	}
	return res.Cookies, nil
}

// Without a sign-in the browser gets a page saying how to sign in, and
// its form signs in with the token.
func signInPage(t *testing.T, tab context.Context, w size) {
	a := run(t, Config{})
	// Cookies are not kept per port: forget the last subtest's sign-in.
	if err := chromedp.Do(tab, clearCookies, chromedp.EmulateViewport(w.width, w.height), chromedp.Navigate("http://"+a.Addr()+"/")); err != nil {
		t.Fatal(err)
	}
	browser.Poll(tab, t, "the sign-in page", `!!document.getElementById("signin")`)
	body := browser.Eval[string](tab, t, `document.body.innerText`)
	for _, want := range []string{"not signed in", "?token=", "baton gateway status", "$BATON_HOME/" + TokenFile, "Sign in"} {
		if !strings.Contains(body, want) {
			t.Errorf("the sign-in page does not say %q:\n%s", want, body)
		}
	}
	if sw := browser.Eval[float64](tab, t, `document.documentElement.scrollWidth`); sw > float64(w.width) {
		t.Errorf("sign-in page %v px wide on %d", sw, w.width)
	}
	if err := chromedp.Do(tab, chromedp.SendKeys(chromedp.CSS("input[name=token]"), testToken), enter()); err != nil {
		t.Fatal(err)
	}
	browser.Poll(tab, t, "the page after signing in", `!!document.getElementById("messages") && document.getElementById("title").innerText === "Home"`)
	if u := browser.Eval[string](tab, t, `location.href`); strings.Contains(u, "token") {
		t.Errorf("the token stayed in the address: %s", u)
	}
}

// Screenshots of the page at both widths, light and dark, when
// BATON_SCREENSHOTS names a folder: for people to look at, so nothing in
// them is asserted beyond being saved.
func TestPageScreenshots(t *testing.T) {
	dir := os.Getenv("BATON_SCREENSHOTS")
	if dir == "" {
		t.Skip("set BATON_SCREENSHOTS to a folder to save screenshots of the page")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	tab := browser.Start(t)
	for _, w := range widths {
		now := time.Now()
		other := platform.Address{Platform: Name, Kind: platform.Thread, Chat: HomeChat, Thread: "trip"}
		store := &memTranscripts{convs: []Conversation{
			{Key: other.Key(), Title: "Trip to Lisbon", Updated: now},
			{Key: "web:thread:main:notes", Title: "Reading notes", Updated: now.Add(-time.Hour)},
		}}
		store.add(Home.Key(),
			Line{Role: "user", Text: "Which Go files are biggest? Then tidy the build folder.", Time: now},
			Line{Role: "tool", Tool: "shell", Call: "call", CallID: "c1", Detail: `{"command":"wc -l $(git ls-files '*.go') | sort -n | tail -4"}`, Time: now},
			Line{Role: "tool", Tool: "shell", Call: "result", CallID: "c1", Detail: "   412 internal/gateway/router.go\n   574 internal/platform/web/web.go\n   611 internal/agent/agent.go\n  2140 total\n(and 36 more lines)\n.\n.\n.", Time: now},
			Line{Role: "assistant", Text: "The biggest files:\n\n| file | lines |\n|---|--:|\n| internal/agent/agent.go | 611 |\n| internal/platform/web/web.go | 574 |\n\n" +
				"- **agent.go** runs the turns\n- **web.go** serves this page\n\n```sh\nwc -l $(git ls-files '*.go')\n```\n\nNow the build folder:", Time: now},
			Line{Role: "tool", Tool: "shell", Call: "call", CallID: "c2", Detail: `{"command":"rm -rf build"}`, Time: now.Add(time.Second)},
		)
		c := openChat(t, tab, store, w.width, w.height)
		c.do(t, js(`document.querySelector('#conversations li[data-key="web:dm:main"]').click()`))
		if _, err := c.a.SendMessage(t.Context(), Home, question("shell", "rm -rf build")); err != nil {
			t.Fatal(err)
		}
		if _, err := c.a.Send(t.Context(), other, "I found three flights."); err != nil {
			t.Fatal(err)
		}
		c.poll(t, "the question", `!!document.querySelector('li.approval[data-state="pending"]') && !!document.querySelector("#conversations .badge")`)
		for _, scheme := range []string{"light", "dark"} {
			c.do(t, colorScheme(scheme))
			shot, err := chromedp.Run(tab, chromedp.CaptureScreenshot())
			if err != nil {
				t.Fatal(err)
			}
			name := filepath.Join(dir, fmt.Sprintf("web-%d-%s.png", w.width, scheme))
			if err := os.WriteFile(name, shot, 0o644); err != nil {
				t.Fatal(err)
			}
			t.Logf("saved %s (%d KiB)", name, len(shot)>>10)
		}
	}
}

// TestTwoTabs: one conversation open in two tabs. The answer to a
// command typed in one tab reaches that tab even when it was away (a
// reload, a lost connection) while the other tab showed it; an approval
// question shows in a tab opened after it was asked, and its answer in
// every tab.
func TestTwoTabs(t *testing.T) {
	first := browser.Start(t)
	store := &memTranscripts{}
	store.add(Home.Key(), Line{Role: "user", Text: "hello", Time: time.Now()}, Line{Role: "assistant", Text: "Hi!", Time: time.Now()})
	a := openChat(t, first, store, 1280, 800)
	b := a.newTab(t)

	// Tab B asks, and leaves before the answer comes; tab A shows it.
	b.do(t, chromedp.SendKeys(chromedp.CSS("#input"), "/status"), enter())
	if ev := b.said(t); ev.Text != "/status" {
		t.Fatalf("tab B said %q", ev.Text)
	}
	// (Stored: a tab that leaves before that sends it again when back.)
	b.poll(t, "the command stored", `document.getElementById("status").innerText === ""`)
	b.do(t, chromedp.Navigate("about:blank"))
	testutil.Eventually(t, 0, func() bool { return pages(a.a) == 1 }, "tab B's page to be gone")
	if _, err := a.a.Send(platform.WithDeliveryKey(t.Context(), "in:1:part:0"), Home, "All **well**."); err != nil {
		t.Fatal(err)
	}
	a.poll(t, "the answer in tab A", `document.getElementById("messages").innerText.includes("All well.")`)

	// Tab B comes back: the answer is there, after the command it typed.
	b.do(t, chromedp.Navigate("http://"+a.a.Addr()+"/"))
	b.poll(t, "the answer in tab B, after its command", `(() => { const t = document.getElementById("messages").innerText;
		return t.includes("/status") && t.indexOf("/status") < t.indexOf("All well."); })()`)

	// A question asked while tab B shows the conversation; a third tab
	// opened afterwards shows it too, and can answer it.
	if _, err := a.a.SendMessage(t.Context(), Home, question("shell", "make deploy")); err != nil {
		t.Fatal(err)
	}
	b.poll(t, "the question in tab B", `document.querySelectorAll('li.approval[data-state="pending"] button').length === 3`)
	c := a.newTab(t)
	c.poll(t, "the question in a tab opened after it", `document.querySelectorAll('li.approval[data-state="pending"] button').length === 3`)
	c.do(t, chromedp.Click(chromedp.CSS(`li.approval button[data-answer="deny"]`)))
	if ev := c.said(t); ev.Text != "/deny" {
		t.Fatalf("the third tab answered %q", ev.Text)
	}
	c.poll(t, "the answer in place of the buttons", `!!document.querySelector('li.approval[data-state="deny"]') && !document.querySelector("li.approval button")`)
	b.poll(t, "the answer given in the third tab shown in tab B", `!!document.querySelector('li.approval[data-state="deny"]') && !document.querySelector("li.approval button")`)

	// Answered: a tab opened now is not asked again.
	d := a.newTab(t)
	d.poll(t, "the transcript in a fourth tab", `document.getElementById("messages").innerText.includes("Hi!")`)
	// A question would have come right after the transcript, before this.
	if _, err := a.a.Send(t.Context(), Home, "Not deployed."); err != nil {
		t.Fatal(err)
	}
	d.poll(t, "the next message in the fourth tab", `document.getElementById("messages").innerText.includes("Not deployed.")`)
	if n := browser.Eval[int](d.ctx, t, `document.querySelectorAll("li.approval").length`); n != 0 {
		t.Errorf("a tab opened after the question was answered shows %d approval cards", n)
	}
}

// newTab opens the page in another tab of the same browser (signed in
// already), sharing the adapter and what the pages say.
func (c *chat) newTab(t *testing.T) *chat {
	t.Helper()
	tab, cancel := chromedp.NewContext(c.ctx)
	t.Cleanup(cancel)
	if err := chromedp.Do(tab, chromedp.EmulateViewport(1280, 800), chromedp.Navigate("http://"+c.a.Addr()+"/")); err != nil {
		t.Fatal(err)
	}
	browser.Poll(tab, t, "the new tab to connect", `document.querySelectorAll("#conversations li").length > 0 && document.getElementById("status").innerText === ""`)
	return &chat{a: c.a, store: c.store, events: c.events, ctx: tab}
}
