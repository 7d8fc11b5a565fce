package main

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/baton-agent/baton/internal/gateway"
	"github.com/baton-agent/baton/internal/gateway/control"
	"github.com/baton-agent/baton/internal/llm/llmtest"
	"github.com/baton-agent/baton/internal/platform/telegram/telegramtest"
	"github.com/baton-agent/baton/internal/testutil"
)

var codeRE = regexp.MustCompile(`pairing code is ([A-Z2-9]{4}-[A-Z2-9]{4})`)

// TestPairingEndToEnd: against the Telegram fake, with the real `baton
// gateway` and `baton pairing`, a stranger writing to the bot gets a
// pairing code and nothing else; the owner lists and approves it; the
// person is then answered. Someone who keeps writing without an approval
// is locked out: told once, then ignored.
func TestPairingEndToEnd(t *testing.T) {
	const botToken = "123456:pairing-token"
	fake := telegramtest.New(t, botToken)
	srv := llmtest.Start(t)
	srv.SetDefault(llmtest.EchoReply)
	home := t.TempDir()
	batonHome := filepath.Join(home, "baton")
	writeConfig(t, batonHome, fmt.Sprintf("telegram:\n  token: %q\n  server_url: %q\ngateway:\n  owners:\n    telegram: [\"1\"]\n", botToken, fake.URL()))
	env := cleanEnv(home, modelEnv(srv)...)
	startGateway(t, env, batonHome)
	c := control.NewClient(control.SocketPath(batonHome))
	testutil.Eventually(t, hangGuard, func() bool {
		s, err := c.Status(context.Background())
		if err != nil {
			return false
		}
		p, ok := s.Platform("telegram")
		return ok && p.Live
	}, "telegram to be live in the gateway")

	friend := telegramtest.User{ID: 77, FirstName: "Friend"}
	fake.AddChat(telegramtest.Chat{ID: 77, Type: telegramtest.Private})
	fake.PushMessage(77, 0, friend, "hello baton")
	codeMsg := waitSent(t, fake, "a pairing code", func(m telegramtest.SentMessage) bool { return m.ChatID == "77" && codeRE.MatchString(m.Plain) })
	code := codeRE.FindStringSubmatch(codeMsg.Plain)[1]
	if strings.ContainsAny(code, "01OIL") {
		t.Errorf("code %s has look-alike characters", code)
	}
	if len(srv.Requests()) != 0 {
		t.Errorf("a stranger's message reached the model: %d requests", len(srv.Requests()))
	}

	out := pairingCmd(t, env, "list")
	if !strings.Contains(out, code) || !strings.Contains(out, "Friend (77)") || !strings.Contains(out, "telegram") {
		t.Errorf("pairing list:\n%s", out)
	}
	if out, err := pairingCmdErr(env, "approve", "ABCD-EFGH"); err == nil || !strings.Contains(out, "no pending pairing") {
		t.Errorf("a wrong code approved: %v\n%s", err, out)
	}
	if out := pairingCmd(t, env, "approve", strings.ToLower(code)); !strings.Contains(out, "Approved Friend (77) on telegram") || !strings.Contains(out, "they are told so") {
		t.Errorf("approve:\n%s", out)
	}
	// The person hears it, once, without writing again first.
	waitSent(t, fake, "the welcome", func(m telegramtest.SentMessage) bool {
		return m.ChatID == "77" && m.Plain == gateway.PairingWelcome
	})
	if out := pairingCmd(t, env, "list"); !strings.Contains(out, "No pairing requests") {
		t.Errorf("after approval:\n%s", out)
	}
	fake.PushMessage(77, 0, friend, "now may I?")
	waitSent(t, fake, "an answer to the approved person", func(m telegramtest.SentMessage) bool {
		return m.ChatID == "77" && strings.Contains(m.Plain, "now may I?")
	})

	// A guesser: more messages than a code allows, then silence.
	guesser := telegramtest.User{ID: 88, FirstName: "Mallory"}
	fake.AddChat(telegramtest.Chat{ID: 88, Type: telegramtest.Private})
	for i := range gateway.PairingMaxAttempts + 3 {
		fake.PushMessage(88, 0, guesser, fmt.Sprintf("/pairing approve AAAA-BBB%d", i))
	}
	waitSent(t, fake, "the lock-out notice", func(m telegramtest.SentMessage) bool {
		return m.ChatID == "88" && strings.Contains(m.Plain, "ignore you")
	})
	fake.PushMessage(88, 0, guesser, "last try")
	// Everything before the last message is handled once the bot has
	// confirmed it: then count what the guesser got.
	testutil.Eventually(t, hangGuard, func() bool { return fake.Pending() == 0 }, "the bot to take every update")
	out = pairingCmd(t, env, "list")
	if !strings.Contains(out, "locked") || !strings.Contains(out, "Mallory (88)") {
		t.Errorf("the guesser is not listed as locked:\n%s", out)
	}
	n := 0
	for _, m := range fake.Shown() {
		if m.ChatID == "88" {
			n++
		}
	}
	// A code, reminders up to the limit, the notice: nothing for later tries.
	if n != gateway.PairingMaxAttempts+1 {
		t.Errorf("the guesser got %d messages, want %d", n, gateway.PairingMaxAttempts+1)
	}
	if _, err := pairingCmdErr(env, "approve", "AAAA-BBB0"); err == nil {
		t.Error("a guessed code was approved")
	}
}

func waitSent(t *testing.T, fake *telegramtest.Server, what string, match func(telegramtest.SentMessage) bool) telegramtest.SentMessage {
	t.Helper()
	var got telegramtest.SentMessage
	testutil.Eventually(t, hangGuard, func() bool {
		for _, m := range fake.Shown() {
			if match(m) {
				got = m
				return true
			}
		}
		return false
	}, what)
	return got
}

func pairingCmd(t *testing.T, env []string, args ...string) string {
	t.Helper()
	out, err := pairingCmdErr(env, args...)
	if err != nil {
		t.Fatalf("baton pairing %v: %v\n%s", args, err, out)
	}
	return out
}

func pairingCmdErr(env []string, args ...string) (string, error) {
	cmd := exec.Command(batonBin, append([]string{"pairing"}, args...)...)
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	return string(out), err
}
