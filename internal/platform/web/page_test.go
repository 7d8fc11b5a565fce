package web

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/baton-agent/baton/internal/command"
	"github.com/baton-agent/baton/internal/place"
	"github.com/baton-agent/baton/internal/platform"
	"github.com/baton-agent/baton/internal/testutil/browser"
)

// TestPageKeepsWhatThePersonSees drives the page at a phone's width and a
// desktop's: a message typed while the session is elsewhere stays shown,
// marked kept; /help reads as names and wrapped descriptions; the copy
// button leaves code readable; the newest message stays in view when the
// screen changes size and while baton works; a draft outlives a reload.
func TestPageKeepsWhatThePersonSees(t *testing.T) {
	tab := browser.Start(t)
	for _, w := range widths {
		t.Run(w.name, func(t *testing.T) {
			for _, part := range []struct {
				name string
				test func(*testing.T, context.Context, size)
			}{
				{"a message typed while the session is elsewhere is shown, kept", keptMessage},
				{"help shows names and descriptions, wrapped", helpWraps},
				{"the copy button covers no code", copyButtonBesideCode},
				{"a resize keeps the newest message in view", resizeKeepsNewest},
				{"baton is working shows below the newest message", workingBelowNewest},
				{"a draft outlives a reload", draftKept},
				{"a message refused goes back to the input", refusedBackToInput},
				{"a message waiting for its turn stays shown", waitingStaysShown},
			} {
				t.Run(part.name, func(t *testing.T) { part.test(t, tab, w) })
			}
		})
	}
}

// reload reloads the page and waits for it to connect again.
func (c *chat) reload(t *testing.T) {
	t.Helper()
	c.do(t, chromedp.Reload())
	c.poll(t, "the reloaded page to connect", `document.querySelectorAll("#conversations li").length > 0 && document.getElementById("status").innerText === ""`)
}

// set replaces a conversation's transcript, as a turn that rewrote it.
func (m *memTranscripts) set(key string, ls ...Line) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.lines[key] = ls
}

// userBubbles is what the person's bubbles say, in order, each with
// " [kept]" when marked kept.
const userBubbles = `[...document.querySelectorAll("#messages > li.user")].map(l => (l.querySelector(".said") || l).textContent + (l.classList.contains("kept") ? " [kept]" : "")).join("|")`

func keptMessage(t *testing.T, tab context.Context, w size) {
	store := &memTranscripts{}
	start := time.Now()
	store.add(Home.Key(), Line{Role: "user", Text: "hi", Time: start, ID: eventID(Home.Key(), "x1")}, Line{Role: "assistant", Text: "Hello.", Time: start})
	c := openChat(t, tab, store, w.width, w.height)
	c.poll(t, "the transcript", `document.getElementById("messages").innerText.includes("Hello.")`)

	// Typed while the session is in Telegram: the gateway keeps it and
	// answers with where the conversation is (and parks it only after
	// that line was shown, so the history may not have it yet).
	c.do(t, chromedp.SendKeys(chromedp.CSS("#input"), "are you there?"), enter())
	ev := c.said(t)
	where := place.Elsewhere("Telegram", start, time.Now())
	if _, err := c.a.SendMessage(platform.WithDeliveryKey(t.Context(), "in:7:where"), Home, elsewhere("Telegram", where)); err != nil {
		t.Fatal(err)
	}
	c.poll(t, "the line saying where the conversation is", `document.getElementById("messages").innerText.includes("This conversation is in Telegram now")`)
	c.poll(t, "the person's message, kept", userBubbles+` === "hi|are you there? [kept]"`)
	note := c.text(t, `(document.querySelector("#messages > li.user.kept .kept-note") || {}).textContent || ""`)
	if !strings.Contains(note, "/continue") {
		t.Errorf("the kept message does not say what becomes of it: %q", note)
	}
	if b := c.box(t, "#messages > li.user.kept"); !b.Visible || b.Right > float64(w.width) {
		t.Errorf("the kept message is not shown within the screen: %+v", b)
	}

	// After a reload the history has it, parked: shown once, kept, before
	// the line that answered it.
	store.add(Home.Key(), Line{Role: "user", Text: "are you there?", Time: ev.Time, ID: ev.ID, Kept: true})
	c.reload(t)
	c.poll(t, "the kept message after a reload", userBubbles+` === "hi|are you there? [kept]"`)
	if got := c.text(t, `(() => { const t = document.getElementById("messages").innerText; return String(t.indexOf("are you there?") < t.indexOf("This conversation is in Telegram")); })()`); got != "true" {
		t.Error("the kept message is not above the line that answered it")
	}

	// /continue runs it: an ordinary message, shown once.
	store.set(Home.Key(), Line{Role: "user", Text: "hi", Time: start, ID: eventID(Home.Key(), "x1")}, Line{Role: "assistant", Text: "Hello.", Time: start},
		Line{Role: "user", Text: "are you there?", Time: time.Now(), ID: ev.ID}, Line{Role: "assistant", Text: "Yes, still here.", Time: time.Now()})
	if _, err := c.a.Send(t.Context(), Home, "Yes, still here."); err != nil {
		t.Fatal(err)
	}
	c.poll(t, "the kept message answered", `document.getElementById("messages").innerText.includes("Yes, still here.")`)
	c.poll(t, "the message run, no longer kept", userBubbles+` === "hi|are you there?"`)
}

