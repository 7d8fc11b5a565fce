package gatewaytest

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/gateway"
	"github.com/baton-agent/baton/internal/gateway/control"
	"github.com/baton-agent/baton/internal/llm/llmtest"
	"github.com/baton-agent/baton/internal/platform"
	"github.com/baton-agent/baton/internal/store"
	"github.com/baton-agent/baton/internal/testutil"
)

// scenario is one behaviour; needs says what it asks of the platform.
type scenario struct {
	name  string
	needs func(Caps) string // why the platform cannot run it; "" if it can
	// hook, when set, says why the service cannot run it (a hook it
	// lacks); "" if it can.
	hook func(Service) string
	// before, when set, runs once the service's fake is up and before the
	// gateway starts.
	before func(t *testing.T, r *run)
	run    func(t *testing.T, sc *run)
}

var scenarios = []scenario{
	{name: "HandoffThereAndBack", needs: always, run: handoffThereAndBack},
	{name: "RefusedThreadLandsInHome", needs: needsRefusals, run: refusedThreadLandsInHome},
	{name: "StrangerNotAnswered", needs: always, run: strangerNotAnswered},
	{name: "HomeHeldByAnotherSession", needs: needsHandoffsHome, run: homeHeldByAnotherSession},
	{name: "ConnectionDroppedMidHandoff", needs: needsDropper, run: connectionDroppedMidHandoff},
	{name: "LongReplySplitInOrder", needs: always, run: longReplySplitInOrder},
	{name: "CatchUpAfterTheGatewayWasStopped", needs: needsCatchUp, run: catchUpAfterStop},
	{name: "ContinueOfferEndsTheFirstAnswer", needs: always, run: continueOfferEndsTheFirstAnswer(150 * time.Millisecond)},
	{name: "ContinueOfferEndsAnAnswerPostedWhole", needs: always, run: continueOfferEndsTheFirstAnswer(0)},
	{name: "HandoffFromTheWebChat", needs: always, hook: notTheWebChat, run: handoffFromTheWebChat},
	{name: "RateLimitedReplyShownOnce", needs: always, hook: has[RateLimiter]("the harness cannot make the service ask the bot to slow down"), run: rateLimitedReplyShownOnce},
	{name: "RepeatedMessageAnsweredOnce", needs: always, hook: has[Repeater]("the service never hands a message over twice"), run: repeatedMessageAnsweredOnce},
	{name: "StrangerInADirectChatGetsACode", needs: always, hook: strangerChats, run: strangerInADirectChatGetsACode},
	{name: "StrangersCannotFillThePairingDoor", needs: always, hook: strangerChats, run: strangersCannotFillThePairingDoor},
	{name: "PostRefusedForGoodDoesNotBlock", needs: always, hook: has[ForGoodRefuser]("the harness cannot make the service refuse a post for good"), run: postRefusedForGoodDoesNotBlock},
	{name: "RefusedCredentialsAreNotLive", needs: always, hook: has[CredentialRefuser]("the service has no credentials the harness can make it refuse"), before: withRefusedCredentials, run: refusedCredentialsAreNotLive},
	{name: "HandoffWithoutOptionalMethods", needs: always, hook: has[OptionalRefuser]("the service has no optional methods to do without"), before: withoutOptionalMethods, run: handoffWithoutOptionalMethods},
	{name: "LostAnswerShowsTheHandoffOnce", needs: always, hook: has[Loser]("the service has no key that makes a post tried again land once (a lost answer would show it twice)"), run: lostAnswerShowsTheHandoffOnce},
	{name: "FrozenStreamedReplyFinishedInPlace", needs: always, hook: has[EditCounter]("the service shows each reply whole: nothing is streamed by edits"), before: withShortGrace, run: frozenStreamedReplyFinishedInPlace},
	{name: "MessageAckedOnlyOnceStored", needs: always, hook: has[AckWaiter]("the service does not wait for the bot to acknowledge a message"), run: messageAckedOnlyOnceStored},
}

func always(Caps) string { return "" }

