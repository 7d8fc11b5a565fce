package cli

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/llm/llmtest"
	"github.com/baton-agent/baton/internal/store"
)

func TestOnceWithoutModelFails(t *testing.T) {
	app := testApp(t, nil)
	var out, errOut syncBuffer
	err := Once(t.Context(), app, "", "hello", nil, &out, &errOut)
	if !errors.Is(err, ErrNoModel) || !strings.Contains(err.Error(), "OPENAI_API_KEY") {
		t.Fatalf("Once without a model: %v", err)
	}
	if out.String() != "" {
		t.Fatalf("the offline text went to stdout as if it were an answer: %q", out.String())
	}
	if ss, _ := app.Store.ListSessions(t.Context(), store.SessionFilter{}); len(ss) != 0 {
		t.Fatalf("a session was created for a prompt nobody answered: %+v", ss)
	}
}

func TestErrorHintsFitWhereTheyAppear(t *testing.T) {
	srv := llmtest.Start(t)
	app := testApp(t, srv)

	// -p: there is no /retry in a script.
	srv.Push(llmtest.Fail{Status: 500})
	var out, errOut syncBuffer
	err := Once(t.Context(), app, "", "hello", nil, &out, &errOut)
	if err == nil || strings.Contains(err.Error(), "/retry") || !strings.Contains(err.Error(), "the provider failed; run the command again") {
		t.Errorf("-p error: %v", err)
	}

	// The chat: /retry answers the last message again. After a failed
	// /compress it would not compress, so the hint names /compress.
	srv.Push(
		llmtest.Reply{Text: "one"}, llmtest.Reply{Text: "two"}, llmtest.Reply{Text: "three"},
		llmtest.Fail{Status: 500}, // the compression's summary
		llmtest.Fail{Status: 500}, // a turn
	)
	got := runREPL(t, app, Config{}, "first", "second", "third", "/compress", "fourth")
	compress := got[strings.Index(got, "› /compress"):strings.Index(got, "› fourth")]
	if !strings.Contains(compress, "the provider failed; /compress to try again") || strings.Contains(compress, "/retry") {
		t.Errorf("after a failed /compress: %q", compress)
	}
	if turn := got[strings.Index(got, "› fourth"):]; !strings.Contains(turn, "the provider failed; /retry to try again") {
		t.Errorf("after a failed turn: %q", turn)
	}
}