func helpWraps(t *testing.T, tab context.Context, w size) {
	store := &memTranscripts{}
	store.add(Home.Key(), Line{Role: "user", Text: "/help", Time: time.Now()},
		Line{Role: "assistant", Text: "You can type:\n\n" + command.Default().Help(command.Chat), Time: time.Now()})
	c := openChat(t, tab, store, w.width, w.height)
	c.poll(t, "the help", `document.querySelectorAll("#messages .columns").length > 0`)
	type row struct {
		Name, Desc                         string
		NameLeft, DescLeft, DescRight      float64
		DescTop, NameTop, DescLines, Right float64
	}
	rows := browser.Eval[[]row](c.ctx, t, `[...document.querySelectorAll("#messages .columns .col-row")].map(r => {
		const n = r.querySelector(".col-name"), d = r.querySelector(".col-desc"), nb = n.getBoundingClientRect(), db = d.getBoundingClientRect();
		return {Name: n.textContent, Desc: d.textContent, NameLeft: nb.left, DescLeft: db.left, DescRight: db.right, DescTop: db.top, NameTop: nb.top,
			DescLines: Math.round(db.height / parseFloat(getComputedStyle(d).lineHeight)), Right: r.closest("li").getBoundingClientRect().right};
	})`)
	if len(rows) < 15 {
		t.Fatalf("help shows %d commands with descriptions: %+v", len(rows), rows)
	}
	wrapped := false
	for _, r := range rows {
		if r.Desc == "" || !strings.HasPrefix(r.Name, "/") {
			t.Errorf("help row %+v: want a command and what it does", r)
		}
		if r.DescRight > r.Right || r.DescRight > float64(w.width) {
			t.Errorf("%s: its description runs past its bubble (%.0f > %.0f)", r.Name, r.DescRight, r.Right)
		}
		wrapped = wrapped || r.DescLines > 1
	}
	if w.width < 768 && !wrapped {
		t.Error("no description wraps on a phone: are they cut?")
	}
	if w.width >= 768 {
		// Side by side, every description starting at one column.
		for _, r := range rows {
			if r.DescLeft != rows[0].DescLeft || r.DescTop != r.NameTop {
				t.Errorf("%s: description at %.0f,%.0f, name at %.0f; want it beside the name, in line with the others at %.0f", r.Name, r.DescLeft, r.DescTop, r.NameTop, rows[0].DescLeft)
			}
		}
	}
	if n := browser.Eval[int](c.ctx, t, `[...document.querySelectorAll("#messages li *")].filter(e => e.scrollWidth > e.clientWidth + 1 && getComputedStyle(e).overflowX !== "visible").length`); n != 0 {
		t.Errorf("%d parts of the help scroll sideways", n)
	}
}

