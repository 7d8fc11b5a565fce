package gateway_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/baton-agent/baton/internal/llm/llmtest"
	"github.com/baton-agent/baton/internal/platform/telegram/telegramtest"
	"github.com/baton-agent/baton/internal/platform/web"
	"github.com/baton-agent/baton/internal/testutil"
	"github.com/baton-agent/baton/internal/testutil/browser"
)

// A message typed in the web chat while the session is in Telegram is
// kept, and the page's history shows it, marked as kept, in its place (a
// reload shows it too) until /continue runs it; then it is an ordinary
// message of the transcript, once. What the page is told of handoffs
// names places, never baton's internal handoff ids.
func TestPageHistoryShowsKeptMessages(t *testing.T) {
	fake := telegramtest.New(t, botToken)
	fake.AddChat(telegramtest.Chat{ID: forum, Type: "supergroup", Title: "baton", IsForum: true})
	r := telegramRig(t, fake, "telegram:group:-100777")
	pg := r.openPage(t)
	key := web.Home.Key()
	noIDs := func(what string, f map[string]any) {
		t.Helper()
		if text := f["text"].(string); strings.Contains(text, "(handoff") {
			t.Errorf("%s shows an internal id: %q", what, text)
		}
	}

	r.model.Push(llmtest.Reply{Text: "Hello from the page."})
	pg.send(map[string]any{"type": "say", "key": key, "text": "hi", "id": "w1"})
	pg.await("the answer", isMsg("Hello from the page."))
	r.model.Push(llmtest.Reply{Text: "Hi on Telegram."})
	pg.send(map[string]any{"type": "say", "key": key, "text": "/handoff telegram", "id": "w2"})
	noIDs("the answer to /handoff", pg.await("the answer to /handoff", isMsg("Handing off to Telegram")))
	pg.await("the outcome", isMsg("now continues in Telegram."))

	pg.send(map[string]any{"type": "say", "key": key, "text": "are you there?", "id": "w3"})
	pg.await("where it is", isMsg("This conversation is in Telegram now"))
	lines := history(t, pg, key, "the kept message", func(ls []any) bool { return len(said(ls, "are you there?")) == 1 })
	kept := said(lines, "are you there?")[0]
	if kept["kept"] != true || kept["id"] != "w3" {
		t.Errorf("the message typed while the session was in Telegram shows as %v: want it marked kept, with the page's id", kept)
	}
	// The history ends as the page saw it live: the kept message, then
	// the line saying where the conversation is.
	if n := len(lines); n < 2 || lines[n-2].(map[string]any)["text"] != "are you there?" ||
		!strings.HasPrefix(lines[n-1].(map[string]any)["text"].(string), "This conversation is in Telegram now") {
		t.Errorf("the history does not end with the kept message and where the conversation is: %v", lines)
	}
	if hi := said(lines, "hi"); len(hi) != 1 || hi[0]["id"] != "w1" || hi[0]["kept"] == true {
		t.Errorf("the message that ran shows as %v: want its page id, not kept", hi)
	}

	r.model.Push(llmtest.Reply{Text: "Back on the page."}, llmtest.Reply{Text: "Yes, still here."})
	pg.send(map[string]any{"type": "say", "key": key, "text": "/continue", "id": "w4"})
	noIDs("the answer to /continue", pg.await("the answer to /continue", isMsg("here from Telegram")))
	pg.await("the kept message answered", isMsg("Yes, still here."))
	lines = history(t, pg, key, "the kept message run", func(ls []any) bool {
		m := said(ls, "are you there?")
		return len(m) == 1 && m[0]["kept"] != true
	})
	if m := said(lines, "are you there?")[0]; m["id"] != "w3" {
		t.Errorf("the message run after /continue shows as %v", m)
	}
}

// history opens key on the page until its history satisfies ok.
func history(t *testing.T, pg *page, key, what string, ok func([]any) bool) []any {
	t.Helper()
	var lines []any
	testutil.Eventually(t, testutil.Patience, func() bool {
		pg.send(map[string]any{"type": "open", "key": key})
		f := pg.await("the history", typ("history"))
		lines, _ = f["lines"].([]any)
		return ok(lines)
	}, "the page's history to show "+what)
	return lines
}

// said is the person's lines of a history that say text.
func said(lines []any, text string) []map[string]any {
	var out []map[string]any
	for _, l := range lines {
		if m := l.(map[string]any); m["role"] == "user" && m["text"] == text {
			out = append(out, m)
		}
	}
	return out
}

