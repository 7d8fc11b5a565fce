package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func TestVersion(t *testing.T) {
	root := newRoot()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetArgs([]string{"version"})
	if err := root.ExecuteContext(t.Context()); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out.String(), "baton ") || !strings.Contains(out.String(), "go1.") {
		t.Fatalf("version output %q", out.String())
	}
	root = newRoot()
	root.SetArgs([]string{"version", "extra"})
	root.SetOut(&out)
	root.SetErr(&out)
	if err := root.ExecuteContext(t.Context()); err == nil {
		t.Fatal("version accepted an argument")
	}
}

// TestHelpFlagsTakeNoValueWhereTheyTakeNone: a flag that is a switch
// shows no value after it in --help, and each shows what it does.
func TestHelpFlagsTakeNoValueWhereTheyTakeNone(t *testing.T) {
	root := newRoot()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetArgs([]string{"--help"})
	if err := root.ExecuteContext(t.Context()); err != nil {
		t.Fatal(err)
	}
	var version string
	for _, l := range strings.Split(out.String(), "\n") {
		if strings.Contains(l, "--version") {
			version = strings.TrimSpace(l)
		}
	}
	if !strings.HasPrefix(version, "--version ") || !strings.HasPrefix(strings.TrimSpace(strings.TrimPrefix(version, "--version")), "print baton's version") {
		t.Errorf("--version in --help reads %q:\n%s", version, out.String())
	}
}

// A platform's own setup commands appear as `baton <platform> <name>`
// and run against baton's store.
func TestPlatformSubcommands(t *testing.T) {
	home := t.TempDir()
	t.Setenv("BATON_HOME", home)
	t.Setenv("BATON_WHATSAPP", whatsappBin) // the test binary has no baton-whatsapp beside it
	root := newRoot()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs([]string{"whatsapp", "unlink"})
	if err := root.ExecuteContext(t.Context()); err != nil {
		t.Fatalf("whatsapp unlink: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "No WhatsApp device is linked") {
		t.Errorf("whatsapp unlink said %q", out.String())
	}
	if _, err := os.Stat(filepath.Join(home, "state.db")); err != nil {
		t.Errorf("the store was not opened first: %v", err)
	}
	root = newRoot()
	out.Reset()
	root.SetOut(&out)
	root.SetArgs([]string{"whatsapp", "--help"})
	if err := root.ExecuteContext(t.Context()); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"link", "unlink"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("whatsapp --help lacks %q:\n%s", want, out.String())
		}
	}
}

// `baton link` makes an account the owner's; `baton whoami` lists it.
func TestLinkAndWhoAmI(t *testing.T) {
	t.Setenv("BATON_HOME", t.TempDir())
	run := func(args ...string) (string, error) {
		root := newRoot()
		var out bytes.Buffer
		root.SetOut(&out)
		root.SetErr(&out)
		root.SetArgs(args)
		err := root.ExecuteContext(t.Context())
		return out.String(), err
	}
	if out, err := run("link", "telegram", "123456789"); err != nil || !strings.Contains(out, "telegram 123456789 is now one of your accounts") {
		t.Fatalf("link: %v\n%s", err, out)
	}
	out, err := run("whoami")
	if err != nil || !strings.Contains(out, "- telegram 123456789 (linked)") || !strings.Contains(out, "(this computer)") {
		t.Fatalf("whoami: %v\n%s", err, out)
	}
	if _, err := run("link", "telegram"); err == nil {
		t.Error("link with no id succeeded")
	}
}

func TestVersionFlag(t *testing.T) {
	var cmdOut, flagOut bytes.Buffer
	root := newRoot()
	root.SetOut(&cmdOut)
	root.SetArgs([]string{"version"})
	if err := root.ExecuteContext(t.Context()); err != nil {
		t.Fatal(err)
	}
	root = newRoot()
	root.SetOut(&flagOut)
	root.SetArgs([]string{"--version"})
	if err := root.ExecuteContext(t.Context()); err != nil {
		t.Fatalf("--version: %v", err)
	}
	if flagOut.String() != cmdOut.String() || !strings.HasPrefix(flagOut.String(), "baton ") {
		t.Fatalf("--version printed %q; baton version prints %q", flagOut.String(), cmdOut.String())
	}
}

// WhatsApp's protocol library lives in baton-whatsapp alone: linked into
// baton it made every command start twice as slowly (docs/BENCHMARKS.md).
func TestBatonLinksNoWhatsAppLibrary(t *testing.T) {
	goTool := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(goTool); err != nil {
		goTool = "go"
	}
	out, err := exec.Command(goTool, "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, pkg := range strings.Fields(string(out)) {
		if strings.HasPrefix(pkg, "go.mau.fi/whatsmeow") || strings.HasPrefix(pkg, "github.com/mdp/qrterminal") {
			t.Errorf("baton links %s; it belongs in cmd/baton-whatsapp", pkg)
		}
	}
}
