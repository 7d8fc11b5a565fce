package web

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/platform"
	"github.com/baton-agent/baton/internal/platform/platformtest"
)

// sectionSetup is a Setup whose web section is the YAML given ("" for none).
func sectionSetup(t *testing.T, section string) platform.Setup {
	t.Helper()
	s := platformtest.Setup(t, Name, section, nil)
	s.Home = t.TempDir()
	s.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	s.Transcripts = staticTranscripts{}
	return s
}

func TestSpecOpen(t *testing.T) {
	spec := Spec()
	if spec.Name != Name || !spec.Trusted || spec.DefaultHome != Home.Key() || spec.Display == "" {
		t.Fatalf("spec %+v", spec)
	}
	ctx := t.Context()
	setup := sectionSetup(t, "listen: 127.0.0.1:0\n")
	// An upload a stopped gateway left behind goes; nothing else does.
	spool := filepath.Join(setup.Home, SpoolFolder)
	if os.MkdirAll(spool, 0o700) != nil || os.WriteFile(filepath.Join(spool, "baton-upload-123"), []byte("half"), 0o600) != nil ||
		os.WriteFile(filepath.Join(spool, "other"), nil, 0o600) != nil {
		t.Fatal("make a spool folder")
	}
	a, err := spec.Open(ctx, setup)
	if err != nil || a.Name() != Name {
		t.Fatalf("open: %v, %v", a, err)
	}
	a.(*Adapter).ln.Close()
	if a.(*Adapter).cfg.SpoolDir != spool {
		t.Errorf("uploads spooled in %q, want %q", a.(*Adapter).cfg.SpoolDir, spool)
	}
	if left := spoolLeft(t, spool); len(left) != 1 || left[0] != "other" {
		t.Errorf("the spool folder holds %v after opening, want only what is not an upload", left)
	}

	if _, err := spec.Open(ctx, sectionSetup(t, "enabled: false\nlisten: nonsense\n")); !errors.Is(err, platform.ErrNotConfigured) {
		t.Errorf("disabled: %v", err)
	}
	if _, err := spec.Open(ctx, sectionSetup(t, "listen: 0.0.0.0:80\n")); err == nil || !strings.Contains(err.Error(), "allow_remote") {
		t.Errorf("remote listen accepted: %v", err)
	}
	if _, err := spec.Open(ctx, sectionSetup(t, "listen: nonsense\n")); err == nil || !strings.Contains(err.Error(), "host:port") {
		t.Errorf("bad listen accepted: %v", err)
	}
	if _, err := spec.Open(ctx, sectionSetup(t, "listn: 127.0.0.1:0\n")); err == nil || !strings.Contains(err.Error(), "listn") {
		t.Errorf("unknown field accepted: %v", err)
	}
	// Remote means HTTPS: here, or at a reverse proxy in front.
	if err := (Section{Listen: "0.0.0.0:0", AllowRemote: true}).Check(); err == nil || !strings.Contains(err.Error(), "not over HTTPS") {
		t.Errorf("remote listen over plain HTTP: %v", err)
	}
	for _, ok := range []Section{
		{Listen: "0.0.0.0:0", AllowRemote: true, TLSProxy: true},
		{Listen: "0.0.0.0:0", AllowRemote: true, TLSCert: "c.pem", TLSKey: "k.pem"},
	} {
		if err := ok.Check(); err != nil {
			t.Errorf("%+v refused: %v", ok, err)
		}
	}
	if err := (Section{TLSCert: "c.pem"}).Check(); err == nil {
		t.Error("a certificate without its key accepted")
	}
}

type listed []Conversation

func (l listed) Conversations(context.Context, string) ([]Conversation, error) { return l, nil }
func (l listed) View(context.Context, string) ([]Line, error)                  { return nil, nil }

func TestConversationsKeepHomeFirstByActivity(t *testing.T) {
	now := time.Now()
	a := &Adapter{cfg: Config{Transcripts: listed{
		{Key: "web:thread:main:a", Title: "A", Updated: now},
		{Key: Home.Key(), Title: "whatever", Updated: now.Add(-time.Hour)},
		{Key: "web:thread:main:b", Title: "B", Updated: now.Add(-2 * time.Hour)},
	}}}
	got, err := a.conversations(t.Context())
	if err != nil || len(got) != 3 || got[0].Key != "web:thread:main:a" || got[1].Title != "Home" || got[2].Title != "B" {
		t.Fatalf("conversations %+v, %v", got, err)
	}
	a.cfg.Transcripts = listed{}
	got, _ = a.conversations(t.Context())
	if len(got) != 1 || got[0].Key != Home.Key() {
		t.Fatalf("home missing from an empty list: %+v", got)
	}
}
