package main

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/baton-agent/baton/internal/llm/llmtest"
	"github.com/baton-agent/baton/internal/mcp/mcptest"
	"github.com/baton-agent/baton/internal/platform/telegram/telegramtest"
	"github.com/baton-agent/baton/internal/store"
	"github.com/baton-agent/baton/internal/testutil"
)

// An MCP server's tool, end to end with processes: in a conversation held
// in Telegram, the gateway starts the configured stdio server, the
// model's call of its tool is asked about in Telegram, /approve runs it,
// the result is stored; after /handoff cli, the terminal shows the call's
// card with its result, and its own server (stdio servers run where the
// turn runs) gives a picture that the model's next request carries; on
// the web page, the gateway's server is asked about with its buttons.
func TestMCPToolApprovedInTelegramShownInTheTerminal(t *testing.T) {
	chromium(t)
	const forum = -100779
	prog, env := mcptest.Command()
	pr := newPlacesRig(t, "123456:mcp-tools", forum, fmt.Sprintf(
		"mcp:\n  servers:\n    demo:\n      command: %q\n      env: {%s: %q}\n", prog, mcptest.EnvServe, env[mcptest.EnvServe]))
	fake, owner, srv, st := pr.fake, pr.owner, pr.srv, pr.st

	srv.Push(
		llmtest.Reply{Text: "Asking the demo server.", ToolCalls: []llmtest.Call{{Name: "demo__echo", Args: `{"text":"from the phone"}`}}},
		llmtest.Reply{Text: "The server said it back."},
	)
	fake.PushMessage(forum, 0, owner, "have the demo server say it back")
	waitSent(t, fake, "the approval question", func(m telegramtest.SentMessage) bool {
		return strings.Contains(m.Plain, "demo.echo") && strings.Contains(m.Plain, "from the phone") && strings.Contains(m.Plain, "/approve")
	})
	if reqs := srv.Requests(); !strings.Contains(string(reqs[0].Raw), `"demo__echo"`) {
		t.Fatalf("the model was not offered the server's tools: %s", reqs[0].Raw)
	}
	fake.PushMessage(forum, 0, owner, "/approve")
	waitSent(t, fake, "the answer after the tool ran", func(m telegramtest.SentMessage) bool { return strings.Contains(m.Plain, "The server said it back.") })

	ss, err := st.ListSessions(t.Context(), store.SessionFilter{})
	if err != nil || len(ss) != 1 {
		t.Fatalf("sessions %+v %v", ss, err)
	}
	sid := ss[0].ID
	msgs, err := st.Transcript(t.Context(), sid)
	if err != nil {
		t.Fatal(err)
	}
	var result store.Message
	for _, m := range msgs {
		if m.Role == store.RoleTool {
			result = m
		}
	}
	if result.ToolName != "demo.echo" || result.Content != "echo: from the phone" {
		t.Fatalf("the stored result is %+v", result)
	}

	fake.PushMessage(forum, 0, owner, "/tools")
	waitSent(t, fake, "/tools in the chat", func(m telegramtest.SentMessage) bool {
		return strings.Contains(m.Plain, "demo — running") && strings.Contains(m.Plain, "demo.echo")
	})

	fake.PushMessage(forum, 0, owner, "/handoff cli")
	waitSent(t, fake, "the handoff", func(m telegramtest.SentMessage) bool { return strings.Contains(m.Plain, "Handing off to the terminal") })
	tm := startTerm(t, pr.env, pr.work, "-r", sid[:8])
	tm.expect("demo.echo")
	tm.expect("echo: from the phone")
	tm.expect("Brought session " + sid[:8] + " here from Telegram")

	srv.Push(
		llmtest.Reply{ToolCalls: []llmtest.Call{{Name: "demo__picture"}}},
		llmtest.Reply{Text: "A test pattern, three by two."},
	)
	tm.line("take a picture with the demo server")
	tm.expect("baton wants to run demo.picture")
	tm.line("o")
	tm.expect("A test pattern, three by two.")
	testutil.Eventually(t, hangGuard, func() bool {
		imgs := lastImages(srv)
		return len(imgs) == 1 && bytes.Equal(imgs[0], mcptest.Picture())
	}, "the model's request after the call to carry the picture")
	tm.line("/tools")
	tm.expect("demo — running")

	// On to the web page: the gateway's server again, asked about with
	// the page's buttons.
	tm.line("/handoff web")
	tm.expect("continues in the web chat")
	if err := tm.wait(); err != nil {
		t.Fatalf("after /handoff web: %v\n%s", err, tm.Screen())
	}
	page := browser(t)
	if err := chromedp.Do(page, chromedp.Navigate(pr.gw.webURL)); err != nil {
		t.Fatal(err)
	}
	pageText(page, t, "Hello, picked up here.")
	srv.Push(
		llmtest.Reply{ToolCalls: []llmtest.Call{{Name: "demo__echo", Args: `{"text":"from the page"}`}}},
		llmtest.Reply{Text: "Echoed on the page."},
	)
	pageSay(page, t, "echo it on the page")
	approve := `li.approval button[data-answer="approve"]`
	wctx, cancel := context.WithTimeout(page, hangGuard)
	defer cancel()
	if err := chromedp.Do(wctx, chromedp.WaitVisible(approve), chromedp.Click(approve)); err != nil {
		t.Fatalf("no approve button for demo.echo on the page: %v", err)
	}
	if text := pageText(page, t, "Echoed on the page."); !strings.Contains(text, "demo.echo") {
		t.Errorf("the page shows no demo.echo card:\n%s", text)
	}
}
