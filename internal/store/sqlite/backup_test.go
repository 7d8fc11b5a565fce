package sqlite_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/baton-agent/baton/internal/store"
	"github.com/baton-agent/baton/internal/store/sqlite"
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
