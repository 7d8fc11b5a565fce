package sqlite_test

import (
	"bytes"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/baton-agent/baton/internal/store"
	"github.com/baton-agent/baton/internal/store/sqlite"
	"github.com/baton-agent/baton/internal/store/storetest"
)

// A backup is a store of its own, holding what the store held, and never
// written over an existing file.
func TestBackup(t *testing.T) {
	s := openTemp(t)
	defer s.Close()
	sid := seedAny(t, s, 1200)
	dest := filepath.Join(t.TempDir(), "copy.db")
	rec, err := s.Backup(t.Context(), dest)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Sessions != 1 || rec.LastMessage != 1200 {
		t.Errorf("the backup says it holds %+v", rec)
	}
	c, err := sqlite.Open(t.Context(), dest)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	tr, err := c.Transcript(t.Context(), sid)
	if err != nil || len(tr) != 1200 {
		t.Fatalf("the copy's transcript: %d messages, %v", len(tr), err)
	}
	if _, err := s.Backup(t.Context(), dest); err == nil || !strings.Contains(err.Error(), "exists") {
		t.Fatalf("a backup over an existing file: %v", err)
	}
	if _, err := s.CreateSession(t.Context(), store.Session{}); err != nil {
		t.Fatal(err)
	}
}

// A backup carries the attachments' bytes beside it, in its own files/.
func TestBackupCarriesFiles(t *testing.T) {
	s := openTemp(t)
	defer s.Close()
	ctx := t.Context()
	sess, _ := s.CreateSession(ctx, store.Session{OwnerID: "u"})
	a, err := s.PutFile(ctx, bytes.NewReader(storetest.PDF), "a.pdf")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.AppendMessages(ctx, sess.ID, store.Message{Role: store.RoleUser, Content: "x", Attachments: []store.Attachment{a}}); err != nil {
		t.Fatal(err)
	}
	dest := filepath.Join(t.TempDir(), "copy.db")
	if _, err := s.Backup(ctx, dest); err != nil {
		t.Fatal(err)
	}
	c, err := sqlite.Open(ctx, dest)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	f, err := c.OpenFile(ctx, a.SHA256)
	if err != nil {
		t.Fatalf("the copy cannot read its attachment: %v", err)
	}
	got, _ := io.ReadAll(f)
	f.Close()
	if !bytes.Equal(got, storetest.PDF) {
		t.Fatalf("the copy's attachment holds %q", got)
	}
	// A backup beside the store itself shares its files.
	if _, err := s.Backup(ctx, filepath.Join(filepath.Dir(s.Path()), "beside.db")); err != nil {
		t.Fatal(err)
	}
}
