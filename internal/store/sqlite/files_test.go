package sqlite_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/store"
	"github.com/baton-agent/baton/internal/store/sqlite"
	"github.com/baton-agent/baton/internal/store/storetest"
)

// filesOnDisk lists every file under the store's files folder, temporary
// ones included, relative to it.
func filesOnDisk(t testing.TB, s *sqlite.Store) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(s.FilesPath(), func(p string, d fs.DirEntry, err error) error {
		if os.IsNotExist(err) {
			return fs.SkipAll
		}
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(s.FilesPath(), p)
			out = append(out, rel)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestFilesLiveBesideTheStoreOncePerContent(t *testing.T) {
	s := openTemp(t)
	defer s.Close()
	eq := filepath.Join(filepath.Dir(s.Path()), "files")
	if s.FilesPath() != eq {
		t.Fatalf("files folder %s, want %s", s.FilesPath(), eq)
	}
	a, err := s.PutFile(t.Context(), bytes.NewReader(storetest.PDF), "a.pdf")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.PutFile(t.Context(), strings.NewReader(string(storetest.PDF)), "again.pdf"); err != nil {
		t.Fatal(err)
	}
	got := filesOnDisk(t, s)
	want := filepath.Join(a.SHA256[:2], a.SHA256)
	if len(got) != 1 || got[0] != want {
		t.Fatalf("files on disk %q, want only %s", got, want)
	}
	fi, err := os.Stat(filepath.Join(s.FilesPath(), want))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("file mode %v, want 0600", fi.Mode().Perm())
	}
}

func TestRefusedFileLeavesNothingOnDisk(t *testing.T) {
	s, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), sqlite.FileName), sqlite.WithMaxFileBytes(1000))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, err = s.PutFile(t.Context(), io.LimitReader(bytes.NewReader(make([]byte, 5000)), 1001), "big")
	if err == nil || !strings.Contains(err.Error(), "more than 1000 bytes, the bound is 1000 bytes") {
		t.Fatalf("error = %v, want the size and the bound", err)
	}
	if got := filesOnDisk(t, s); len(got) != 0 {
		t.Fatalf("files left on disk: %q", got)
	}
	// A cancelled put leaves nothing either.
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := s.PutFile(ctx, strings.NewReader("x"), "x"); err == nil {
		t.Fatal("a cancelled put stored its file")
	}
	if got := filesOnDisk(t, s); len(got) != 0 {
		t.Fatalf("files left on disk: %q", got)
	}
}

func TestDeletedSessionsLeaveNoFiles(t *testing.T) {
	s := openTemp(t)
	defer s.Close()
	ctx := t.Context()
	var ids []string
	for i := range 3 {
		sess, err := s.CreateSession(ctx, store.Session{OwnerID: "u"})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, sess.ID)
		own, err := s.PutFile(ctx, bytes.NewReader(storetest.PNG(t, i+1, 1)), "own.png")
		if err != nil {
			t.Fatal(err)
		}
		shared, err := s.PutFile(ctx, bytes.NewReader(storetest.PDF), "shared.pdf")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.AppendMessages(ctx, sess.ID, store.Message{Role: store.RoleUser, Content: "files",
			Attachments: []store.Attachment{own, shared, own}}); err != nil {
			t.Fatal(err)
		}
		// Shown in the session's own folder, as the agent names them.
		for _, a := range []store.Attachment{own, shared} {
			p, err := s.SessionFile(ctx, sess.ID, a)
			if err != nil {
				t.Fatal(err)
			}
			if got, err := os.ReadFile(p); err != nil || int64(len(got)) != a.Size || filepath.Dir(p) != s.SessionFolder(sess.ID) {
				t.Fatalf("%s shown at %s: %d bytes, %v", a.Name, p, len(got), err)
			}
			if again, _ := s.SessionFile(ctx, sess.ID, a); again != p {
				t.Fatalf("%s shown at %s, then at %s", a.Name, p, again)
			}
		}
	}
	if got := filesOnDisk(t, s); len(got) != 4 {
		t.Fatalf("files on disk %q, want 4", got)
	}
	for _, id := range ids {
		if err := s.DeleteSession(ctx, id); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(s.SessionFolder(id)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("the folder of deleted session %s is left: %v", id, err)
		}
	}
	if got := filesOnDisk(t, s); len(got) != 0 {
		t.Fatalf("files left after deleting every session: %q", got)
	}
}

