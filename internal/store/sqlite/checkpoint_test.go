package sqlite

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/store"
	"github.com/baton-agent/baton/internal/testutil"
)

// Appends with pauses between them, as a person's turns come, keep the
// write-ahead log near checkpointPages: the background checkpointer copies
// it back while they go on and catches up in the pauses, so the log starts
// afresh. Without it the writer's backstop would let the log grow to
// backstopPages first.
func TestBackgroundCheckpointKeepsTheLogShort(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), FileName)
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	sess, err := s.CreateSession(ctx, store.Session{})
	if err != nil {
		t.Fatal(err)
	}
	// Each append writes about three pages: more than the backstop's
	// worth of log in all.
	for i := range backstopPages / 2 {
		if _, err := s.AppendMessages(ctx, sess.ID, store.Message{Role: store.RoleUser, Content: "message"}); err != nil {
			t.Fatalf("append %d: %v", i, err)
		}
		if i%200 == 199 {
			testutil.Eventually(t, 5*time.Second, s.checkpoints.idle, "the background checkpoint to end")
		}
	}
	if got := s.checkpoints.runs.Load(); got == 0 {
		t.Fatal("the background checkpointer never ran")
	}
	fi, err := os.Stat(path + "-wal")
	if err != nil {
		t.Fatal(err)
	}
	// The log file is reused from its start after a full checkpoint, not
	// shortened: its size is the most frames it ever held.
	frames := fi.Size() / (4096 + 24)
	if frames >= 2*checkpointPages {
		t.Errorf("the write-ahead log grew to %d frames; the background checkpoint should keep it near %d", frames, checkpointPages)
	}
	n, err := s.Transcript(ctx, sess.ID)
	if err != nil || len(n) != backstopPages/2 {
		t.Fatalf("transcript: %d messages, %v", len(n), err)
	}
}