func TestLastChattedIsTheLastConversation(t *testing.T) {
	app := testApp(t, nil)
	ctx := t.Context()
	at := time.Now().Add(-time.Hour)
	said := func(s store.Session, m store.Message) {
		t.Helper()
		at = at.Add(time.Minute)
		m.CreatedAt = at
		if _, err := app.Store.AppendMessages(ctx, s.ID, m); err != nil {
			t.Fatal(err)
		}
	}
	newSession := func() store.Session {
		t.Helper()
		s, err := app.NewSession(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	if _, err := LastChatted(ctx, app); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("no sessions: %v", err)
	}
	oneShots := newSession()
	said(oneShots, store.Message{Role: store.RoleUser, Content: "a script's question", PlatformMsgID: OneShotMsgID})
	if s, err := LastChatted(ctx, app); err != nil || s.ID != oneShots.ID {
		t.Fatalf("with only one-shots, the latest session: %+v, %v", s, err)
	}

	older, chat := newSession(), newSession()
	said(older, store.Message{Role: store.RoleUser, Content: "old chat", Platform: "telegram"})
	said(chat, store.Message{Role: store.RoleUser, Content: "the last chat"})
	said(chat, store.Message{Role: store.RoleAssistant, Content: "an answer"})
	// Since then: the older one renamed and ended, a one-shot in it, a
	// new one-shot session, and a note in the older one.
	if _, err := app.Store.SetTitle(ctx, older.ID, "renamed later"); err != nil {
		t.Fatal(err)
	}
	said(older, store.Message{Role: store.RoleUser, Content: "one-shot in it", PlatformMsgID: OneShotMsgID})
	said(older, store.Message{Role: store.RoleUser, Kind: store.KindNotice, Content: "a note"})
	said(newSession(), store.Message{Role: store.RoleUser, Content: "another script", PlatformMsgID: OneShotMsgID})
	if err := app.Store.EndSession(ctx, older.ID, "quit"); err != nil {
		t.Fatal(err)
	}
	s, err := LastChatted(ctx, app)
	if err != nil || s.ID != chat.ID {
		t.Fatalf("LastChatted = %s (%q), %v; want the last chat %s", s.ID, s.Title, err, chat.ID)
	}

	// A message from the person anywhere makes that the last chat.
	said(older, store.Message{Role: store.RoleUser, Content: "back in the old one", Platform: "web"})
	if s, _ := LastChatted(ctx, app); s.ID != older.ID {
		t.Fatalf("after a new message in the older chat: %s", s.ID)
	}
}

func TestOnceMarksItsPrompt(t *testing.T) {
	srv := llmtest.Start(t)
	app := testApp(t, srv)
	var out, errOut syncBuffer
	if err := Once(context.Background(), app, "", "from a script", nil, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	msgs, _ := app.Store.Transcript(t.Context(), onlySession(t, app).ID)
	if len(msgs) == 0 || msgs[0].PlatformMsgID != OneShotMsgID {
		t.Fatalf("the one-shot prompt is not marked: %+v", msgs)
	}
}

func TestREPLContinueShowsTheSessionsModelAndARule(t *testing.T) {
	srv := llmtest.Start(t)
	app := testApp(t, srv)
	ctx := t.Context()
	s, err := app.NewSession(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := app.Store.SetModel(ctx, s.ID, "special-model"); err != nil {
		t.Fatal(err)
	}
	if _, err := app.Store.AppendMessages(ctx, s.ID,
		store.Message{Role: store.RoleUser, Content: "earlier question"},
		store.Message{Role: store.RoleAssistant, Content: "earlier answer"},
	); err != nil {
		t.Fatal(err)
	}
	out := runREPL(t, app, Config{SessionID: s.ID}, "new question")
	if !strings.HasPrefix(out, "baton · openai · special-model ·") {
		t.Errorf("banner does not show the session's model:\n%s", out)
	}
	replayed := strings.Index(out, "earlier answer")
	ruled := strings.Index(out, "── "+replayedRule+" ──")
	asked := strings.Index(out, "› new question")
	if replayed < 0 || ruled < replayed || asked < ruled {
		t.Errorf("want the transcript, then the rule, then the new input:\n%s", out)
	}
	if got := srv.Requests()[0].Model(); got != "special-model" {
		t.Errorf("the turn used model %q", got)
	}
}

func TestREPLSessionsMarksThisOne(t *testing.T) {
	srv := llmtest.Start(t)
	app := testApp(t, srv)
	other, err := app.NewSession(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	out := runREPL(t, app, Config{}, "/sessions", "hello", "/sessions")
	first := out[strings.Index(out, "› /sessions"):strings.Index(out, "› hello")]
	if !strings.Contains(first, "not stored yet") {
		t.Errorf("before the first message: %q", first)
	}
	var here store.Session
	ss, _ := app.Store.ListSessions(t.Context(), store.SessionFilter{})
	for _, s := range ss {
		if s.ID != other.ID {
			here = s
		}
	}
	second := out[strings.LastIndex(out, "› /sessions"):]
	if !strings.Contains(second, "* "+short(here.ID)) || !strings.Contains(second, "  "+short(other.ID)) || !strings.Contains(second, "* is this session.") {
		t.Errorf("this session not marked in:\n%s", second)
	}
}

func TestREPLHelpNamesTheNewlineKey(t *testing.T) {
	app := testApp(t, nil)
	out := runREPL(t, app, Config{}, "/help")
	if !strings.Contains(strings.Join(strings.Fields(out), " "), "Alt+Enter or Ctrl+J starts a new line") {
		t.Fatalf("help:\n%s", out)
	}
}

func TestREPLCompletes(t *testing.T) {
	app := testApp(t, nil)
	ctx := t.Context()
	titled, _ := app.NewSession(ctx)
	if _, err := app.Store.SetTitle(ctx, titled.ID, "old plans"); err != nil {
		t.Fatal(err)
	}
	untitled, _ := app.NewSession(ctx)
	r, err := New(Config{
		App:            app,
		Reader:         NewScriptReader(strings.NewReader(""), nil),
		Out:            &syncBuffer{},
		HandoffTargets: func(context.Context) []string { return []string{"web", "telegram", "discord"} },
	})
	if err != nil {
		t.Fatal(err)
	}
	values := func(cs []Candidate) string {
		var v []string
		for _, c := range cs {
			v = append(v, c.Value)
		}
		return strings.Join(v, "|")
	}
	for _, tc := range []struct{ line, prefix, want string }{
		{"/re", "/re", "/reset|/resume|/retry"},
		{"/handoff ", "", "web|telegram|discord"},
		{"/handoff T", "T", "telegram"},
		{"/resume old p", "old p", "old plans"},
		{"/resume ", "", "old plans|" + short(untitled.ID)},
		{"/help han", "han", "handoff"},
		{"hello /re", "", ""},
	} {
		prefix, cs := r.complete(tc.line)
		if got := values(cs); got != tc.want && !(tc.line == "/resume " && got == short(untitled.ID)+"|old plans") {
			t.Errorf("complete(%q) = %q, want %q", tc.line, got, tc.want)
		}
		if len(cs) > 0 && prefix != tc.prefix {
			t.Errorf("complete(%q) replaces %q, want %q", tc.line, prefix, tc.prefix)
		}
	}
}

// On a narrow terminal /help breaks its lines between words, each
// description's continuation under its own column, instead of the
// terminal breaking words at its edge; nothing is lost.
func TestREPLHelpWrapsToTheTerminal(t *testing.T) {
	app := testApp(t, nil)
	const width = 44
	out := runREPL(t, app, Config{Width: func() int { return width }}, "/help")
	help := out[strings.Index(out, "› /help")+len("› /help"):]
	end := strings.Index(help, "leaves.")
	if end < 0 {
		t.Fatalf("no help in:\n%s", out)
	}
	help = help[:end+len("leaves.")]
	for _, line := range strings.Split(help, "\n") {
		if n := len([]rune(line)); n > width && strings.Contains(strings.TrimSpace(line), " ") {
			t.Errorf("a line of %d columns on a %d-column terminal: %q", n, width, line)
		}
		// A command's description is never flush with the commands.
		if strings.HasPrefix(line, "  ") && !strings.HasPrefix(line, "  /") && !strings.HasPrefix(line, "      ") {
			t.Errorf("a description line not indented under its command: %q", line)
		}
	}
	if strings.Join(strings.Fields(help), " ") != strings.Join(strings.Fields(wrapColumns(help, 1000)), " ") ||
		!strings.Contains(strings.Join(strings.Fields(help), " "), "Ctrl-C stops a running answer; Ctrl-D leaves.") {
		t.Errorf("words lost in wrapping:\n%s", help)
	}
}

func TestWrapColumns(t *testing.T) {
	got := wrapColumns("  /x <a>  one two three four five six\nshort\n", 24)
	want := "  /x <a>  one two three\n          four five six\nshort\n"
	if got != want {
		t.Errorf("got\n%q\nwant\n%q", got, want)
	}
	// A first column past half the width: the rest goes under it.
	got = wrapColumns("  /resume <id prefix>  switch to an earlier one\n", 24)
	want = "  /resume <id prefix>\n      switch to an\n      earlier one\n"
	if got != want {
		t.Errorf("got\n%q\nwant\n%q", got, want)
	}
}
