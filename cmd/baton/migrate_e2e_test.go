package main

import (
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/baton-agent/baton/internal/llm/llmtest"
	"github.com/baton-agent/baton/internal/store"
	"github.com/baton-agent/baton/internal/store/postgres/pgtest"
	"github.com/baton-agent/baton/internal/store/storetest"
)

// keptAt is where `sessions show` says a file is kept on this machine.
var keptAt = regexp.MustCompile(`, kept at [^\n]*`)

// TestMigrateToPostgres moves a home's SQLite store, made by the real
// binary (two chats, one with a photo), into a Postgres database with
// `baton migrate --to`: refused while the gateway runs, done with
// --stop-gateway, counts and checksums printed and equal, the password
// never printed; then, with store: naming the database, `baton sessions
// show` prints each session as it did from the SQLite file. A second
// migrate into the now full database is refused, saying how to start
// over.
func TestMigrateToPostgres(t *testing.T) {
	const password = "s3cret-pw"
	u, err := url.Parse(pgtest.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword(u.User.Username(), password) // the test server trusts, and ignores it
	target := u.String()

	srv := llmtest.Start(t)
	home, work := t.TempDir(), t.TempDir()
	env := cleanEnv(home, modelEnv(srv)...)
	batonHome := filepath.Join(home, "baton")
	writeConfig(t, batonHome, "web:\n  listen: 127.0.0.1:0\n")
	photo := filepath.Join(work, "lisbon.png")
	if err := os.WriteFile(photo, storetest.PNG(t, 8, 6), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"-p", "plan the trip to Lisbon", "--file", photo},
		{"-p", "and the trains from Porto"},
	} {
		if out, errOut, err := runBaton(t, env, work, args...); err != nil {
			t.Fatalf("baton %v: %v\n%s%s", args, err, out, errOut)
		}
	}
	st := openStore(t, home)
	list, err := st.ListSessions(t.Context(), store.SessionFilter{})
	if err != nil || len(list) != 2 {
		t.Fatalf("sessions made by -p: %v, %v", list, err)
	}
	st.Close()
	show := func(id string) string {
		t.Helper()
		out, errOut, err := runBaton(t, env, work, "sessions", "show", id)
		if err != nil {
			t.Fatalf("sessions show %s: %v\n%s%s", id, err, out, errOut)
		}
		return out
	}
	before := map[string]string{}
	for _, s := range list {
		before[s.ID] = show(s.ID)
	}
	if !strings.Contains(before[list[1].ID], "lisbon.png") {
		t.Errorf("the first session's transcript does not name its photo:\n%s", before[list[1].ID])
	}

	for _, args := range [][]string{{"migrate"}, {"migrate", "--to", "/srv/other.db"}} {
		if _, errOut, err := runBaton(t, env, work, args...); err == nil || !strings.Contains(errOut, "postgres://user:password@host:5432/database") {
			t.Errorf("baton %v: %v, %s; want the URL's form named", args, err, errOut)
		}
	}

	startGateway(t, env, batonHome)
	out, errOut, err := runBaton(t, env, work, "migrate", "--to", target)
	if err == nil || !strings.Contains(errOut, "a gateway is running") || !strings.Contains(errOut, "baton gateway stop") {
		t.Fatalf("migrate while the gateway runs: %v\nstdout:\n%s\nstderr:\n%s", err, out, errOut)
	}

	out, errOut, err = runBaton(t, env, work, "migrate", "--stop-gateway", "--to", target)
	if err != nil {
		t.Fatalf("migrate --stop-gateway: %v\nstdout:\n%s\nstderr:\n%s", err, out, errOut)
	}
	t.Logf("baton migrate:\n%s", out)
	for _, want := range []string{"Gateway stopped", "sessions", "messages", "attachments", "file bytes",
		"every count and checksum is the same", "store: postgres://", filepath.Join(batonHome, "config.yaml")} {
		if !strings.Contains(out, want) {
			t.Errorf("migrate's output lacks %q:\n%s", want, out)
		}
	}
	for _, s := range list {
		if !strings.Contains(out, s.ID) {
			t.Errorf("migrate's output has no checksum for session %s:\n%s", s.ID, out)
		}
	}
	if strings.Contains(out+errOut, "DIFFERS") {
		t.Errorf("migrate says the copy differs:\n%s", out)
	}
	if strings.Contains(out+errOut, password) {
		t.Errorf("migrate printed the password:\n%s%s", out, errOut)
	}

	writeConfig(t, batonHome, "web:\n  listen: 127.0.0.1:0\nstore: "+target+"\n")
	for id, want := range before {
		// A store on a server keeps files in no folder of this machine
		// (store.SessionFileOf): the one difference is where it was kept.
		want = keptAt.ReplaceAllString(want, "")
		if got := show(id); got != want {
			t.Errorf("session %s from Postgres:\n%s\nfrom SQLite:\n%s", id, got, want)
		}
	}

	writeConfig(t, batonHome, "web:\n  listen: 127.0.0.1:0\n")
	out, errOut, err = runBaton(t, env, work, "migrate", "--to", target)
	if err == nil || !strings.Contains(errOut, "2 sessions") || !strings.Contains(errOut, "dropdb") {
		t.Errorf("migrate into the database it filled: %v\nstdout:\n%s\nstderr:\n%s", err, out, errOut)
	}
	if strings.Contains(out+errOut, password) {
		t.Errorf("the refusal printed the password:\n%s%s", out, errOut)
	}
}