// has is the need for the Service to have the hook H.
func has[H any](why string) func(Service) string {
	return func(s Service) string {
		if _, ok := s.(H); !ok {
			return why
		}
		return ""
	}
}

func needsRefusals(c Caps) string {
	switch {
	case !c.Threads:
		return "the platform opens no threads"
	case !c.Refuses:
		return "the service never refuses a new thread (the web chat opens a conversation itself)"
	}
	return ""
}

// needsHandoffsHome: a handoff lands in the home chat only where the
// platform opens no threads or can refuse one.
func needsHandoffsHome(c Caps) string {
	if c.Threads && !c.Refuses {
		return "every handoff opens a new conversation there: the home chat is never handed a session"
	}
	return ""
}

func needsDropper(c Caps) string {
	if !c.Drops {
		return "the harness cannot drop the connection mid-handoff"
	}
	return ""
}

func needsCatchUp(c Caps) string {
	if !c.CatchesUp {
		return "the harness cannot make the service forget what it would hand over again after a stop"
	}
	return ""
}

func strangerChats(s Service) string {
	if s.Setup().Personal {
		return "on the owner's own account a stranger writes to the owner, not to baton: no pairing"
	}
	return has[StrangerChats]("the harness has no direct chat a stranger can open with the bot")(s)
}

func notTheWebChat(s Service) string {
	if s.Setup().Platform == webName {
		return "the handoff starts in the web chat: the platform under test"
	}
	return ""
}

// RunScenarios runs every scenario the harness's capabilities allow, each
// as a subtest with its own fake and gateway; the others are skipped with
// the reason.
func RunScenarios(t *testing.T, h Harness, start Start) {
	for _, s := range scenarios {
		t.Run(s.name, func(t *testing.T) {
			if why := s.needs(h.Caps()); why != "" {
				t.Skip(why)
			}
			svc := h.Start(t)
			if s.hook != nil {
				if why := s.hook(svc); why != "" {
					t.Skip(why)
				}
			}
			r := &run{svc: svc, setup: svc.Setup(), caps: h.Caps()}
			if s.before != nil {
				s.before(t, r)
			}
			build := r.setup.Adapters
			r.setup.Adapters = func(mem platform.Memory) []platform.Adapter {
				r.adapters = build(mem)
				return r.adapters
			}
			r.started(t, start(t, r.setup))
			s.run(t, r)
		})
	}
}

// run is one scenario's world.
type run struct {
	svc      Service
	setup    Setup
	gw       Gateway
	caps     Caps
	adapters []platform.Adapter // the running gateway's
	final    control.Progress   // the last handoff watched to its end
	secret   string             // credentials the service refuses
}

// attacher is a Service that reaches the bot through the running gateway
// (the web chat's page): it is told of each gateway started.
type attacher interface {
	attach(t testing.TB, gw Gateway)
}

func (r *run) started(t testing.TB, gw Gateway) {
	t.Helper()
	r.gw = gw
	if a, ok := r.svc.(attacher); ok {
		a.attach(t, gw)
	}
}

// again starts a new gateway on the stopped one's home and store.
func (r *run) again(t testing.TB) { r.started(t, r.gw.Again(t)) }

// at matches what the bot shows at a chat or thread containing sub.
func at(where platform.Address, sub string) func(Shown) bool {
	return func(s Shown) bool { return samePlace(s.At, where) && strings.Contains(s.Text, sub) }
}

func samePlace(a, b platform.Address) bool { return a.Chat == b.Chat && a.Thread == b.Thread }

// waitShown waits until the bot shows a message match accepts, and
// returns it with its index in Shown.
func (r *run) waitShown(t *testing.T, what string, match func(Shown) bool) (Shown, int) {
	t.Helper()
	return waitShown(t, what, r.svc.Shown, match)
}

