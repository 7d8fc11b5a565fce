package gatewaytest

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/platform"
	"github.com/baton-agent/baton/internal/platform/discord"
	"github.com/baton-agent/baton/internal/platform/discord/discordtest"
	"github.com/baton-agent/baton/internal/testutil"
)

// Discord is the REST and gateway fake with a guild channel as the home: a
// handoff opens a thread in it.
func Discord() Harness { return discordHarness{} }

const discordToken = "MTIz.gateway.test"

var (
	discordOwner    = discordtest.User{ID: "4242", Username: "owner"}
	discordStranger = discordtest.User{ID: "6666", Username: "eve"}
)

type discordHarness struct{}

func (discordHarness) Caps() Caps {
	return Caps{Threads: true, Refuses: true, Drops: true, CatchesUp: true}
}

func (discordHarness) Start(t testing.TB) Service {
	t.Helper()
	fake := discordtest.New(t, discordToken)
	return &discordService{fake: fake, t: t}
}

type discordService struct {
	fake *discordtest.Server
	t    testing.TB
}

func (s *discordService) adapters(mem platform.Memory) []platform.Adapter {
	return s.adaptersWith(mem, discordToken)
}

func (s *discordService) adaptersWith(mem platform.Memory, token string) []platform.Adapter {
	a, err := discord.New(discord.Config{Token: token, APIURL: s.fake.APIURL(), RequestTimeout: 5 * time.Second, Memory: mem, Logger: quiet()})
	if err != nil {
		s.t.Fatal(err)
	}
	return []platform.Adapter{a}
}

func (s *discordService) Setup() Setup {
	return Setup{
		Platform: "discord", Display: "Discord",
		Adapters:      s.adapters,
		Owners:        []string{discordOwner.ID},
		Home:          platform.Address{Platform: "discord", Kind: platform.Group, Chat: s.fake.Home()},
		RefusalReason: "Create Public Threads",
	}
}

// Say writes in the thread's own channel: on Discord a thread is a channel.
func (s *discordService) Say(t testing.TB, at platform.Address, who Person, text string) {
	t.Helper()
	from := discordOwner
	if who == Stranger {
		from = discordStranger
	}
	channel := at.Chat
	if at.Thread != "" {
		channel = at.Thread
	}
	if _, err := s.fake.Say(channel, from, text); err != nil {
		t.Fatal(err)
	}
}

func (s *discordService) Shown() []Shown {
	parent := map[string]string{}
	for _, th := range s.fake.Threads() {
		parent[th.ID] = th.ParentID
	}
	var out []Shown
	for _, p := range s.fake.Shown() {
		at := platform.Address{Platform: "discord", Chat: p.ChannelID}
		if home, ok := parent[p.ChannelID]; ok {
			at.Chat, at.Thread = home, p.ChannelID
		}
		out = append(out, Shown{At: at, Text: p.Content})
	}
	return out
}

func (s *discordService) Command(line string) string { return line }

// Mention tries to ping everyone as well: the bot must not echo it.
func (s *discordService) Mention(text string) string { return "@everyone " + text }

// RefuseThreads takes the Create Public Threads permission away.
func (s *discordService) RefuseThreads() { s.fake.RefuseThreads(true) }

func (s *discordService) ThreadTries() int { return s.fake.CallCount(discordtest.RouteStartThread) }

// DropDuringHandoff drops the gateway connection right after the thread
// is created; the adapter resumes its session rather than identifying
// afresh.
func (s *discordService) DropDuringHandoff(t testing.TB) func(testing.TB) {
	s.fake.DropAfterNext(discordtest.RouteStartThread)
	return func(t testing.TB) {
		t.Helper()
		testutil.Eventually(t, testutil.Patience, func() bool { return s.fake.Resumes() >= 1 && s.fake.Connected() == 1 }, "the connection resumed")
		if n := s.fake.Identifies(); n != 1 {
			t.Errorf("identified %d times; a dropped connection resumes its session", n)
		}
	}
}

func (s *discordService) Closed() bool { return s.fake.Connected() == 0 }

// Forget expires the gateway session: the next start identifies afresh
// instead of resuming, so nothing is replayed.
func (s *discordService) Forget(testing.TB) func(testing.TB) {
	s.fake.ExpireSessions()
	return func(t testing.TB) {
		t.Helper()
		if n := s.fake.Identifies(); n != 2 {
			t.Errorf("%d IDENTIFYs, want 2: the expired session is not resumed", n)
		}
	}
}

func (s *discordService) Edits() int {
	n := 0
	for _, p := range s.fake.Posts() {
		if p.Route == discordtest.RouteEditMessage {
			n++
		}
	}
	return n
}

func (s *discordService) ThreadName(at platform.Address) string {
	for _, th := range s.fake.Threads() {
		if th.ID == at.Thread {
			return th.Name
		}
	}
	return ""
}

// Pings: what the bot's posts would notify by Discord's rules, and any
// post that did not tell Discord to notify no one.
func (s *discordService) Pings() []string {
	var out []string
	for _, p := range s.fake.Posts() {
		out = append(out, p.Pings...)
		if !strings.Contains(p.AllowedMentions, `"parse":[]`) {
			out = append(out, "allowed_mentions "+p.AllowedMentions)
		}
	}
	return out
}

func (s *discordService) TypingShownAt(at platform.Address) bool {
	channel := at.Chat
	if at.Thread != "" {
		channel = at.Thread
	}
	for _, c := range s.fake.Calls() {
		if c.Method == discordtest.RouteTyping && strings.Contains(c.Path, "/channels/"+channel+"/") {
			return true
		}
	}
	return false
}

func (s *discordService) RateLimitNextPost() {
	s.fake.FailNext(discordtest.RouteCreateMessage, 429, time.Second)
}

// StrangerSaysDirect: stranger n's DM channel with the bot.
func (s *discordService) StrangerSaysDirect(t testing.TB, n int, text string) platform.Address {
	t.Helper()
	who := discordtest.User{ID: "70" + strconv.Itoa(n), Username: "stranger" + strconv.Itoa(n)}
	dm := s.fake.AddDM(who)
	if _, err := s.fake.Say(dm, who, text); err != nil {
		t.Fatal(err)
	}
	return platform.Address{Platform: "discord", Kind: platform.DM, Chat: dm}
}

func (s *discordService) RefusedCredentials() (func(platform.Memory) []platform.Adapter, string) {
	const wrong = "MTIz.refused.token"
	return func(mem platform.Memory) []platform.Adapter { return s.adaptersWith(mem, wrong) }, wrong
}

// LoseNextPost loses the answer to the next message created: the handoff
// tries it again with the same enforced nonce.
func (s *discordService) LoseNextPost() { s.fake.LoseNext(discordtest.RouteCreateMessage) }
