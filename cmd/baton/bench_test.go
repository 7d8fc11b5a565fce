package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/llm/llmtest"
	"github.com/baton-agent/baton/internal/mcp/mcptest"
)

// BenchmarkStartToPrompt is launching `baton` in a pty until its prompt is
// drawn and ready for typing (store opened, owner found, model resolved).
// Leaving (Ctrl-D and exit) is not timed.
func BenchmarkStartToPrompt(b *testing.B) { startToPrompt(b, "") }

// BenchmarkStartToPromptWithMCP is BenchmarkStartToPrompt with three MCP
// servers configured, one of which takes 3 s to start: servers start
// when a turn needs them, so the prompt comes as fast as without them.
func BenchmarkStartToPromptWithMCP(b *testing.B) {
	prog, env := mcptest.Command()
	slow := filepath.Join(b.TempDir(), "slow-server")
	script := fmt.Sprintf("#!/bin/sh\nsleep 3\nexec %q\n", prog)
	if err := os.WriteFile(slow, []byte(script), 0o755); err != nil {
		b.Fatal(err)
	}
	var cfg strings.Builder
	cfg.WriteString("mcp:\n  servers:\n")
	for _, name := range []string{"one", "two"} {
		fmt.Fprintf(&cfg, "    %s:\n      command: %q\n      env: {%s: %q}\n", name, prog, mcptest.EnvServe, env[mcptest.EnvServe])
	}
	fmt.Fprintf(&cfg, "    slow:\n      command: %q\n      env: {%s: %q}\n", slow, mcptest.EnvServe, env[mcptest.EnvServe])
	startToPrompt(b, cfg.String())
}

func startToPrompt(b *testing.B, config string) {
	srv := llmtest.Start(b)
	home, work := b.TempDir(), b.TempDir()
	env := cleanEnv(home, modelEnv(srv)...)
	if config != "" {
		writeConfig(b, filepath.Join(home, "baton"), config)
	}
	ready := func(raw string) bool {
		return strings.Contains(raw, "› ") && strings.LastIndex(raw, "\x1b[?25h") > strings.LastIndex(raw, "\x1b[6n")
	}
	// The first start creates the store; measure the everyday start.
	first := startTerm(b, env, work)
	first.waitFor("prompt", ready)
	first.send("\x04")
	first.wait()
	for b.Loop() {
		tm := startTerm(b, env, work)
		tm.waitFor("prompt", ready)
		b.StopTimer()
		tm.send("\x04")
		tm.wait()
		b.StartTimer()
	}
}

// BenchmarkPrintOnce is `baton -p` end to end: start, one model call to
// llmtest answering at once, the answer on stdout, exit.
func BenchmarkPrintOnce(b *testing.B) {
	srv := llmtest.Start(b)
	home, work := b.TempDir(), b.TempDir()
	env := cleanEnv(home, modelEnv(srv)...)
	for b.Loop() {
		cmd := exec.Command(batonBin, "-p", "ping")
		cmd.Env, cmd.Dir = env, work
		out, err := cmd.Output()
		if err != nil || string(out) != "echo: ping\n" {
			b.Fatalf("baton -p: %q, %v", out, err)
		}
	}
}

// BenchmarkVersion is `baton version` as a whole process: start-up (every
// package's initialization) and exit. It reports the largest peak
// resident memory of the runs.
// BenchmarkVersionVsPeer runs `baton version` and `$BATON_PEER version`
// (another agent's binary, built from source on the same machine) in
// turn, so that both see the same machine: medians of each's wall time
// and of the ratio pair by pair, and each's peak RSS.
func BenchmarkVersionVsPeer(b *testing.B) {
	peer := os.Getenv("BATON_PEER")
	if peer == "" {
		b.Skip("BATON_PEER names the peer's binary")
	}
	env := cleanEnv(b.TempDir())
	run := func(bin string) (time.Duration, int64) {
		cmd := exec.Command(bin, "version")
		cmd.Env = env
		start := time.Now()
		if err := cmd.Run(); err != nil {
			b.Fatalf("%s version: %v", bin, err)
		}
		d := time.Since(start)
		var peak int64
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			peak = ru.Maxrss // KiB on Linux
		}
		return d, peak
	}
	var ours, theirs, ratios []float64
	var ourPeak, theirPeak int64
	for b.Loop() {
		d, p := run(batonBin)
		ours, ourPeak = append(ours, float64(d.Microseconds())/1e3), max(ourPeak, p)
		d, p = run(peer)
		theirs, theirPeak = append(theirs, float64(d.Microseconds())/1e3), max(theirPeak, p)
		ratios = append(ratios, ours[len(ours)-1]/theirs[len(theirs)-1])
	}
	median := func(xs []float64) float64 {
		slices.Sort(xs)
		return xs[len(xs)/2]
	}
	b.ReportMetric(median(ours), "baton-ms")
	b.ReportMetric(median(theirs), "peer-ms")
	b.ReportMetric(median(ratios), "ratio")
	b.ReportMetric(float64(ourPeak)/1024, "baton-peak-MiB")
	b.ReportMetric(float64(theirPeak)/1024, "peer-peak-MiB")
}

func BenchmarkVersion(b *testing.B) {
	home := b.TempDir()
	env := cleanEnv(home)
	var peak int64
	for b.Loop() {
		cmd := exec.Command(batonBin, "version")
		cmd.Env = env
		out, err := cmd.Output()
		if err != nil || !strings.HasPrefix(string(out), "baton ") {
			b.Fatalf("baton version: %q, %v", out, err)
		}
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			peak = max(peak, ru.Maxrss) // KiB on Linux
		}
	}
	b.ReportMetric(float64(peak)/1024, "peak-RSS-MiB")
}
