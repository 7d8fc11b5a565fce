package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/gateway/control"
	"github.com/baton-agent/baton/internal/platform/discord/discordtest"
	"github.com/baton-agent/baton/internal/platform/imessage/imessagetest"
	"github.com/baton-agent/baton/internal/platform/matrix/matrixtest"
	"github.com/baton-agent/baton/internal/platform/signal/signaltest"
	"github.com/baton-agent/baton/internal/platform/slack/slacktest"
	"github.com/baton-agent/baton/internal/platform/telegram/telegramtest"
	"github.com/baton-agent/baton/internal/testutil"
)

// settle is how long an idle gateway runs before its memory is read: the
// start-up garbage is collected and every connection has settled.
const settle = 3 * time.Second

// BenchmarkGatewayIdleRSS is the resident memory of the real `baton
// gateway` process, idle, with the web chat only and with every platform
// that has a fake connected to it: Telegram, Slack, Discord, Signal and
// iMessage, and Matrix too when a Dendrite is built (tools/dendrite).
func BenchmarkGatewayIdleRSS(b *testing.B) {
	b.Run("web", func(b *testing.B) { idleRSS(b, 1, "") })
	b.Run("all-fakes", func(b *testing.B) { idleRSS(b, 6, allFakes(b)) })
	b.Run("all-fakes+matrix", func(b *testing.B) {
		if err := matrixtest.Available(); err != nil {
			b.Skip(err)
		}
		hs, err := matrixtest.Start(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(hs.Close)
		bot, err := hs.Register(context.Background(), "bot")
		if err != nil {
			b.Fatal(err)
		}
		idleRSS(b, 7, allFakes(b)+fmt.Sprintf("matrix:\n  homeserver: %q\n  user_id: %q\n  access_token: %q\n", hs.URL(), bot.ID, bot.Token))
	})
}

// allFakes starts a fake of every chat service that has one and returns
// the config that points baton at them.
func allFakes(b *testing.B) string {
	tg := telegramtest.New(b, "123456:bench-token")
	dc := discordtest.New(b, "bench.discord.token")
	sl := slacktest.New(b, "xoxb-bench", "xapp-bench")
	sg := signaltest.New(b, "+15550001111")
	im := imessagetest.New(b, "bench-password")
	return fmt.Sprintf(`telegram:
  token: %q
  server_url: %q
discord:
  token: %q
  api_url: %q
  gateway_url: %q
slack:
  bot_token: xoxb-bench
  app_token: xapp-bench
  api_url: %q
signal:
  url: %q
  account: %q
imessage:
  url: %q
  password: bench-password
  listen: 127.0.0.1:0
  webhook_secret: bench-secret
`, tg.Token(), tg.URL(), dc.Token(), dc.APIURL(), dc.GatewayURL(), sl.APIURL(), sg.URL(), sg.Account(), im.URL())
}

// idleRSS starts `baton gateway` with the web chat and the config extra,
// waits until all its platforms (how many: platforms) are live, lets it
// settle and reports VmRSS.
func idleRSS(b *testing.B, platforms int, extra string) {
	home := b.TempDir()
	batonHome := filepath.Join(home, "baton")
	if err := os.MkdirAll(batonHome, 0o700); err != nil {
		b.Fatal(err)
	}
	cfg := "web:\n  listen: 127.0.0.1:0\nmodel:\n  provider: offline\n" + extra
	if err := os.WriteFile(filepath.Join(batonHome, "config.yaml"), []byte(cfg), 0o600); err != nil {
		b.Fatal(err)
	}
	var sum float64
	for b.Loop() {
		cmd := exec.Command(batonBin, "gateway")
		cmd.Env = cleanEnv(home)
		log := &testutil.SyncBuffer{}
		cmd.Stdout, cmd.Stderr = log, log
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		c := control.NewClient(control.SocketPath(batonHome))
		var last string
		live := testutil.Poll(testutil.Context(b, 0), func() bool {
			s, err := c.Status(context.Background())
			if err != nil || len(s.Platforms) != platforms {
				return false
			}
			last = fmt.Sprintf("%+v", s.Platforms)
			for _, p := range s.Platforms {
				if !p.Live {
					return false
				}
			}
			return true
		})
		if !live {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			b.Fatalf("not every platform became live: %s\n%s", last, log.String())
		}
		time.Sleep(settle)
		rss, err := vmRSS(cmd.Process.Pid)
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
		if err != nil {
			b.Fatal(err)
		}
		sum += rss
	}
	b.ReportMetric(sum/float64(b.N), "RSS-MiB")
}

// vmRSS reads a process's resident set size in MiB.
func vmRSS(pid int) (float64, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			return kb / 1024, err
		}
	}
	return 0, fmt.Errorf("no VmRSS for %d", pid)
}
