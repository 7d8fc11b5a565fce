package discord_test

import (
	"fmt"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/platform"
	"github.com/baton-agent/baton/internal/platform/discord"
	"github.com/baton-agent/baton/internal/platform/discord/discordtest"
	"github.com/baton-agent/baton/internal/platform/platformtest"
	"github.com/baton-agent/baton/internal/testutil"
)

// baton was down longer than Discord keeps a session: the RESUME is
// refused and the new session replays nothing, so what people said in
// the meantime, where they had spoken to baton before, is fetched over
// REST: every message once, oldest first, in the right place, before
// anything said after the restart; a catch-up cut short by a failure
// is finished by the next connection.
func TestCatchUpAfterTheSessionExpired(t *testing.T) {
	for _, fail := range []bool{false, true} {
		t.Run(fmt.Sprintf("failing once %v", fail), func(t *testing.T) {
			fake := discordtest.New(t, token)
			mem := platformtest.NewMemory()
			adapter := func() *discord.Adapter {
				a, err := discord.New(discord.Config{Token: token, APIURL: fake.APIURL(), RequestTimeout: 5 * time.Second,
					Logger: slog.New(slog.DiscardHandler), Memory: mem})
				if err != nil {
					t.Fatal(err)
				}
				return a
			}
			home := fake.Home()
			dm := fake.AddDM(owner)
			quiet := fake.AddChannel("quiet")
			first := adapter()
			ev := &events{}
			stop, _ := run(t, first, ev)
			testutil.Eventually(t, testutil.Patience, func() bool { return fake.Connected() == 1 }, "the connection")
			before := []string{}
			for _, at := range []string{home, dm} {
				id, _ := fake.Say(at, owner, "before the outage")
				before = append(before, id)
				ev.await(t, id)
			}
			stop()
			testutil.Eventually(t, testutil.Patience, func() bool { return fake.Connected() == 0 }, "the first run to be gone")

			// The outage: 150 messages at home (two pages), two in the DM,
			// the bot's own answer from elsewhere, one where nobody had
			// spoken to baton.
			var gap []string
			for i := range 150 {
				id, _ := fake.Say(home, owner, fmt.Sprintf("home %d", i))
				gap = append(gap, id)
			}
			for i := range 2 {
				id, _ := fake.Say(dm, owner, fmt.Sprintf("dm %d", i))
				gap = append(gap, id)
			}
			fake.ExpireSessions()
			untracked, _ := fake.Say(quiet, owner, "nobody spoke to baton here")
			if fail {
				fake.FailNext(discordtest.RouteGetMessages, http.StatusInternalServerError, 0)
			}

			second := adapter()
			ev2 := &events{}
			keepRunning(t, second, ev2)
			for _, id := range gap {
				ev2.await(t, id)
			}
			after, _ := fake.Say(home, owner, "after the restart")
			ev2.await(t, after)

			pos := map[string]int{}
			for i, e := range ev2.all() {
				if _, dup := pos[e.ID]; dup {
					t.Errorf("message %s (%q) came twice", e.ID, e.Text)
				}
				pos[e.ID] = i
			}
			for _, id := range before {
				if _, ok := pos[id]; ok {
					t.Errorf("message %s from before the outage came again", id)
				}
			}
			if _, ok := pos[untracked]; ok {
				t.Errorf("a channel nobody had spoken to baton in was caught up")
			}
			for i := 1; i < 150; i++ {
				if pos[gap[i]] < pos[gap[i-1]] {
					t.Fatalf("home %d came before home %d", i, i-1)
				}
			}
			if pos[after] < pos[gap[149]] || pos[after] < pos[gap[151]] {
				t.Errorf("the message after the restart came before the caught-up ones")
			}
			got := ev2.all()
			at := got[pos[gap[0]]].At
			if at.Kind != platform.Group || at.Chat != home {
				t.Errorf("a caught-up home message is at %+v, want the home channel", at)
			}
			if dmAt := got[pos[gap[150]]].At; dmAt.Kind != platform.DM || dmAt.Chat != dm {
				t.Errorf("a caught-up DM is at %+v, want the DM", dmAt)
			}
			if fake.Identifies() != 2 {
				t.Errorf("%d IDENTIFYs, want 2 (the first session, then a new one)", fake.Identifies())
			}
			// Two pages at home and one in the DM; cut short, the new
			// session is resumed and the catch-up begins again.
			wantCalls, wantResumes := 3, 0
			if fail {
				wantCalls, wantResumes = 4, 1
			}
			if n := fake.CallCount(discordtest.RouteGetMessages); n < wantCalls {
				t.Errorf("%d requests for messages, want at least %d", n, wantCalls)
			}
			if n := fake.Resumes(); n < wantResumes {
				t.Errorf("%d RESUMEs after the failed catch-up, want at least %d", n, wantResumes)
			}
		})
	}
}

// A file sent while baton was away longer than Discord keeps a session is
// fetched with its message, and read from the CDN like one that came over
// the gateway.
func TestCatchUpBringsAttachments(t *testing.T) {
	fake := discordtest.New(t, token)
	mem := platformtest.NewMemory()
	adapter := func() *discord.Adapter {
		a, err := discord.New(discord.Config{Token: token, APIURL: fake.APIURL(), CDNURL: fake.CDNURL(),
			Logger: slog.New(slog.DiscardHandler), Memory: mem})
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	home := fake.Home()
	ev := &events{}
	stop, _ := run(t, adapter(), ev)
	testutil.Eventually(t, testutil.Patience, func() bool { return fake.Connected() == 1 }, "the connection")
	id, _ := fake.Say(home, owner, "before the outage")
	ev.await(t, id)
	stop()
	testutil.Eventually(t, testutil.Patience, func() bool { return fake.Connected() == 0 }, "the first run to be gone")

	id, _ = fake.SayFile(home, owner, discordtest.File{Name: "away.pdf", ContentType: "application/pdf", Data: []byte("%PDF-1.4 away")})
	fake.ExpireSessions()
	ev2 := &events{}
	keepRunning(t, adapter(), ev2)
	got := ev2.await(t, id)
	if len(got.Attachments) != 1 || got.Attachments[0].Name != "away.pdf" {
		t.Fatalf("the file caught up arrived as %+v", got)
	}
	data, err := readAll(t, got.Attachments[0])
	if err != nil || string(data) != "%PDF-1.4 away" {
		t.Errorf("read back %q, %v", data, err)
	}
}
