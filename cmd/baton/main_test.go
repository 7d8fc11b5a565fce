package main

import (
	"bytes"
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