func copyButtonBesideCode(t *testing.T, tab context.Context, w size) {
	store := &memTranscripts{}
	store.add(Home.Key(), Line{Role: "assistant", Text: "Run:\n\n```\nls -la\n```\n\nthen\n\n```sh\ngo test -count=1 ./internal/x/\n```", Time: time.Now()})
	c := openChat(t, tab, store, w.width, w.height)
	c.poll(t, "the code blocks", `document.querySelectorAll("#messages .code button.copy").length === 2`)
	overlaps := browser.Eval[[]string](c.ctx, t, `[...document.querySelectorAll("#messages .code")].flatMap(box => {
		const b = box.querySelector("button.copy").getBoundingClientRect(), code = box.querySelector("pre code"), r = document.createRange();
		r.selectNodeContents(code);
		return [...r.getClientRects()].filter(t => t.width > 0 && t.left < b.right && b.left < t.right && t.top < b.bottom && b.top < t.bottom).map(() => code.textContent.trim());
	})`)
	if len(overlaps) > 0 {
		t.Errorf("the copy button covers code: %q", overlaps)
	}
	if b := c.box(t, "#messages .code button.copy"); !b.Visible || b.Height < 20 {
		t.Errorf("the copy button is not there to press: %+v", b)
	}
}

// manyLines is a conversation long enough to scroll.
func manyLines(n int) []Line {
	var ls []Line
	for i := range n {
		ls = append(ls, Line{Role: "user", Text: fmt.Sprintf("question %d", i+1), Time: time.Now()},
			Line{Role: "assistant", Text: fmt.Sprintf("answer %d", i+1), Time: time.Now()})
	}
	return ls
}

// newestInView reports whether the last message is wholly within the
// list's visible part.
const newestInView = `(() => { const m = document.getElementById("messages").getBoundingClientRect(), l = document.querySelector("#messages > li:last-child").getBoundingClientRect();
	return l.bottom <= m.bottom + 1 && l.top >= m.top - 1; })()`

func resizeKeepsNewest(t *testing.T, tab context.Context, w size) {
	store := &memTranscripts{}
	store.add(Home.Key(), manyLines(30)...)
	c := openChat(t, tab, store, w.width, w.height)
	c.poll(t, "the newest message in view", `document.getElementById("messages").innerText.includes("answer 30") && `+newestInView)
	// A keyboard opening, a rotation, and back.
	for _, s := range [][2]int64{{w.width, w.height - 300}, {w.height, w.width}, {w.width, w.height}} {
		c.do(t, chromedp.EmulateViewport(s[0], s[1]))
		c.poll(t, fmt.Sprintf("the newest message in view at %d×%d", s[0], s[1]), `innerWidth === `+fmt.Sprint(s[0])+` && `+newestInView)
	}
	// Someone reading further up is left where they are.
	c.do(t, js(`document.getElementById("messages").scrollTop = 0`))
	c.do(t, chromedp.EmulateViewport(w.width, w.height-200))
	c.poll(t, "the smaller screen", `innerHeight === `+fmt.Sprint(w.height-200))
	if top := browser.Eval[float64](c.ctx, t, `document.getElementById("messages").scrollTop`); top != 0 {
		t.Errorf("reading the start, a resize moved the list to %.0f", top)
	}
	c.do(t, chromedp.EmulateViewport(w.width, w.height))
}

func workingBelowNewest(t *testing.T, tab context.Context, w size) {
	store := &memTranscripts{}
	store.add(Home.Key(), manyLines(30)...)
	c := openChat(t, tab, store, w.width, w.height)
	c.poll(t, "the newest message in view", `document.getElementById("messages").innerText.includes("answer 30") && `+newestInView)
	if err := c.a.Typing(t.Context(), Home); err != nil {
		t.Fatal(err)
	}
	c.poll(t, "baton is working", `document.getElementById("status").innerText.includes("working")`)
	status, list, composer := c.box(t, "#status"), c.boxTop(t, "#messages"), c.boxTop(t, "#composer")
	st := c.boxTop(t, "#status")
	if !status.Visible || st.Top < list.Bottom-1 || st.Bottom > composer.Top+1 {
		t.Errorf("baton is working at %.0f–%.0f: want it between the list (ends %.0f) and the input (starts %.0f)", st.Top, st.Bottom, list.Bottom, composer.Top)
	}
	c.poll(t, "the newest message still in view", newestInView)
	// Reading from the start, the first message is wholly there.
	c.do(t, js(`document.getElementById("messages").scrollTop = 0`))
	first := c.boxTop(t, "#messages > li:first-child")
	if first.Top < list.Top || c.boxTop(t, "#bar").Bottom > first.Top {
		t.Errorf("the first message (%.0f–%.0f) is covered (list from %.0f)", first.Top, first.Bottom, list.Top)
	}
}

// span is an element's top and bottom in the viewport.
type span struct{ Top, Bottom float64 }

