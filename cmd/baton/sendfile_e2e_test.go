package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/baton-agent/baton/internal/gateway/control"
	"github.com/baton-agent/baton/internal/llm/llmtest"
	"github.com/baton-agent/baton/internal/platform/slack/slacktest"
	"github.com/baton-agent/baton/internal/testutil"
)

// TestSendFileInASlackThreadOnceAfterAKill: the agent's send_file in a
// session held in a Slack thread puts the file in that thread once, also
// when the gateway is killed (SIGKILL) while the file's bytes are on
// their way and started again: the file is stored in the outbox before it
// is sent, and the second gateway finishes the upload the first began.
func TestSendFileInASlackThreadOnceAfterAKill(t *testing.T) {
	const owner, home = "U0OWNER", "C0HOME"
	fake := slacktest.New(t, "xoxb-1-sendfile", "xapp-1-sendfile")
	home_, work := t.TempDir(), t.TempDir()
	reportPath := filepath.Join(work, "report.pdf")
	srv := llmtest.Start(t)
	srv.SetDefault(func(r llmtest.Request) llmtest.Step {
		msgs := r.Messages()
		last, _ := msgs[len(msgs)-1].(map[string]any)
		switch {
		case last["role"] == "tool":
			if !strings.HasPrefix(fmt.Sprint(last["content"]), "report.pdf") {
				return llmtest.Reply{Text: "send_file failed: " + fmt.Sprint(last["content"])}
			}
			return llmtest.Reply{Text: "Sent the report."}
		case strings.HasPrefix(r.LastUserText(), "send me the report"):
			return llmtest.Reply{ToolCalls: []llmtest.Call{{Name: "send_file", Args: fmt.Sprintf(`{"path":%q,"caption":"the weekly report"}`, reportPath)}}}
		}
		return llmtest.EchoReply(r)
	})
	report := append([]byte("%PDF-1.4\n"), bytes.Repeat([]byte("weekly numbers\n"), 4000)...)
	if err := os.WriteFile(reportPath, report, 0o644); err != nil {
		t.Fatal(err)
	}
	env := cleanEnv(home_, modelEnv(srv)...)
	batonHome := filepath.Join(home_, "baton")
	writeConfig(t, batonHome, fmt.Sprintf("web:\n  listen: 127.0.0.1:0\n"+
		"slack:\n  bot_token: xoxb-1-sendfile\n  app_token: xapp-1-sendfile\n  api_url: %q\n  files_url: %q\n"+
		"tools:\n  paths: [%q]\n  allow: [\"send_file\"]\n"+
		"gateway:\n  owners:\n    slack: [%q]\n  homes:\n    slack: \"slack:group:%s\"\n",
		fake.APIURL(), fake.FilesURL(), work, owner, home))
	live := func() {
		t.Helper()
		c := control.NewClient(control.SocketPath(batonHome))
		testutil.Eventually(t, hangGuard, func() bool {
			s, err := c.Status(context.Background())
			p, ok := s.Platform("slack")
			return err == nil && ok && p.Live
		}, "slack to be live in the gateway")
	}
	gw := startGateway(t, env, batonHome)
	live()

	root, _ := fake.PushMessage(slacktest.Message{Channel: home, User: owner, Text: "hello"})
	testutil.Eventually(t, hangGuard, func() bool { return shownText(fake, "echo: hello") == 1 }, "the answer to hello")

	// The file's bytes are held on their way; the gateway is killed then.
	release := fake.Hold(slacktest.RouteUpload)
	fake.PushMessage(slacktest.Message{Channel: home, User: owner, Text: "send me the report", ThreadTS: root})
	if !testutil.Poll(testutil.Context(t, hangGuard), func() bool { return fake.Held(slacktest.RouteUpload) == 1 }) {
		t.Fatalf("the upload never started; posts %+v\ngateway:\n%s", fake.Posts(), gw.Log())
	}
	gw.kill()
	release()

	gw = startGateway(t, env, batonHome)
	live()
	if !testutil.Poll(testutil.Context(t, hangGuard), func() bool { return shownText(fake, "Sent the report.") == 1 }) {
		t.Fatalf("no answer after the file; posts %+v\nshares %d\ngateway:\n%s", fake.Posts(), len(fake.Shares()), gw.Log())
	}
	shares := fake.Shares()
	if len(shares) != 1 {
		t.Fatalf("the file was shared %d times, want once: %+v\ngateway:\n%s", len(shares), shares, gw.Log())
	}
	s := shares[0]
	if s.Channel != home || s.ThreadTS != root || s.Name != "report.pdf" || !bytes.Equal(s.Data, report) || !strings.Contains(s.Comment, "the weekly report") {
		t.Errorf("shared as %+v (%d bytes), want report.pdf in the thread %s with its caption", s, len(s.Data), root)
	}

	// Killed after Slack shared the file but before the gateway heard
	// so: the answer to the completion is lost, and the gateway dies as
	// it asks Slack where the file went. The next one finds it shared.
	fake.LoseNext("files.completeUploadExternal")
	release = fake.Hold("files.info")
	fake.PushMessage(slacktest.Message{Channel: home, User: owner, Text: "send me the report again", ThreadTS: root})
	if !testutil.Poll(testutil.Context(t, hangGuard), func() bool { return fake.Held("files.info") == 1 }) {
		t.Fatalf("the sent file was never looked for; shares %d\ngateway:\n%s", len(fake.Shares()), gw.Log())
	}
	gw.kill()
	release()
	gw = startGateway(t, env, batonHome)
	live()
	if !testutil.Poll(testutil.Context(t, hangGuard), func() bool { return shownText(fake, "Sent the report.") == 2 }) {
		t.Fatalf("no answer after the second file; posts %+v\ngateway:\n%s", fake.Posts(), gw.Log())
	}
	if shares := fake.Shares(); len(shares) != 2 {
		t.Fatalf("two sends shared %d files, want each once: %+v", len(shares), shares)
	}
}

// shownText counts the bot's messages a person sees that say text (an
// offer to continue may follow it).
func shownText(fake *slacktest.Server, text string) int {
	n := 0
	for _, p := range fake.Shown() {
		if first, _, _ := strings.Cut(p.Text, "\n\n"); first == text {
			n++
		}
	}
	return n
}
