package agent_test

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/llm/llmtest"
)

// bareRepo makes dir look to git like a repository's control directory.
func bareRepo(t *testing.T, dir string) {
	t.Helper()
	for _, d := range []string{"objects", "refs", "hooks"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "HEAD"), []byte("ref: refs/heads/main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A hard link in the working directory to a file outside it, and the
// control files of any repository (a bare one, or one under another
// name), are not "inside": reading the one and writing the others ask,
// and a rule covers them only by naming them.
func TestHardLinksAndRepositoryControlFilesAsk(t *testing.T) {
	e := newEnv(t)
	ap := &scripted{}
	e.agent.Approver = ap
	secret := filepath.Join(t.TempDir(), "secret.txt")
	if err := os.WriteFile(secret, []byte("s3cret"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(secret, filepath.Join(e.dir, "link.txt")); err != nil {
		t.Skipf("hard links: %v", err)
	}
	bareRepo(t, filepath.Join(e.dir, "x.git"))
	bareRepo(t, filepath.Join(e.dir, "docs", "mirror"))
	bareRepo(t, filepath.Join(e.dir, "vendored.git"))
	e.agent.Allow = []string{"read_file", "write_file", "edit_file", "write_file:docs/", "write_file:vendored.git/hooks/"}
	e.srv.Push(llmtest.Reply{ToolCalls: []llmtest.Call{
		call("read_file", `{"path":"link.txt"}`),
		writeCall("link.txt"),
		writeCall("x.git/config"),
		writeCall("x.git/hooks/post-checkout"),
		writeCall("docs/mirror/hooks/pre-commit"),
		writeCall("docs/ok.md"),
		writeCall("vendored.git/hooks/pre-push"), // a rule names it
		writeCall("plain.txt"),
	}}, llmtest.Reply{Text: "done"})
	e.mustRun(e.sid, "go")
	want := []string{"read_file link.txt", "write_file link.txt", "write_file x.git/config",
		"write_file x.git/hooks/post-checkout", "write_file docs/mirror/hooks/pre-commit"}
	if got := ap.subjects(); !reflect.DeepEqual(got, want) {
		t.Errorf("asked %v, want %v", got, want)
	}
	if got, _ := os.ReadFile(secret); string(got) != "s3cret" {
		t.Errorf("the file outside was changed: %q", got)
	}
	for _, f := range []string{"x.git/config", "x.git/hooks/post-checkout", "docs/mirror/hooks/pre-commit"} {
		if e.exists(f) {
			t.Errorf("%s was written unasked", f)
		}
	}
	for _, f := range []string{"docs/ok.md", "vendored.git/hooks/pre-push", "plain.txt"} {
		if !e.exists(f) {
			t.Errorf("%s was not written", f)
		}
	}
}

// A folder flipped into a link to somewhere else while writes under an
// allowed folder run never carries a write out of it: the path is checked
// once and written through a handle opened without following links.
func TestWritesDoNotFollowALinkThatAppearsAfterTheCheck(t *testing.T) {
	e := newEnv(t)
	e.agent.Approver = &scripted{} // denies anything asked
	outside := t.TempDir()
	sub := filepath.Join(e.dir, "docs", "sub")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	e.agent.Allow = []string{"write_file:docs/"}
	const n = 300
	calls := make([]llmtest.Call, n)
	for i := range calls {
		calls[i] = writeCall(fmt.Sprintf("docs/sub/f%d.txt", i))
	}
	e.srv.Push(llmtest.Reply{ToolCalls: calls}, llmtest.Reply{Text: "done"})

	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		held := sub + ".held"
		// Each state is held a little while, so that a check and the
		// write after it can see different ones.
		spin := func() {
			for end := time.Now().Add(50 * time.Microsecond); time.Now().Before(end); {
			}
		}
		for !stop.Load() {
			if os.Rename(sub, held) != nil {
				continue
			}
			_ = os.Symlink(outside, sub)
			spin()
			_ = os.Remove(sub)
			if os.Rename(held, sub) != nil {
				// A write made the folder again meanwhile.
				_ = os.RemoveAll(sub)
				_ = os.Rename(held, sub)
			}
			spin()
		}
	}()
	e.mustRun(e.sid, "go")
	stop.Store(true)
	wg.Wait()
	escaped, err := os.ReadDir(outside)
	if err != nil {
		t.Fatal(err)
	}
	if len(escaped) > 0 {
		t.Errorf("%d of %d writes escaped docs/ through the flipped link (first: %s)", len(escaped), n, escaped[0].Name())
	}
}
