package main

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/llm"
	"github.com/baton-agent/baton/internal/llm/anthropic"
	"github.com/baton-agent/baton/internal/llm/openai"
)

// build compiles llmfake the way another package's end-to-end test would.
func build(t *testing.T) string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go tool not on PATH")
	}
	bin := filepath.Join(t.TempDir(), "llmfake")
	out, err := exec.Command(goBin, "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// start runs the binary and returns the base URL from its first line, and
// a Wait safe to call more than once.
func start(t *testing.T, cmd *exec.Cmd) (string, func() error) {
	t.Helper()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	wait := sync.OnceValue(cmd.Wait)
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("reading base URL: %v", err)
	}
	url := strings.TrimSpace(line)
	if !strings.HasPrefix(url, "http://127.0.0.1:") {
		t.Fatalf("first line %q is not a loopback URL", url)
	}
	return url, wait
}

func TestStandaloneScriptThenEcho(t *testing.T) {
	bin := build(t)
	script := filepath.Join(t.TempDir(), "script.json")
	if err := os.WriteFile(script, []byte(`[
		{"tool_calls": [{"name": "read_file", "args": {"path": "x"}}]},
		{"text": "file read"}]`), 0o600); err != nil {
		t.Fatal(err)
	}
	url, _ := start(t, exec.Command(bin, "-script", script))

	oa, err := openai.New(openai.Config{BaseURL: url + "/v1", Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	an, err := anthropic.New(anthropic.Config{BaseURL: url, Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	req := llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "read x"}}}

	resp, err := oa.Chat(ctx, req, nil)
	if err != nil || len(resp.ToolCalls) != 1 || resp.ToolCalls[0].Name != "read_file" || string(resp.ToolCalls[0].Arguments) != `{"path":"x"}` {
		t.Fatalf("step 1: %+v, %v", resp, err)
	}
	// The script is shared by both protocols, in order.
	if resp, err = an.Chat(ctx, req, nil); err != nil || resp.Text != "file read" {
		t.Fatalf("step 2: %+v, %v", resp, err)
	}
	if resp, err = an.Chat(ctx, req, nil); err != nil || resp.Text != "echo: read x" {
		t.Fatalf("after the script: %+v, %v", resp, err)
	}
}

func TestStandaloneExitsOnStdinEOF(t *testing.T) {
	bin := build(t)
	cmd := exec.Command(bin, "-exit-on-eof")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	_, wait := start(t, cmd)
	_ = stdin.Close()
	done := make(chan error, 1)
	go func() { done <- wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("exit: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("llmfake kept running after stdin closed")
	}
}

func TestStandaloneBadScript(t *testing.T) {
	bin := build(t)
	out, err := exec.Command(bin, "-script", filepath.Join(t.TempDir(), "missing.json")).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "read script") {
		t.Errorf("err = %v, output %q", err, out)
	}
}
