package cli

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/baton-agent/baton/internal/llm/llmtest"
	"github.com/baton-agent/baton/internal/store"
)

// writeFile writes data at dir/name and returns the path.
func writeFile(t *testing.T, dir, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// /attach keeps files for the next message; the model sees the photo, the
// transcript keeps it, and a replay of the session names it with the
// path it is kept at.
func TestAttachCarriesFilesOnTheNextMessage(t *testing.T) {
	srv := llmtest.Start(t)
	app := testApp(t, srv)
	photo := llmtest.Photo(30, 20)
	dir := t.TempDir()
	p := writeFile(t, dir, "my whiteboard.jpg", photo)
	srv.Push(llmtest.Reply{Text: "A whiteboard."})

	out := runREPL(t, app, Config{}, `/attach "`+p+`" `+filepath.Join(dir, "missing.pdf"), "what is this?")
	for _, want := range []string{"📎 my whiteboard.jpg (image/jpeg,", "cannot attach " + filepath.Join(dir, "missing.pdf") + ": there is no such file", "carries 1 file", "A whiteboard."} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	reqs := srv.Requests()
	if imgs := reqs[len(reqs)-1].Images(); len(imgs) != 1 || !bytes.Equal(imgs[0].Data, photo) {
		t.Fatalf("the model got %d images, want the photo", len(imgs))
	}
	s := onlySession(t, app)
	msgs, _ := app.Store.Transcript(t.Context(), s.ID)
	if len(msgs) == 0 || msgs[0].Content != "what is this?" || len(msgs[0].Attachments) != 1 || msgs[0].Attachments[0].Name != "my whiteboard.jpg" {
		t.Fatalf("the transcript does not keep the photo with the message: %+v", msgs)
	}
	kept := store.SessionFileOf(t.Context(), app.Store, s.ID, msgs[0].Attachments[0])
	if !strings.Contains(kept, s.ID) {
		t.Errorf("the photo is shown at %s, not in the session's own folder", kept)
	}
	if got, err := os.ReadFile(kept); err != nil || !bytes.Equal(got, photo) {
		t.Fatalf("the photo is not readable at %s: %v", kept, err)
	}

	var show bytes.Buffer
	if err := ShowSession(t.Context(), app, &show, s.ID); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(show.String(), "📎 my whiteboard.jpg (image/jpeg, ") || !strings.Contains(show.String(), "kept at "+kept) {
		t.Errorf("the replay does not name the photo and its path:\n%s", show.String())
	}
}

// A file's path typed alone (a file dropped on the terminal) is offered
// for attaching; Enter takes it, and Enter again sends it alone.
func TestDroppedFileIsOfferedForAttaching(t *testing.T) {
	srv := llmtest.Start(t)
	app := testApp(t, srv)
	p := writeFile(t, t.TempDir(), "notes v2.txt", []byte("buy milk\n"))
	srv.Push(llmtest.Reply{Text: "Milk it is."})
	dropped := strings.ReplaceAll(p, " ", `\ `) // as a terminal types a dropped file
	out := runREPL(t, app, Config{}, dropped, "", "")
	if !strings.Contains(out, "Attach "+p+" to your next message?") || !strings.Contains(out, "Milk it is.") {
		t.Fatalf("output:\n%s", out)
	}
	msgs, _ := app.Store.Transcript(t.Context(), onlySession(t, app).ID)
	if len(msgs) == 0 || msgs[0].Content != "" || len(msgs[0].Attachments) != 1 || msgs[0].Attachments[0].MediaType != "text/plain; charset=utf-8" {
		t.Fatalf("the file alone is not the message: %+v", msgs)
	}
	reqs := srv.Requests()
	if got := fmt.Sprint(reqs[len(reqs)-1].Messages()); !strings.Contains(got, "buy milk") {
		t.Errorf("the model did not get the text file inline: %s", got)
	}
}

func TestOnceTakesFiles(t *testing.T) {
	srv := llmtest.Start(t)
	app := testApp(t, srv)
	pdf := append([]byte("%PDF-1.4\n"), bytes.Repeat([]byte("x"), 300)...)
	p := writeFile(t, t.TempDir(), "invoice.pdf", pdf)
	var out, errOut syncBuffer
	if err := Once(t.Context(), app, "", "", []string{p}, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	msgs, _ := app.Store.Transcript(t.Context(), onlySession(t, app).ID)
	var names []string
	for _, a := range msgs[0].Attachments {
		names = append(names, a.Name+":"+a.MediaType)
	}
	if !slices.Equal(names, []string{"invoice.pdf:application/pdf"}) {
		t.Fatalf("the prompt carries %v", names)
	}
	err := Once(t.Context(), app, "", "x", []string{filepath.Join(t.TempDir(), "nope.png")}, &out, &errOut)
	if err == nil || !strings.Contains(err.Error(), "there is no such file") {
		t.Fatalf("a missing file: %v", err)
	}
}

func TestSplitPaths(t *testing.T) {
	for in, want := range map[string][]string{
		`a.png b.pdf`:              {"a.png", "b.pdf"},
		`"my photo.jpg" x`:         {"my photo.jpg", "x"},
		`my\ photo.jpg  'a b'`:     {"my photo.jpg", "a b"},
		`  `:                       nil,
		`/tmp/with\\backslash.txt`: {`/tmp/with\backslash.txt`},
	} {
		if got := splitPaths(in); !slices.Equal(got, want) {
			t.Errorf("splitPaths(%q) = %q, want %q", in, got, want)
		}
	}
}
