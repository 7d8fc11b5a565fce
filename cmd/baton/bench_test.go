package main

import (
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/baton-agent/baton/internal/llm/llmtest"
)

// BenchmarkStartToPrompt is launching `baton` in a pty until its prompt is
// drawn and ready for typing (store opened, owner found, model resolved).
// Leaving (Ctrl-D and exit) is not timed.
func BenchmarkStartToPrompt(b *testing.B) {
	srv := llmtest.Start(b)
	home, work := b.TempDir(), b.TempDir()
	env := cleanEnv(home, modelEnv(srv)...)
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
