package main

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/baton-agent/baton/internal/store"
	"github.com/baton-agent/baton/internal/store/sqlite"
	"github.com/baton-agent/baton/internal/testutil"
)

// transcriptSum is a checksum of a transcript's messages, in order.
func transcriptSum(msgs []store.Message) string {
	h := sha256.New()
	for _, m := range msgs {
		fmt.Fprintf(h, "%d\x00%s\x00%s\x00%s\x00%s\x00%s\x00", m.Seq, m.Role, m.Kind, m.Content, m.ToolCalls, m.ToolCallID)
	}
	return fmt.Sprintf("%x", h.Sum(nil))
}

// storeSums is every session of the store with its transcript's length
// and checksum.
func storeSums(t *testing.T, st store.Store) map[string][]store.Message {
	t.Helper()
	list, err := st.ListSessions(t.Context(), store.SessionFilter{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]store.Message{}
	for _, s := range list {
		tr, err := st.Transcript(t.Context(), s.ID)
		if err != nil {
			t.Fatal(err)
		}
		if len(tr) != s.MessageCount {
			t.Errorf("session %s counts %d messages and holds %d", s.ID, s.MessageCount, len(tr))
		}
		out[s.ID] = tr
	}
	return out
}

// restore puts a backup in place as a new home's store, as the README
// says to, and opens it.
func restore(t *testing.T, backup string) (string, *sqlite.Store) {
	t.Helper()
	home := t.TempDir()
	b, err := os.ReadFile(backup)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(home, "baton"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, "baton", sqlite.FileName), b, 0o600); err != nil {
		t.Fatal(err)
	}
	return home, openStore(t, home)
}

// Issue 24: `baton backup` while the gateway runs and another process
// writes without pause. The copy, restored as a new home's store, opens
// and passes `baton doctor`, and holds what the store held at one moment:
// each session's transcript as it was (a first part of what it became),
// none half written. Once the writes stop, a backup restored holds exactly
// what the store holds: the same sessions, counts and transcript
// checksums.
func TestBackupWhileTheGatewayRunsUnderLoad(t *testing.T) {
	home := t.TempDir()
	batonHome := filepath.Join(home, "baton")
	env := cleanEnv(home)
	writeConfig(t, batonHome, "web:\n  listen: 127.0.0.1:0\n")
	startGateway(t, env, batonHome)
	st := openStore(t, home)

	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	var wg sync.WaitGroup
	var stored atomic.Int64
	for w := range 4 {
		wg.Go(func() {
			var sess store.Session
			for turn := 0; ctx.Err() == nil; turn++ {
				if turn%20 == 0 {
					var err error
					if sess, err = st.CreateSession(context.Background(), store.Session{OwnerID: "load", Title: fmt.Sprintf("writer %d, part %d", w, turn/20)}); err != nil {
						t.Error(err)
						return
					}
				}
				msgs := make([]store.Message, 4)
				for i := range msgs {
					msgs[i] = store.Message{Role: store.RoleUser, Content: fmt.Sprintf("writer %d turn %d line %d %s", w, turn, i, strings.Repeat("x", turn%50))}
				}
				if _, err := st.AppendMessages(context.Background(), sess.ID, msgs...); err != nil {
					t.Error(err)
					return
				}
				stored.Add(int64(len(msgs)))
			}
		})
	}
	testutil.Eventually(t, hangGuard, func() bool { return stored.Load() >= 2000 }, "the load to store 2,000 messages")

	during := filepath.Join(t.TempDir(), "during.db")
	before := stored.Load()
	out, errOut, err := runBaton(t, env, home, "backup", during)
	if err != nil || !strings.Contains(out, "Backed up") || !strings.Contains(out, during) {
		t.Fatalf("baton backup under load: %v\n%s%s", err, out, errOut)
	}
	testutil.Eventually(t, hangGuard, func() bool { return stored.Load() > before+400 }, "the load to go on after the backup")
	stop()
	wg.Wait()
	if t.Failed() {
		return
	}

	live := storeSums(t, st)
	copyHome, copied := restore(t, during)
	got := storeSums(t, copied)
	if len(got) == 0 || len(got) > len(live) {
		t.Fatalf("the backup made under load holds %d sessions; the store %d", len(got), len(live))
	}
	for id, tr := range got {
		now, ok := live[id]
		if !ok || len(tr) > len(now) || transcriptSum(tr) != transcriptSum(now[:len(tr)]) {
			t.Fatalf("session %s in the backup (%d messages) is not the first part of the store's (%d)", id, len(tr), len(now))
		}
		if len(tr)%4 != 0 {
			t.Errorf("session %s in the backup holds %d messages: part of a turn of 4", id, len(tr))
		}
	}
	if out, errOut, err := runBaton(t, cleanEnv(copyHome), copyHome, "doctor"); err != nil || !strings.Contains(out, "integrity ok") {
		t.Errorf("baton doctor on the restored backup: %v\n%s%s", err, out, errOut)
	}

	after := filepath.Join(t.TempDir(), "after.db")
	if out, errOut, err := runBaton(t, env, home, "backup", after); err != nil {
		t.Fatalf("baton backup: %v\n%s%s", err, out, errOut)
	}
	_, restored := restore(t, after)
	again := storeSums(t, restored)
	if len(again) != len(live) {
		t.Fatalf("the backup holds %d sessions, the store %d", len(again), len(live))
	}
	var messages int
	for id, tr := range live {
		if transcriptSum(again[id]) != transcriptSum(tr) || len(again[id]) != len(tr) {
			t.Fatalf("session %s: the backup holds %d messages (sum %s), the store %d (sum %s)", id,
				len(again[id]), transcriptSum(again[id])[:12], len(tr), transcriptSum(tr)[:12])
		}
		messages += len(tr)
	}
	t.Logf("backup under load: %d of %d sessions; after: %d sessions, %d messages, checksums equal", len(got), len(live), len(again), messages)
	if _, _, err := runBaton(t, env, home, "backup", after); err == nil {
		t.Error("baton backup wrote over an existing file")
	}
}