func (c *chat) boxTop(t *testing.T, sel string) span {
	t.Helper()
	return browser.Eval[span](c.ctx, t, `(() => { const r = document.querySelector(`+browser.JSString(sel)+`).getBoundingClientRect(); return {Top: r.top, Bottom: r.bottom}; })()`)
}

func draftKept(t *testing.T, tab context.Context, w size) {
	other := platform.Address{Platform: Name, Kind: platform.Thread, Chat: HomeChat, Thread: "d1"}
	store := &memTranscripts{convs: []Conversation{{Key: other.Key(), Title: "Other", Updated: time.Now()}}}
	c := openChat(t, tab, store, w.width, w.height)
	c.do(t, js(`document.querySelector('#conversations li[data-key="web:dm:main"]').click()`))
	c.poll(t, "home open", `document.getElementById("title").innerText === "Home"`)
	c.do(t, chromedp.Click(chromedp.CSS("#input")), chromedp.KeyEvent("half a thought"))
	c.reload(t)
	c.do(t, js(`document.querySelector('#conversations li[data-key="web:dm:main"]').click()`))
	c.poll(t, "the draft after a reload", `document.getElementById("title").innerText === "Home" && document.getElementById("input").value === "half a thought"`)

	// Each conversation has its own.
	c.do(t, js(`document.querySelector('#conversations li[data-key="`+other.Key()+`"]').click()`))
	c.poll(t, "the other conversation's empty input", `document.getElementById("title").innerText === "Other" && document.getElementById("input").value === ""`)
	c.do(t, js(`document.querySelector('#conversations li[data-key="web:dm:main"]').click()`))
	c.poll(t, "home's draft back", `document.getElementById("input").value === "half a thought"`)

	// Sent, it is no draft any more.
	c.do(t, chromedp.Click(chromedp.CSS("#input")), enter())
	if ev := c.said(t); ev.Text != "half a thought" {
		t.Fatalf("sent %q", ev.Text)
	}
	c.reload(t)
	c.do(t, js(`document.querySelector('#conversations li[data-key="web:dm:main"]').click()`))
	c.poll(t, "home open", `document.getElementById("title").innerText === "Home"`)
	if v := c.text(t, `document.getElementById("input").value`); v != "" {
		t.Errorf("a sent message came back as a draft: %q", v)
	}
}

// TestTwoTabsSeeWhatIsSaid: what the person says in one tab shows in every
// tab open on that conversation, above the answer streaming there, and
// stays once the transcript has it; at a phone's width and a desktop's.
func TestTwoTabsSeeWhatIsSaid(t *testing.T) {
	first := browser.Start(t)
	for _, w := range widths {
		t.Run(w.name, func(t *testing.T) {
			store := &memTranscripts{}
			store.add(Home.Key(), Line{Role: "user", Text: "hello", Time: time.Now()}, Line{Role: "assistant", Text: "Hi!", Time: time.Now()})
			a := openChat(t, first, store, w.width, w.height)
			b := a.newTabAt(t, w)
			b.poll(t, "the transcript in tab B", `document.getElementById("messages").innerText.includes("Hi!")`)

			a.do(t, chromedp.SendKeys(chromedp.CSS("#input"), "what time is it?"), enter())
			ev := a.said(t)
			b.poll(t, "the question in tab B", userBubbles+` === "hello|what time is it?"`)
			if err := a.a.Delta(t.Context(), Home, "It is **noon**"); err != nil {
				t.Fatal(err)
			}
			b.poll(t, "the answer streaming below the question in tab B", `(() => { const l = [...document.querySelectorAll("#messages > li")];
				return l.length === 4 && l[2].classList.contains("user") && l[3].classList.contains("streaming"); })()`)
			if got := browser.Eval[string](a.ctx, t, userBubbles); got != "hello|what time is it?" {
				t.Errorf("tab A shows %q", got)
			}

			// The turn ends: each tab shows the question once.
			store.add(Home.Key(), Line{Role: "user", Text: "what time is it?", Time: time.Now(), ID: ev.ID}, Line{Role: "assistant", Text: "It is noon.", Time: time.Now()})
			if _, err := a.a.Send(t.Context(), Home, "It is noon."); err != nil {
				t.Fatal(err)
			}
			for _, c := range []*chat{a, b} {
				c.poll(t, "the answer", `document.getElementById("messages").innerText.includes("It is noon.") && !document.querySelector("#messages li.streaming")`)
				c.poll(t, "the question once", userBubbles+` === "hello|what time is it?"`)
			}
			b.reload(t)
			b.poll(t, "the question once after a reload", userBubbles+` === "hello|what time is it?"`)

			// Tab A sends it again (it reloaded before its acknowledgement
			// came): tab B still shows it once.
			a.a.broadcast(t.Context(), frame{Type: "said", Key: Home.Key(), ID: strings.TrimPrefix(ev.ID, Home.Key()+"|"), Text: "what time is it?", At: time.Now().UnixMilli()})
			if err := a.a.Typing(t.Context(), Home); err != nil {
				t.Fatal(err)
			}
			b.poll(t, "the frame after it", `document.getElementById("status").innerText.includes("working")`)
			if got := browser.Eval[string](b.ctx, t, userBubbles); got != "hello|what time is it?" {
				t.Errorf("after the question was sent again tab B shows %q", got)
			}
		})
	}
}