// The page's /help lists only the commands that have a use there.
func TestPageHelpListsWhatWorksThere(t *testing.T) {
	r := newRig(t, rigOpts{})
	pg := r.openPage(t)
	pg.send(map[string]any{"type": "say", "key": web.Home.Key(), "text": "/help", "id": "h1"})
	help := pg.await("the help", isMsg("You can type:"))["text"].(string)
	for _, only := range []string{"/start", "/sethome", "/pairing"} {
		if strings.Contains(help, only) {
			t.Errorf("the page's help lists %s:\n%s", only, help)
		}
	}
	if !strings.Contains(help, "/continue") || !strings.Contains(help, "bring the conversation held in another place here") {
		t.Errorf("the page's help lacks /continue and what it does:\n%s", help)
	}
}

// A command the page has no use for is not run there: /sethome would move
// the web chat's fixed home, /pairing is for strangers who never reach
// the page. It says so, and nothing changes.
func TestPageRefusesCommandsWithNoUseThere(t *testing.T) {
	r := newRig(t, rigOpts{})
	pg := r.openPage(t)
	pg.send(map[string]any{"type": "say", "key": "web:thread:main:elsewhere", "text": "/sethome", "id": "s1"})
	got := pg.await("the answer to /sethome", isMsg("/sethome"))["text"].(string)
	if !strings.Contains(got, "does not work in the web chat") {
		t.Errorf("/sethome in the page answered %q", got)
	}
	homes, err := r.st.HomeChannels(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if h, ok := homes["web"]; ok {
		t.Errorf("/sethome in the page moved the web chat's home to %s", h)
	}
}

// The same in a real browser on the real gateway, at a phone's width and
// a desktop's: the message typed while the session is in Telegram shows
// at once, marked kept (the gateway parks it only after its line was
// shown), still after a reload, and as an ordinary message once
// /continue ran it; a second tab shows what the first one said.
func TestPageInBrowserShowsKeptMessages(t *testing.T) {
	tab := browser.Start(t)
	for _, w := range []struct{ width, height int64 }{{390, 844}, {1280, 800}} {
		t.Run(fmt.Sprint(w.width), func(t *testing.T) {
			fake := telegramtest.New(t, botToken)
			fake.AddChat(telegramtest.Chat{ID: forum, Type: "supergroup", Title: "baton", IsForum: true})
			r := telegramRig(t, fake, "telegram:group:-100777")
			if err := chromedp.Do(tab, chromedp.EmulateViewport(w.width, w.height), chromedp.Navigate(r.web.URL())); err != nil {
				t.Fatal(err)
			}
			poll := func(ctx context.Context, what, js string) { t.Helper(); browser.Poll(ctx, t, what, js) }
			say := func(ctx context.Context, text string) {
				t.Helper()
				if err := chromedp.Do(ctx, chromedp.SendKeys(chromedp.CSS("#input"), text+"\r")); err != nil {
					t.Fatal(err)
				}
			}
			poll(tab, "the page", `document.getElementById("title").innerText === "Home"`)
			other, cancel := chromedp.NewContext(tab)
			defer cancel()
			if err := chromedp.Do(other, chromedp.EmulateViewport(w.width, w.height), chromedp.Navigate("http://"+r.web.Addr()+"/")); err != nil {
				t.Fatal(err)
			}
			poll(other, "the second tab", `document.getElementById("title").innerText === "Home"`)

			r.model.Push(llmtest.Reply{Text: "Hello from the page."})
			say(tab, "hi")
			poll(other, "the question and its answer in the second tab", `(() => { const t = document.getElementById("messages").innerText;
				return t.includes("hi") && t.indexOf("hi") < t.indexOf("Hello from the page."); })()`)
			r.model.Push(llmtest.Reply{Text: "Hi on Telegram."})
			say(tab, "/handoff telegram")
			poll(tab, "the handoff", `document.getElementById("messages").innerText.includes("now continues in Telegram")`)

			const bubbles = `[...document.querySelectorAll("#messages > li.user")].map(l => (l.querySelector(".said") || l).textContent + (l.classList.contains("kept") ? " [kept]" : "")).join("|")`
			say(tab, "are you there?")
			poll(tab, "the line", `document.getElementById("messages").innerText.includes("This conversation is in Telegram now")`)
			poll(tab, "the message kept, at once", bubbles+`.endsWith("|are you there? [kept]")`)
			poll(other, "the message in the second tab", bubbles+`.includes("are you there?")`)
			if err := chromedp.Do(tab, chromedp.Reload()); err != nil {
				t.Fatal(err)
			}
			poll(tab, "the message kept after a reload", `document.getElementById("messages").innerText.includes("This conversation is in Telegram now") && `+bubbles+`.endsWith("|are you there? [kept]")`)

			r.model.Push(llmtest.Reply{Text: "Back on the page."}, llmtest.Reply{Text: "Yes, still here."})
			say(tab, "/continue")
			poll(tab, "the kept message answered", `document.getElementById("messages").innerText.includes("Yes, still here.")`)
			poll(tab, "the message run, once, no longer kept", `(() => { const b = `+bubbles+`; return b.endsWith("|are you there?") && b.split("are you there?").length === 2; })()`)
		})
	}
}