// waitShown waits until shown (what a person sees now) has a message
// match accepts, and returns it with its index.
func waitShown(t testing.TB, what string, shown func() []Shown, match func(Shown) bool) (Shown, int) {
	t.Helper()
	var found Shown
	idx := -1
	if !testutil.Poll(testutil.Context(t, 0), func() bool {
		for i, s := range shown() {
			if match(s) {
				found, idx = s, i
				return true
			}
		}
		return false
	}) {
		t.Fatalf("the bot never showed %s; it showed %+v", what, shown())
	}
	return found, idx
}

// handOff hands the session off from the terminal to the platform and
// returns where it landed and the steps the terminal was shown.
func (r *run) handOff(t *testing.T, sessionID string) (platform.Address, []string) {
	t.Helper()
	return r.watch(t, r.request(t, sessionID))
}

func (r *run) request(t *testing.T, sessionID string) control.Handoff {
	t.Helper()
	h, err := r.gw.Control().RequestHandoff(testutil.Context(t, 0), control.HandoffRequest{SessionID: sessionID, From: "cli", To: r.setup.Platform})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// watch waits for the handoff to complete.
func (r *run) watch(t *testing.T, h control.Handoff) (platform.Address, []string) {
	t.Helper()
	ctx := testutil.Context(t, 0)
	var steps []string
	final, err := r.gw.Control().Watch(ctx, h.ID, func(p control.Progress) { steps = append(steps, p.Step) })
	if err != nil || final.State != "completed" {
		t.Fatalf("handoff %+v %v (steps %q)", final, err, steps)
	}
	r.final = final
	dest, err := platform.ParseKey(final.Destination)
	if err != nil {
		t.Fatalf("destination %q: %v", final.Destination, err)
	}
	return dest, steps
}

// settled waits until the session's transcript ends with answer and
// returns it: a reply streamed by edits is shown before its turn is stored.
func (r *run) settled(t *testing.T, sessionID, answer string) []store.Message {
	t.Helper()
	var msgs []store.Message
	testutil.Eventually(t, testutil.Patience, func() bool {
		msgs, _ = r.gw.Store().Transcript(context.Background(), sessionID)
		return len(msgs) > 0 && msgs[len(msgs)-1].Content == answer
	}, "the transcript to end with "+answer)
	return msgs
}

// continues checks that the owner saying text at where continues the
// session: the reply shows there and both are the transcript's end.
func (r *run) continues(t *testing.T, where platform.Address, sessionID, text, reply string) []store.Message {
	t.Helper()
	return r.continuesWith(t, where, sessionID, text, llmtest.Reply{Text: reply})
}

// continuesWith is continues with the reply as the model gives it.
func (r *run) continuesWith(t *testing.T, where platform.Address, sessionID, text string, reply llmtest.Reply) []store.Message {
	t.Helper()
	r.gw.Model().Push(reply)
	r.svc.Say(t, where, Owner, text)
	r.waitShown(t, "the answer to "+text, at(where, reply.Text))
	msgs := r.settled(t, sessionID, reply.Text)
	if m := msgs[len(msgs)-2]; m.Content != text || m.Platform != r.setup.Platform {
		t.Fatalf("what the owner said at %s went to %+v", where.Key(), m)
	}
	if b, err := r.gw.Store().LookupBinding(context.Background(), where.Key()); err != nil || b.SessionID != sessionID {
		t.Fatalf("%s is bound to %+v (%v), want session %s", where.Key(), b, err, sessionID)
	}
	return msgs
}

// Terminal → /handoff <platform>: a thread under the home chat where the
// platform opens threads, else the home chat itself; the agent's greeting
// there; the owner's reply continues the session with its whole
// transcript; /handoff cli typed there leaves it waiting for the terminal.
func handoffThereAndBack(t *testing.T, r *run) {
	sess := r.gw.TerminalSession(t)
	greeting := fmt.Sprintf("Hi on %s — we were booking the 9:40 train.", r.setup.Display)
	r.gw.Model().Push(llmtest.Reply{Text: greeting})
	dest, _ := r.handOff(t, sess.ID)
	home := r.setup.Home
	switch {
	case r.caps.Threads && (dest.Kind != platform.Thread || dest.Chat != home.Chat || dest.Thread == ""):
		t.Fatalf("landed at %s, want a thread under %s", dest.Key(), home.Key())
	case !r.caps.Threads && dest.Key() != home.Key():
		t.Fatalf("landed at %s, want the home chat %s", dest.Key(), home.Key())
	}
	r.waitShown(t, "the greeting", at(dest, greeting))
	if n, ok := r.svc.(ThreadNamer); ok && r.caps.Threads {
		titled, err := r.gw.Store().GetSession(context.Background(), sess.ID)
		if err != nil || titled.Title == "" {
			t.Fatalf("the session's title: %+v %v", titled, err)
		}
		if name := n.ThreadName(dest); !strings.Contains(name, titled.Title) {
			t.Errorf("the thread is titled %q, want the session's title %q", name, titled.Title)
		}
	}

	if l, ok := r.svc.(Linker); ok {
		if want := l.WantLink(dest); r.final.Link != want {
			t.Errorf("the terminal was given the link %q, want %q", r.final.Link, want)
		}
	}

	// A reply slow enough (four words, 150 ms apart) for typing to show.
	msgs := r.continuesWith(t, dest, sess.ID, "book it please", llmtest.Reply{Text: "Done, it is booked.", Delay: 150 * time.Millisecond})
	if ty, ok := r.svc.(Typist); ok && !ty.TypingShownAt(dest) {
		t.Errorf("no typing shown at %s while the turn ran", dest.Key())
	}
	if m, ok := r.svc.(Menu); ok && !strings.Contains(m.CommandMenu(), "handoff") {
		t.Errorf("the command menu was not published: %q", m.CommandMenu())
	}
	if msgs[0].Content != "plan a trip to Lisbon" {
		t.Errorf("the transcript lost its start: %+v", msgs[0])
	}
	reqs := r.gw.Model().Requests()
	body, _ := json.Marshal(reqs[len(reqs)-1])
	for _, want := range []string{"plan a trip to Lisbon", "Noted: the 9:40 train.", greeting, "book it please"} {
		if !strings.Contains(string(body), want) {
			t.Errorf("the model was not shown %q", want)
		}
	}

	r.svc.Say(t, dest, Owner, r.svc.Command("/handoff cli"))
	r.waitShown(t, "the handoff answer", at(dest, "baton resume"))
	waiting, err := r.gw.Store().PendingHandoffs(context.Background(), gateway.TerminalPlatform)
	if err != nil || len(waiting) != 1 || waiting[0].SessionID != sess.ID || waiting[0].FromPlatform != r.setup.Platform {
		t.Fatalf("waiting for the terminal: %+v %v", waiting, err)
	}
	// The conversation stayed in its thread: in the home chat only the
	// message the thread hangs from, where threads hang from one.
	if dest.Key() != home.Key() {
		var atHome []string
		for _, s := range r.svc.Shown() {
			if samePlace(s.At, home) {
				atHome = append(atHome, s.Text)
			}
		}
		if want := r.roots(); len(atHome) != want || (want == 1 && !strings.Contains(atHome[0], "Trip planning")) {
			t.Errorf("shown in the home chat: %q; want %d thread root(s) alone", atHome, want)
		}
	}
	r.pingsNoOne(t)
}

// pingsNoOne checks that nothing the bot posted could notify anyone.
func (r *run) pingsNoOne(t *testing.T) {
	t.Helper()
	if p, ok := r.svc.(Pinger); ok {
		if pings := p.Pings(); len(pings) > 0 {
			t.Errorf("the bot's posts could notify %q", pings)
		}
	}
}

// roots is how many thread roots a handoff to a thread posts in the home
// chat.
func (r *run) roots() int {
	if r.caps.ThreadRoot {
		return 1
	}
	return 0
}

// rootsShown counts the thread roots the bot showed in the home chat.
func (r *run) rootsShown() int {
	return r.count(at(r.setup.Home, "Trip planning"))
}

// The service refuses the new thread: the handoff lands in the home chat
// and completes; the terminal and the chat are told why, the notice
// before the greeting; the owner's next message there continues the
// session; the refusal is not retried.
func refusedThreadLandsInHome(t *testing.T, r *run) {
	r.svc.RefuseThreads()
	sess := r.gw.TerminalSession(t)
	r.gw.Model().Push(llmtest.Reply{Text: "Landed in the home chat."})
	dest, steps := r.handOff(t, sess.ID)
	home := r.setup.Home
	if dest.Key() != home.Key() {
		t.Fatalf("landed at %s, want the home chat %s", dest.Key(), home.Key())
	}
	if told := strings.Join(steps, "\n"); !strings.Contains(told, "could not open a thread in "+r.setup.Display) || !strings.Contains(told, r.setup.RefusalReason) {
		t.Errorf("the terminal was not told: steps %q", steps)
	}
	notice, ni := r.waitShown(t, "the notice", at(home, "No new thread could be opened"))
	if !strings.Contains(notice.Text, r.setup.RefusalReason) {
		t.Errorf("the notice does not say what to fix (%q): %q", r.setup.RefusalReason, notice.Text)
	}
	if _, gi := r.waitShown(t, "the greeting", at(home, "Landed in the home chat.")); ni > gi {
		t.Errorf("the notice came after the greeting: %+v", r.svc.Shown())
	}
	r.continues(t, home, sess.ID, "hello again", "Still the same session.")
	if c, ok := r.svc.(ThreadCounter); ok {
		if n := c.ThreadTries(); n != 1 {
			t.Errorf("a new thread was asked for %d times; a refusal is not retried", n)
		}
	}
}

// People other than the owner write in the home chat and where the
// session went: they get no turn, nothing is shown to them, and nothing
// they said reaches the session. On the owner's own account, what the
// owner writes to a friend is not baton's either.
func strangerNotAnswered(t *testing.T, r *run) {
	sess := r.gw.TerminalSession(t)
	r.gw.Model().Push(llmtest.Reply{Text: "Greetings."})
	dest, _ := r.handOff(t, sess.ID)
	r.waitShown(t, "the greeting", at(dest, "Greetings."))

	shownBefore, turnsBefore := len(r.svc.Shown()), len(r.gw.Model().Requests())
	r.svc.Say(t, r.setup.Home, Stranger, "what is the owner up to?")
	r.svc.Say(t, dest, Stranger, r.svc.Mention("tell me the plan"))
	r.svc.Say(t, dest, Stranger, r.svc.Command("/handoff cli"))
	if p, ok := r.svc.(PersonalAccount); ok {
		p.OwnerWritesElsewhere(t, "see you at eight")
	}
	// A marker from the owner after them: once it is answered, they were
	// passed over.
	r.gw.Model().Push(llmtest.Reply{Text: "Marker answered."})
	r.svc.Say(t, dest, Owner, "marker")
	r.waitShown(t, "the marker's answer", at(dest, "Marker answered."))
	if after := r.svc.Shown()[shownBefore:]; len(after) != 1 {
		t.Errorf("%d messages shown after the strangers and the marker, want only the marker's answer: %+v", len(after), after)
	}
	if n := len(r.gw.Model().Requests()) - turnsBefore; n != 1 {
		t.Errorf("%d turns run, want only the marker's", n)
	}
	for _, m := range r.settled(t, sess.ID, "Marker answered.") {
		if strings.Contains(m.Content, "owner up to") || strings.Contains(m.Content, "tell me the plan") || strings.Contains(m.Content, "see you at eight") {
			t.Errorf("a stranger's message reached the session: %q", m.Content)
		}
	}
	for _, req := range r.gw.Model().Requests() {
		if b, _ := json.Marshal(req); strings.Contains(string(b), "owner up to") || strings.Contains(string(b), "tell me the plan") {
			t.Errorf("the model was asked about a stranger's message")
		}
	}
	if dest.Key() != r.setup.Home.Key() {
		if b, err := r.gw.Store().LookupBinding(context.Background(), r.setup.Home.Key()); err == nil {
			t.Errorf("the stranger's message in the home chat started a session: %+v", b)
		}
	}
	if waiting, _ := r.gw.Store().PendingHandoffs(context.Background(), gateway.TerminalPlatform); len(waiting) != 0 {
		t.Errorf("a stranger's /handoff moved the session: %+v", waiting)
	}
}

// The home chat holds a session of its own when a handoff lands there
// (the platform opens no thread, or refuses it): that session is kept,
// and the first message, just before the greeting, names the session now
// active and how to go back; /resume brings it back without disturbing
// the handed-off session's way to the terminal.
func homeHeldByAnotherSession(t *testing.T, r *run) {
	ctx := context.Background()
	home := r.setup.Home
	r.gw.Model().Push(llmtest.Reply{Text: "Morning chat answer."})
	r.svc.Say(t, home, Owner, "good morning")
	r.waitShown(t, "the morning answer", at(home, "Morning chat answer."))
	b, err := r.gw.Store().LookupBinding(ctx, home.Key())
	if err != nil {
		t.Fatal(err)
	}
	old := b.SessionID

	r.svc.RefuseThreads()
	sess := r.gw.TerminalSession(t)
	r.gw.Model().Push(llmtest.Reply{Text: "Handed off."})
	if dest, _ := r.handOff(t, sess.ID); dest.Key() != home.Key() {
		t.Fatalf("landed at %s, want the home chat %s", dest.Key(), home.Key())
	}
	notice, ni := r.waitShown(t, "the notice", at(home, "/resume "+old[:8]))
	if !strings.Contains(notice.Text, "Trip planning") {
		t.Errorf("the notice does not name the session now active: %q", notice.Text)
	}
	if _, gi := r.waitShown(t, "the greeting", at(home, "Handed off.")); gi != ni+1 {
		t.Errorf("the notice does not come just before the greeting: %+v", r.svc.Shown())
	}
	if s, err := r.gw.Store().GetSession(ctx, old); err != nil || !s.Open() {
		t.Fatalf("the home chat's session was ended or lost: %+v %v", s, err)
	}
	r.continues(t, home, sess.ID, "book it please", "Done, it is booked.")

	r.svc.Say(t, home, Owner, r.svc.Command("/handoff cli"))
	r.waitShown(t, "the handoff answer", at(home, "baton resume"))
	r.svc.Say(t, home, Owner, r.svc.Command("/resume "+old[:8]))
	r.waitShown(t, "the resume answer", at(home, "now continues session "+old[:8]))
	if b, _ := r.gw.Store().LookupBinding(ctx, home.Key()); b.SessionID != old {
		t.Fatalf("/resume did not rebind the home chat: %s", b.SessionID)
	}
	if h, _ := r.gw.Store().HandoffState(ctx, sess.ID); h.State != store.HandoffPending || h.Platform != gateway.TerminalPlatform {
		t.Errorf("resuming the old session here disturbed the handoff to the terminal: %+v", h)
	}
}

// The connection drops in the middle of a handoff: the adapter comes
// back, the handoff completes, the greeting is shown once, and what the
// owner says next continues the session, once.
func connectionDroppedMidHandoff(t *testing.T, r *run) {
	sess := r.gw.TerminalSession(t)
	drop := r.svc.(Dropper).DropDuringHandoff(t)
	// A slow greeting: the drop may come while the model writes it.
	const greeting = "Greetings from a shaky connection."
	r.gw.Model().Push(llmtest.Reply{Text: greeting, Delay: 20 * time.Millisecond})
	h := r.request(t, sess.ID)
	drop(t)
	dest, _ := r.watch(t, h)
	r.waitShown(t, "the greeting", at(dest, greeting))
	r.waitLive(t)

	r.continues(t, dest, sess.ID, "are you still there?", "Answer after the reconnect.")
	r.waitAllSent(t)
	for _, s := range r.svc.Shown() {
		if samePlace(s.At, dest) && !strings.Contains(s.Text, greeting) && !strings.Contains(s.Text, "Answer after the reconnect.") {
			t.Errorf("shown besides the greeting and the answer: %q", s.Text)
		}
	}
	for _, said := range []string{greeting, "Answer after the reconnect."} {
		if n := r.count(at(dest, said)); n != 1 {
			t.Errorf("%q was shown %d times, want once", said, n)
		}
	}
	if n, want := r.rootsShown(), r.roots(); dest.Key() != r.setup.Home.Key() && n != want {
		t.Errorf("%d thread roots in the home chat, want %d", n, want)
	}
	asked := 0
	for _, m := range r.settled(t, sess.ID, "Answer after the reconnect.") {
		if m.Content == "are you still there?" {
			asked++
		}
	}
	if asked != 1 {
		t.Errorf("the owner's message is in the transcript %d times, want once", asked)
	}
}

func (r *run) count(match func(Shown) bool) int {
	n := 0
	for _, s := range r.svc.Shown() {
		if match(s) {
			n++
		}
	}
	return n
}

// waitLive waits until the gateway reports the platform live.
func (r *run) waitLive(t *testing.T) {
	t.Helper()
	r.waitPlatform(t, "live again", func(p control.Platform) bool { return p.Live })
}

// waitPlatform waits until the gateway reports the platform in a state
// cond accepts, and returns it.
func (r *run) waitPlatform(t *testing.T, what string, cond func(control.Platform) bool) control.Platform {
	t.Helper()
	var last control.Platform
	if !testutil.Poll(testutil.Context(t, 0), func() bool {
		s, err := r.gw.Control().Status(context.Background())
		if err != nil {
			return false
		}
		last, _ = s.Platform(r.setup.Platform)
		return cond(last)
	}) {
		t.Fatalf("%s never %s; last status %+v", r.setup.Display, what, last)
	}
	return last
}

// waitAllSent waits until nothing is left to send.
func (r *run) waitAllSent(t *testing.T) {
	t.Helper()
	testutil.Eventually(t, testutil.Patience, func() bool {
		pending, err := r.gw.Store().PendingDeliveries(context.Background(), "", 0)
		return err == nil && len(pending) == 0
	}, "every delivery sent")
}

// A reply longer than the service takes in one message arrives split, in
// order, every part within the service's limit and where the session is.
func longReplySplitInOrder(t *testing.T, r *run) {
	var limit platform.Limiter
	for _, a := range r.adapters {
		if l, ok := a.(platform.Limiter); ok {
			limit = l
		}
	}
	if limit == nil {
		t.Skip("the service takes messages of any length")
	}
	sess := r.gw.TerminalSession(t)
	r.gw.Model().Push(llmtest.Reply{Text: "Ready for the story."})
	dest, _ := r.handOff(t, sess.ID)
	r.waitShown(t, "the greeting", at(dest, "Ready for the story."))

	var long strings.Builder
	for i := 0; limit.MessageLen(long.String()) < 2*limit.MaxMessageLen()+limit.MaxMessageLen()/2; i++ {
		fmt.Fprintf(&long, "Paragraph %d: the quick brown fox jumps over the lazy dog, again and again, 🦊 and 🐶 too.\n\n", i)
	}
	story := strings.TrimSpace(long.String())
	before := len(r.svc.Shown())
	r.gw.Model().Push(llmtest.Reply{Text: story})
	r.svc.Say(t, dest, Owner, "tell me a long story")
	r.waitShown(t, "the story's end", at(dest, fmt.Sprintf("Paragraph %d:", strings.Count(story, "Paragraph ")-1)))
	r.waitAllSent(t)
	parts := r.svc.Shown()[before:]
	if len(parts) < 3 {
		t.Fatalf("a reply of %d (limit %d) came in %d parts", limit.MessageLen(story), limit.MaxMessageLen(), len(parts))
	}
	var joined []string
	for _, p := range parts {
		if n := limit.MessageLen(p.Text); n > limit.MaxMessageLen() || !samePlace(p.At, dest) {
			t.Errorf("a part of %d (limit %d) at %s", n, limit.MaxMessageLen(), p.At.Key())
		}
		joined = append(joined, p.Text)
	}
	if strings.Join(strings.Fields(strings.Join(joined, " ")), " ") != strings.Join(strings.Fields(story), " ") {
		t.Errorf("the parts do not rejoin to the reply in order")
	}
}

// The gateway was stopped longer than the service keeps its events: when
// it starts again, what the owner wrote meanwhile in the home chat, where
// they had spoken to baton, is fetched from the service's history (where
// the last run left off is the platform's memory in the store), answered
// once each, in order; what was answered before the stop is not answered
// again, and the transcript holds each message once.
func catchUpAfterStop(t *testing.T, r *run) {
	c := r.svc.(CatchUp)
	home := r.setup.Home
	r.svc.Say(t, home, Owner, "before the stop")
	r.waitShown(t, "the answer before the stop", at(home, "echo: before the stop"))
	r.waitAllSent(t)
	r.gw.Stop()
	testutil.Eventually(t, testutil.Patience, c.Closed, "the stopped gateway's connection to close")

	for _, text := range []string{"while baton is stopped", "and once more"} {
		r.svc.Say(t, home, Owner, text)
	}
	after := c.Forget(t)
	r.again(t)
	r.waitShown(t, "the answer to the last message written while stopped", at(home, "echo: and once more"))
	r.waitAllSent(t)
	after(t)
	var answers []string
	for _, s := range r.svc.Shown() {
		if samePlace(s.At, home) && strings.HasPrefix(s.Text, "echo: ") {
			answers = append(answers, s.Text)
		}
	}
	want := []string{"echo: before the stop", "echo: while baton is stopped", "echo: and once more"}
	if strings.Join(answers, "|") != strings.Join(want, "|") {
		t.Errorf("answers %q, want %q", answers, want)
	}
	b, err := r.gw.Store().LookupBinding(context.Background(), home.Key())
	if err != nil {
		t.Fatal(err)
	}
	var said []string
	for _, m := range r.settled(t, b.SessionID, "echo: and once more") {
		said = append(said, m.Content)
	}
	if got, want := strings.Join(said, "|"), "before the stop|echo: before the stop|while baton is stopped|echo: while baton is stopped|and once more|echo: and once more"; got != want {
		t.Errorf("transcript %q, want %q", got, want)
	}
}

// The first answer in the home chat, which holds no session while the
// terminal holds one, ends with the offer to continue that session, in the
// same message, whether the model wrote it slowly (delay between words)
// or at once; where the service streams by edits, a slow answer grew by
// them and the last edit brought the offer, and one given at once was
// posted whole; nothing is posted after it.
func continueOfferEndsTheFirstAnswer(delay time.Duration) func(t *testing.T, r *run) {
	return func(t *testing.T, r *run) { continueOffer(t, r, delay) }
}

func continueOffer(t *testing.T, r *run, delay time.Duration) {
	r.gw.TerminalSession(t)
	home := r.setup.Home
	const answer = "Hello there, one word at a time."
	r.gw.Model().Push(llmtest.Reply{Text: answer, Delay: delay})
	r.svc.Say(t, home, Owner, "hi")
	r.waitShown(t, "the offer", func(s Shown) bool {
		return samePlace(s.At, home) && strings.HasSuffix(s.Text, " — /continue to pick it up here.")
	})
	r.waitAllSent(t)
	var shown []string
	for _, s := range r.svc.Shown() {
		if samePlace(s.At, home) {
			shown = append(shown, s.Text)
		}
	}
	if len(shown) != 1 || !strings.HasPrefix(shown[0], answer+"\n\nYou were working on «Trip planning") {
		t.Errorf("the bot showed %q; want one message, the answer ending with the offer", shown)
	}
	if e, ok := r.svc.(EditCounter); ok && (e.Edits() > 0) != (delay > 0) {
		t.Errorf("the answer was edited %d times; written with %v between words", e.Edits(), delay)
	}
}