// newTabAt is newTab at the width of w.
func (c *chat) newTabAt(t *testing.T, w size) *chat {
	t.Helper()
	tab, cancel := chromedp.NewContext(c.ctx)
	t.Cleanup(cancel)
	if err := chromedp.Do(tab, chromedp.EmulateViewport(w.width, w.height), chromedp.Navigate("http://"+c.a.Addr()+"/")); err != nil {
		t.Fatal(err)
	}
	browser.Poll(tab, t, "the new tab to connect", `document.querySelectorAll("#conversations li").length > 0 && document.getElementById("status").innerText === ""`)
	return &chat{a: c.a, store: c.store, events: c.events, ctx: tab}
}

// Screenshots of what this file's tests drive (a kept message, /help, a
// code block, baton working), when BATON_SCREENSHOTS names a folder: for
// people to look at, so nothing in them is asserted beyond being saved.
func TestPageScreenshotsOfKeptAndHelp(t *testing.T) {
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
		store := &memTranscripts{}
		store.add(Home.Key(),
			Line{Role: "user", Text: "How do I run one package's tests?", Time: now.Add(-3 * time.Minute)},
			Line{Role: "assistant", Text: "Like this:\n\n```sh\ngo test ./internal/x/\n```", Time: now.Add(-3 * time.Minute)},
			Line{Role: "user", Text: "/help", Time: now.Add(-2 * time.Minute)},
			Line{Role: "assistant", Text: "You can type:\n\n" + command.Default().HelpOn(Name), Time: now.Add(-2 * time.Minute)},
			Line{Role: "user", Text: "and the race detector?", Time: now.Add(-time.Minute), ID: eventID(Home.Key(), "k1"), Kept: true},
		)
		c := openChat(t, tab, store, w.width, w.height)
		if _, err := c.a.SendMessage(t.Context(), Home, elsewhere("Telegram", place.Elsewhere("Telegram", now.Add(-5*time.Minute), now))); err != nil {
			t.Fatal(err)
		}
		c.poll(t, "the line", `document.getElementById("messages").innerText.includes("This conversation is in Telegram")`)
		for _, view := range []struct {
			name, js string
		}{
			{"top", `document.getElementById("messages").scrollTop = 0`},
			{"bottom", `document.getElementById("messages").scrollTop = 1e9`},
			{"help", `document.querySelector("#messages .columns").scrollIntoView({block: "start"})`},
		} {
			c.do(t, js(view.js))
			shot, err := chromedp.Run(tab, chromedp.CaptureScreenshot())
			if err != nil {
				t.Fatal(err)
			}
			name := filepath.Join(dir, fmt.Sprintf("web-%d-%s.png", w.width, view.name))
			if err := os.WriteFile(name, shot, 0o644); err != nil {
				t.Fatal(err)
			}
			t.Logf("saved %s", name)
		}
		if err := c.a.Typing(t.Context(), Home); err != nil {
			t.Fatal(err)
		}
		c.poll(t, "baton working", `document.getElementById("status").innerText !== ""`)
		c.do(t, js(`document.getElementById("messages").scrollTop = 1e9`), chromedp.SendKeys(chromedp.CSS("#input"), "a draft"))
		shot, err := chromedp.Run(tab, chromedp.CaptureScreenshot())
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("web-%d-working.png", w.width)), shot, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// A message the gateway refuses (here: too long) is not left shown as
// said, now or after a reload: its words go back to the input.
func refusedBackToInput(t *testing.T, tab context.Context, w size) {
	c := openChat(t, tab, &memTranscripts{}, w.width, w.height)
	c.do(t, js(`document.getElementById("input").value = "x".repeat(`+fmt.Sprint(MaxText+1)+`)`), chromedp.Click(chromedp.CSS("#send")))
	c.poll(t, "the refusal", `document.getElementById("status").innerText.includes("message too long")`)
	c.poll(t, "the words back in the input, no bubble", `document.getElementById("input").value.length === `+fmt.Sprint(MaxText+1)+` && !document.querySelector("#messages li.user")`)
	c.do(t, js(`document.getElementById("input").value = ""; document.getElementById("input").dispatchEvent(new Event("input"))`))
	c.reload(t)
	if n := browser.Eval[int](c.ctx, t, `document.querySelectorAll("#messages li.user").length`); n != 0 {
		t.Errorf("after a reload the refused message shows %d times", n)
	}
}