// A long transcript is read from packs and by several readers; the
// attachments of its messages come with them on every path.
func TestLongTranscriptCarriesAttachments(t *testing.T) {
	path := filepath.Join(t.TempDir(), sqlite.FileName)
	s, err := sqlite.Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	sess, _ := s.CreateSession(ctx, store.Session{OwnerID: "u"})
	img, err := s.PutFile(ctx, bytes.NewReader(storetest.PNG(t, 2, 2)), "p.png")
	if err != nil {
		t.Fatal(err)
	}
	const n = 3000
	for i := 0; i < n; i += 100 {
		batch := make([]store.Message, 100)
		for j := range batch {
			batch[j] = store.Message{Role: store.RoleUser, Content: fmt.Sprint(i + j)}
			if (i+j)%7 == 0 {
				batch[j].Attachments = []store.Attachment{img}
			}
		}
		if _, err := s.AppendMessages(ctx, sess.ID, batch...); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	check := func(what string, ms []store.Message) {
		t.Helper()
		if len(ms) != n {
			t.Fatalf("%s: %d messages, want %d", what, len(ms), n)
		}
		for i, m := range ms {
			want := 0
			if i%7 == 0 {
				want = 1
			}
			if len(m.Attachments) != want || want == 1 && (m.Attachments[0].SHA256 != img.SHA256 || m.Attachments[0].MessageID != m.ID) {
				t.Fatalf("%s: message %d has attachments %+v", what, i, m.Attachments)
			}
		}
	}
	for _, opts := range [][]sqlite.Option{{sqlite.WithoutTranscriptCache()}, {sqlite.WithSequentialLoads(), sqlite.WithoutTranscriptCache()}} {
		s, err := sqlite.Open(ctx, path, opts...)
		if err != nil {
			t.Fatal(err)
		}
		check("cold load", must(t)(s.Transcript(ctx, sess.ID)))
		sqlite.WaitPacks(s)
		check("load from packs", must(t)(s.Transcript(ctx, sess.ID)))
		s.Close()
	}
}

func must(t *testing.T) func([]store.Message, error) []store.Message {
	return func(ms []store.Message, err error) []store.Message {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return ms
	}
}

// helperPut keeps one file, then starts keeping another whose bytes
// never end, says so, and waits to be killed: a process killed between
// writing an attachment's bytes and storing the message naming them.
func helperPut() int {
	ctx := context.Background()
	s, err := sqlite.Open(ctx, os.Getenv("DB"))
	if err != nil {
		fmt.Println("open:", err)
		return 1
	}
	a, err := s.PutFile(ctx, bytes.NewReader(storetest.PDF), "put.pdf")
	if err != nil {
		fmt.Println("put:", err)
		return 1
	}
	fmt.Println("put", a.SHA256)
	pr, pw := io.Pipe()
	go func() {
		pw.Write(bytes.Repeat([]byte("half"), 100_000))
		fmt.Println("writing")
		select {}
	}()
	s.PutFile(ctx, pr, "half.bin")
	return 1
}

// A process killed between writing a file and storing the message that
// names it leaves bytes no row names (never a row without bytes): the
// kept file and a temporary one. A store opened while they may still be
// another process's message in the making keeps them; once they are
// older than that could be, the next open removes them.
func TestKilledPutLeavesNoOrphansPastTheNextOpen(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("SIGKILL")
	}
	path := filepath.Join(t.TempDir(), sqlite.FileName)
	s, err := sqlite.Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	cmd := helper(t, "put", "DB="+path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(out)
	var said []string
	for len(said) < 2 && lines.Scan() {
		said = append(said, lines.Text())
	}
	cmd.Process.Kill()
	cmd.Wait()
	if len(said) != 2 || !strings.HasPrefix(said[0], "put ") || said[1] != "writing" {
		t.Fatalf("helper said %q", said)
	}

	s, err = sqlite.Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	left := filesOnDisk(t, s)
	s.Close()
	if len(left) != 2 {
		t.Fatalf("files after the kill %q, want the kept one and the half-written one", left)
	}
	old := time.Now().Add(-2 * time.Hour)
	for _, f := range left {
		if err := os.Chtimes(filepath.Join(filepath.Dir(path), "files", f), old, old); err != nil {
			t.Fatal(err)
		}
	}
	s, err = sqlite.Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got := filesOnDisk(t, s); len(got) != 0 {
		t.Fatalf("files left after the next open: %q", got)
	}
}

// An old file that a message names is never swept.
func TestOpenKeepsOldFilesMessagesName(t *testing.T) {
	path := filepath.Join(t.TempDir(), sqlite.FileName)
	s, err := sqlite.Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	sess, _ := s.CreateSession(t.Context(), store.Session{OwnerID: "u"})
	a, err := s.PutFile(t.Context(), bytes.NewReader(storetest.PDF), "kept.pdf")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.AppendMessages(t.Context(), sess.ID, store.Message{Role: store.RoleUser, Content: "x", Attachments: []store.Attachment{a}}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	old := time.Now().Add(-48 * time.Hour)
	if err := os.Chtimes(filepath.Join(filepath.Dir(path), "files", a.SHA256[:2], a.SHA256), old, old); err != nil {
		t.Fatal(err)
	}
	s, err = sqlite.Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got := filesOnDisk(t, s); len(got) != 1 {
		t.Fatalf("files after open %q, want the named one", got)
	}
}

// An inbound event's files are kept while it waits or is parked, and
// swept once it is handled and nothing names them.
func TestInboundFilesKeptUntilHandled(t *testing.T) {
	path := filepath.Join(t.TempDir(), sqlite.FileName)
	s, err := sqlite.Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	a, err := s.PutFile(ctx, bytes.NewReader(storetest.PDF), "in.pdf")
	if err != nil {
		t.Fatal(err)
	}
	in, _, err := s.AddInbound(ctx, store.Inbound{Platform: "telegram", AddressKey: "telegram:dm:1", Attachments: []store.Attachment{a}})
	if err != nil {
		t.Fatal(err)
	}
	age := func() {
		old := time.Now().Add(-2 * time.Hour)
		if err := os.Chtimes(filepath.Join(s.FilesPath(), a.SHA256[:2], a.SHA256), old, old); err != nil {
			t.Fatal(err)
		}
	}
	reopen := func() int {
		s.Close()
		if s, err = sqlite.Open(ctx, path); err != nil {
			t.Fatal(err)
		}
		return len(filesOnDisk(t, s))
	}
	age()
	if n := reopen(); n != 1 {
		t.Fatalf("a pending event's file was swept (%d files)", n)
	}
	sess, _ := s.CreateSession(ctx, store.Session{OwnerID: "u"})
	if err := s.ParkInbound(ctx, in.ID, sess.ID, "telegram:dm:1"); err != nil {
		t.Fatal(err)
	}
	age()
	if n := reopen(); n != 1 {
		t.Fatalf("a parked event's file was swept (%d files)", n)
	}
	if err := s.Unpark(ctx, in.ID); err != nil {
		t.Fatal(err)
	}
	age()
	if n := reopen(); n != 0 {
		t.Fatalf("a handled event's file was kept (%d files)", n)
	}
	s.Close()
}

// A delivery's files are kept while it is unsent.
func TestDeliveryFilesKeptUntilSent(t *testing.T) {
	path := filepath.Join(t.TempDir(), sqlite.FileName)
	s, err := sqlite.Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	a, err := s.PutFile(ctx, bytes.NewReader(storetest.PDF), "out.pdf")
	if err != nil {
		t.Fatal(err)
	}
	ds, err := s.EnqueueDeliveries(ctx, store.Delivery{AddressKey: "telegram:dm:1", Attachments: []store.Attachment{a}})
	if err != nil {
		t.Fatal(err)
	}
	reopenAged := func() int {
		old := time.Now().Add(-2 * time.Hour)
		if err := os.Chtimes(filepath.Join(s.FilesPath(), a.SHA256[:2], a.SHA256), old, old); err != nil {
			t.Fatal(err)
		}
		s.Close()
		if s, err = sqlite.Open(ctx, path); err != nil {
			t.Fatal(err)
		}
		return len(filesOnDisk(t, s))
	}
	if n := reopenAged(); n != 1 {
		t.Fatalf("an unsent delivery's file was swept (%d files)", n)
	}
	if err := s.MarkDelivered(ctx, ds[0].ID, "m1"); err != nil {
		t.Fatal(err)
	}
	if n := reopenAged(); n != 0 {
		t.Fatalf("a sent delivery's file was kept (%d files)", n)
	}
	s.Close()
}
