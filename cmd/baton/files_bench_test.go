package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/gateway/control"
	"github.com/baton-agent/baton/internal/llm/llmtest"
	"github.com/baton-agent/baton/internal/platform/telegram/telegramtest"
	"github.com/baton-agent/baton/internal/testutil"
)

// BenchmarkFilesThroughTheGateway is a 20 MB document and a 12-megapixel
// photo, each sent to the bot through the Telegram fake, reaching the
// model (the document whole, the photo scaled to 2048 px) and sent back by
// the agent's send_file, through one `baton gateway` process. It reports
// the gateway's resident memory idle before the files and at its peak
// (VmHWM) after them, and the time from the update being queued to the
// model's request, for each file.
func BenchmarkFilesThroughTheGateway(b *testing.B) {
	const forum = -100779
	fake := telegramtest.New(b, "123456:files-bench")
	fake.AddChat(telegramtest.Chat{ID: forum, Type: telegramtest.Supergroup, Title: "baton", IsForum: true})
	owner := telegramtest.User{ID: 1, FirstName: "Owner"}
	home, work := b.TempDir(), b.TempDir()
	doc := append([]byte("%PDF-1.7\n"), bytes.Repeat([]byte("0123456789abcdef"), (20<<20-64)/16)...)
	photo := llmtest.Photo(4000, 3000)
	for name, data := range map[string][]byte{"report.pdf": doc, "photo.jpg": photo} {
		if err := os.WriteFile(filepath.Join(work, name), data, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	var mu sync.Mutex
	var arrived []time.Time // when each request carrying a file came
	srv := llmtest.Start(b)
	srv.SetDefault(func(r llmtest.Request) llmtest.Step {
		if toolAnswered(r) {
			return llmtest.Reply{Text: "sent back"}
		}
		if parts := r.Parts(); len(parts) > 0 && parts[len(parts)-1].Role == "user" {
			mu.Lock()
			arrived = append(arrived, time.Now())
			mu.Unlock()
			name := "report.pdf"
			if parts[len(parts)-1].Kind == "image" {
				name = "photo.jpg"
			}
			return llmtest.Reply{ToolCalls: []llmtest.Call{{Name: "send_file", Args: fmt.Sprintf(`{"path":%q}`, filepath.Join(work, name))}}}
		}
		return llmtest.EchoReply(r)
	})
	// Anthropic's API takes a PDF whole (a document block), so the
	// document goes to the model as itself.
	env := cleanEnv(home, "ANTHROPIC_BASE_URL="+srv.URL, "ANTHROPIC_API_KEY=test-key", "BATON_MODEL=fake-model")
	batonHome := filepath.Join(home, "baton")
	writeConfig(b, batonHome, fmt.Sprintf("web:\n  listen: 127.0.0.1:0\ntelegram:\n  token: %q\n  server_url: %q\n"+
		"tools:\n  paths: [%q]\n  allow: [\"send_file\"]\n"+
		"gateway:\n  owners:\n    telegram: [\"1\"]\n  homes:\n    telegram: \"telegram:group:%d\"\n", fake.Token(), fake.URL(), work, forum))
	gw := startGatewayB(b, env, batonHome)
	time.Sleep(2 * time.Second) // settled: the idle figure
	idle, err := procStatus(gw.cmd.Process.Pid, "VmRSS")
	if err != nil {
		b.Fatal(err)
	}

	var latencies []time.Duration
	sent := 0
	b.ResetTimer()
	for b.Loop() {
		for _, push := range []func(){
			func() {
				fake.PushFile(forum, 0, owner, telegramtest.File{Kind: telegramtest.Document, Name: "report.pdf", MimeType: "application/pdf", Data: doc})
			},
			func() { fake.PushPhoto(forum, 0, owner, photo, "") },
		} {
			mu.Lock()
			before := len(arrived)
			mu.Unlock()
			start := time.Now()
			push()
			sent++
			if !testutil.Poll(testutil.Context(b, 2*time.Minute), func() bool {
				mu.Lock()
				defer mu.Unlock()
				return len(arrived) > before && len(fake.SentFiles()) >= sent
			}) {
				b.Fatalf("a file did not go through (%d sent back of %d; %d model requests; bot said %+v):\n%s", len(fake.SentFiles()), sent, len(srv.Requests()), fake.Sent(), gw.Log())
			}
			mu.Lock()
			latencies = append(latencies, arrived[before].Sub(start))
			mu.Unlock()
		}
	}
	b.StopTimer()
	peak, err := procStatus(gw.cmd.Process.Pid, "VmHWM")
	if err != nil {
		b.Fatal(err)
	}
	for _, f := range fake.SentFiles() {
		if !bytes.Equal(f.Data, doc) && !bytes.Equal(f.Data, photo) {
			b.Fatalf("a file came back changed (%s, %d bytes)", f.Method, len(f.Data))
		}
	}
	slices.Sort(latencies)
	b.ReportMetric(idle, "idle-RSS-MiB")
	b.ReportMetric(peak, "peak-RSS-MiB")
	b.ReportMetric(float64(latencies[len(latencies)/2].Milliseconds()), "event-to-model-p50-ms")
	b.ReportMetric(float64(latencies[(len(latencies)*99)/100].Milliseconds()), "event-to-model-p99-ms")
	b.ReportMetric(float64(len(photo))/(1<<20), "photo-MiB")
}

// toolAnswered reports whether the request's last message is a tool's
// result, in either protocol's shape.
func toolAnswered(r llmtest.Request) bool {
	msgs := r.Messages()
	last, _ := msgs[len(msgs)-1].(map[string]any)
	if last["role"] == "tool" {
		return true
	}
	blocks, _ := last["content"].([]any)
	for _, bl := range blocks {
		if m, _ := bl.(map[string]any); m["type"] == "tool_result" {
			return true
		}
	}
	return false
}

// startGatewayB is startGateway for a benchmark: it waits for Telegram
// to be live too.
func startGatewayB(b *testing.B, env []string, batonHome string) *gatewayProc {
	b.Helper()
	gw := startGateway(b, env, batonHome)
	c := control.NewClient(control.SocketPath(batonHome))
	if !testutil.Poll(testutil.Context(b, hangGuard), func() bool {
		s, err := c.Status(context.Background())
		p, ok := s.Platform("telegram")
		return err == nil && ok && p.Live
	}) {
		b.Fatalf("telegram never became live:\n%s", gw.Log())
	}
	return gw
}

// procStatus reads a field of /proc/<pid>/status given in kB, in MiB.
func procStatus(pid int, field string) (float64, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			return kb / 1024, err
		}
	}
	return 0, fmt.Errorf("no %s for %d", field, pid)
}