// Two messages said in quick succession: the first one's answer reloads
// the transcript, which has the first (stored when its turn began, after
// the second was said) but not yet the second, waiting for its turn. Both
// stay shown, in order.
func waitingStaysShown(t *testing.T, tab context.Context, w size) {
	store := &memTranscripts{}
	c := openChat(t, tab, store, w.width, w.height)
	c.do(t, chromedp.SendKeys(chromedp.CSS("#input"), "first"), enter())
	first := c.said(t)
	c.do(t, chromedp.SendKeys(chromedp.CSS("#input"), "second"), enter())
	c.said(t)
	c.poll(t, "both stored", `document.getElementById("status").innerText === ""`)
	store.add(Home.Key(), Line{Role: "user", Text: "first", Time: time.Now(), ID: first.ID}, Line{Role: "assistant", Text: "One.", Time: time.Now()})
	if _, err := c.a.Send(t.Context(), Home, "One."); err != nil {
		t.Fatal(err)
	}
	c.poll(t, "the first answer", `document.getElementById("messages").innerText.includes("One.")`)
	c.poll(t, "both messages, in order", userBubbles+` === "first|second"`)
	if got := c.text(t, `[...document.querySelectorAll("#messages > li")].map(l => l.className.split(" ")[0]).join(" ")`); got != "user assistant user" {
		t.Errorf("the page shows %q, want the first message, its answer, the second", got)
	}
}

// A message the gateway has not acknowledged when the page reloads (the
// store was slow) is sent again after the reload, with the same id (the
// gateway drops a repeat), and is shown once meanwhile.
func TestMessageUnstoredAtAReloadIsSentAgain(t *testing.T) {
	tab := browser.Start(t)
	store := &memTranscripts{}
	a, err := New(Config{Listen: "127.0.0.1:0", Token: testToken, Transcripts: store})
	if err != nil {
		t.Fatal(err)
	}
	events := make(chan platform.Event, 8)
	release := make(chan struct{})
	var once sync.Once
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- a.Run(ctx, platform.ReceiverFunc(func(ctx context.Context, ev platform.Event) error {
			events <- ev
			first := false
			once.Do(func() { first = true })
			if first { // the first try is never stored: the page goes first
				select {
				case <-release:
				case <-ctx.Done():
				}
				return errors.New("store gone")
			}
			return nil
		}))
	}()
	t.Cleanup(func() {
		close(release)
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	c := &chat{a: a, store: store, events: events, ctx: tab}
	if err := chromedp.Do(tab, chromedp.EmulateViewport(390, 844), chromedp.Navigate(a.URL())); err != nil {
		t.Fatal(err)
	}
	c.poll(t, "the page to connect", `document.querySelectorAll("#conversations li").length > 0`)
	c.do(t, chromedp.SendKeys(chromedp.CSS("#input"), "slow store"), enter())
	first := c.said(t)
	c.do(t, chromedp.Reload())
	again := c.said(t)
	if again.ID != first.ID || again.Text != "slow store" {
		t.Fatalf("after the reload the page said %+v, want %+v again", again, first)
	}
	c.poll(t, "the message shown once, stored", `document.getElementById("status").innerText === "" && `+userBubbles+` === "slow store"`)
}
