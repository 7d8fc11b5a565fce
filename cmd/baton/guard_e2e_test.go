package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/baton-agent/baton/internal/llm/llmtest"
)

// fsmonitorConfig is a repository config whose fsmonitor hook runs a
// command: git status executes it when the hook is not disabled.
const fsmonitorConfig = "[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tfsmonitor = \"touch pwned; false\"\n"

// TestPrintModeGitFsmonitorChain is the chain the README's old example
// allowed: with write_file and `git status` allowed, the model writes
// .git/config with an fsmonitor hook and then runs git status, nobody
// asked. Through the real binary in -p mode (nobody to approve), the write
// is refused and git status, which still runs, does not run the hook.
func TestPrintModeGitFsmonitorChain(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	srv := llmtest.Start(t)
	home, work := t.TempDir(), t.TempDir()
	writeConfig(t, filepath.Join(home, "baton"), "tools:\n  allow:\n    - write_file\n    - \"shell:git status\"\n")
	gitInit(t, work)
	env := cleanEnv(home, modelEnv(srv)...)

	srv.Push(
		llmtest.Reply{ToolCalls: []llmtest.Call{{Name: "write_file", Args: `{"path":".git/config","content":` + jsonString(fsmonitorConfig) + `}`}}},
		llmtest.Reply{ToolCalls: []llmtest.Call{{Name: "shell", Args: `{"command":"git status"}`}}},
		llmtest.Reply{Text: "all clean"},
	)
	out, errOut, err := runBaton(t, env, work, "-p", "tidy up")
	if err != nil || out != "all clean\n" {
		t.Fatalf("stdout %q stderr %q err %v", out, errOut, err)
	}
	if !strings.Contains(errOut, "denied write_file: .git/config") {
		t.Errorf("the write into .git was not refused: stderr %q", errOut)
	}
	if _, err := os.Stat(filepath.Join(work, "pwned")); err == nil {
		t.Fatal("the fsmonitor hook the model wrote ran")
	}

	// Had the hook got there some other way, an allowed git status still
	// does not run it.
	if err := os.WriteFile(filepath.Join(work, ".git", "config"), []byte(fsmonitorConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	srv.Push(
		llmtest.Reply{ToolCalls: []llmtest.Call{{Name: "shell", Args: `{"command":"git status"}`}}},
		llmtest.Reply{Text: "still clean"},
	)
	out, errOut, err = runBaton(t, env, work, "-p", "status?")
	if err != nil || out != "still clean\n" {
		t.Fatalf("stdout %q stderr %q err %v", out, errOut, err)
	}
	if !strings.Contains(errOut, "shell: git status") || strings.Contains(errOut, "denied shell") {
		t.Errorf("git status did not run as allowed: stderr %q", errOut)
	}
	if _, err := os.Stat(filepath.Join(work, "pwned")); err == nil {
		t.Fatal("an allowed git status ran the repository's fsmonitor hook")
	}
}

// TestPrintModeRefusesArgumentsAfterAllowedCommand: `shell:git status`
// allows that command, not whatever follows it.
func TestPrintModeRefusesArgumentsAfterAllowedCommand(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	srv := llmtest.Start(t)
	home, work := t.TempDir(), t.TempDir()
	writeConfig(t, filepath.Join(home, "baton"), "tools:\n  allow: [\"shell:git status\", \"shell:ls *\"]\n")
	gitInit(t, work)
	env := cleanEnv(home, modelEnv(srv)...)
	srv.Push(
		llmtest.Reply{ToolCalls: []llmtest.Call{
			{Name: "shell", Args: `{"command":"git status --porcelain --output=written"}`},
			{Name: "shell", Args: `{"command":"ls -a"}`},
		}},
		llmtest.Reply{Text: "done"},
	)
	out, errOut, err := runBaton(t, env, work, "-p", "look")
	if err != nil || out != "done\n" {
		t.Fatalf("stdout %q stderr %q err %v", out, errOut, err)
	}
	if !strings.Contains(errOut, "denied shell: git status --porcelain --output=written") {
		t.Errorf("extra arguments were not refused: %q", errOut)
	}
	if _, err := os.Stat(filepath.Join(work, "written")); err == nil {
		t.Error("git status --output wrote a file unasked")
	}
	if !strings.Contains(errOut, "shell: ls -a") || strings.Contains(errOut, "denied shell: ls -a") {
		t.Errorf("`ls *` did not allow ls -a: %q", errOut)
	}
}

func runBaton(t *testing.T, env []string, dir string, args ...string) (string, string, error) {
	t.Helper()
	cmd := exec.Command(batonBin, args...)
	cmd.Env, cmd.Dir = env, dir
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	return out.String(), errOut.String(), err
}

func gitInit(t *testing.T, dir string) {
	t.Helper()
	cmd := exec.Command("git", "init", "-q", dir)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git init: %v: %s", err, out)
	}
}

func jsonString(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`, "\t", `\t`)
	return `"` + r.Replace(s) + `"`
}
