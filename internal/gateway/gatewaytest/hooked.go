package gatewaytest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/gateway/control"
	"github.com/baton-agent/baton/internal/llm/llmtest"
	"github.com/baton-agent/baton/internal/platform"
	"github.com/baton-agent/baton/internal/store"
	"github.com/baton-agent/baton/internal/testutil"
)

// The scenarios below need something only some services do (a hook of
// the Service); the others skip them saying why.

// /handoff <platform> typed in the web chat moves the session there; a
// handoff left waiting for the terminal is replaced by it, and the web
// chat hears where the conversation went.
func handoffFromTheWebChat(t *testing.T, r *run) {
	ctx := context.Background()
	pg := openPage(t, r.gw.WebURL())
	home := webHome()
	r.gw.Model().Push(llmtest.Reply{Text: "Noted from the web."})
	pg.say(t, home, "note this down")
	pg.waitShown(t, "the answer in the web chat", at(home, "Noted from the web."))
	b, err := r.gw.Store().LookupBinding(ctx, home.Key())
	if err != nil {
		t.Fatal(err)
	}

	pg.say(t, home, "/handoff cli")
	pg.waitShown(t, "the handoff left waiting for the terminal", at(home, "Handing off to the terminal"))
	waiting, err := r.gw.Store().HandoffState(ctx, b.SessionID)
	if err != nil {
		t.Fatal(err)
	}

	greeting := "Here on " + r.setup.Display + " now."
	r.gw.Model().Push(llmtest.Reply{Text: greeting})
	pg.say(t, home, "/handoff "+r.setup.Platform)
	pg.waitShown(t, "the handoff's answer", at(home, "Handing off to "+r.setup.Display))
	shown, _ := r.waitShown(t, "the greeting", func(s Shown) bool { return strings.Contains(s.Text, greeting) })
	switch {
	case r.caps.Threads && (shown.At.Chat != r.setup.Home.Chat || shown.At.Thread == ""):
		t.Errorf("the greeting is at %s, want a new thread under %s", shown.At.Key(), r.setup.Home.Key())
	case !r.caps.Threads && !samePlace(shown.At, r.setup.Home):
		t.Errorf("the greeting is at %s, want the home chat %s", shown.At.Key(), r.setup.Home.Key())
	}
	h, err := r.gw.Store().HandoffState(ctx, b.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	final, err := r.gw.Control().Watch(testutil.Context(t, 0), h.ID, nil)
	if err != nil || final.State != "completed" || h.FromPlatform != "web" || h.Platform != r.setup.Platform {
		t.Fatalf("handoff %+v, final %+v, %v", h, final, err)
	}
	pg.waitShown(t, "the outcome", at(home, "now continues in "+r.setup.Display))
	old, err := r.gw.Store().GetHandoff(ctx, waiting.ID)
	if err != nil || waiting.Platform != "cli" || old.State != store.HandoffFailed || !strings.Contains(old.Error, "replaced by a handoff to "+r.setup.Platform) {
		t.Errorf("the handoff that waited for the terminal: %+v (%v)", old, err)
	}
}

// The service asks the bot to slow down when it posts a reply: the reply
// is shown later, once.
func rateLimitedReplyShownOnce(t *testing.T, r *run) {
	sess := r.gw.TerminalSession(t)
	r.gw.Model().Push(llmtest.Reply{Text: "Greetings."})
	dest, _ := r.handOff(t, sess.ID)
	r.waitShown(t, "the greeting", at(dest, "Greetings."))

	r.svc.(RateLimiter).RateLimitNextPost()
	const reply = "Rate-limited but delivered."
	r.continues(t, dest, sess.ID, "and now?", reply)
	r.waitAllSent(t)
	if n := r.count(at(dest, reply)); n != 1 {
		t.Errorf("the rate-limited reply was shown %d times, want once", n)
	}
}

// A message the service hands over again (its answer to the bot lost) is
// answered once and is in the transcript once.
func repeatedMessageAnsweredOnce(t *testing.T, r *run) {
	sess := r.gw.TerminalSession(t)
	r.gw.Model().Push(llmtest.Reply{Text: "Greetings."})
	dest, _ := r.handOff(t, sess.ID)
	r.waitShown(t, "the greeting", at(dest, "Greetings."))

	const answer = "Answer to the repeated message."
	r.gw.Model().Push(llmtest.Reply{Text: answer})
	again := r.svc.(Repeater).SayRepeated(t, dest, "repeated message")
	r.waitShown(t, "the answer to the repeated message", at(dest, answer))
	again(t)
	// A marker after the repeats: once it is answered, the repeats were
	// handled (or dropped) before it.
	r.continues(t, dest, sess.ID, "marker", "Marker answered.")
	if n := r.count(at(dest, answer)); n != 1 {
		t.Errorf("the repeated message was answered %d times, want once", n)
	}
	n := 0
	for _, m := range r.settled(t, sess.ID, "Marker answered.") {
		if m.Content == "repeated message" {
			n++
		}
	}
	if n != 1 {
		t.Errorf("the repeated message is in the transcript %d times, want once", n)
	}
}

const codeGiven = "Your pairing code is"

// A stranger's /start in a direct chat with the bot gets a pairing code,
// there and nowhere else.
func strangerInADirectChatGetsACode(t *testing.T, r *run) {
	before := len(r.svc.Shown())
	dm := r.svc.(StrangerChats).StrangerSaysDirect(t, 0, "/start")
	r.waitShown(t, "the pairing code", at(dm, codeGiven))
	r.waitAllSent(t)
	for _, s := range r.svc.Shown()[before:] {
		if !samePlace(s.At, dm) {
			t.Errorf("the bot answered the stranger elsewhere: %+v", s)
		}
	}
}

// Strangers holding every waiting pairing place do not keep another out:
// the next one gets a code, the oldest code makes room, and its holder is
// not handed a new one at once.
func strangersCannotFillThePairingDoor(t *testing.T, r *run) {
	sc := r.svc.(StrangerChats)
	dms := map[int]platform.Address{}
	for n := range 3 {
		dms[n] = sc.StrangerSaysDirect(t, n, "/start")
		r.waitShown(t, fmt.Sprintf("a pairing code to stranger %d", n), at(dms[n], codeGiven))
	}
	dms[3] = sc.StrangerSaysDirect(t, 3, "hi, it's me")
	r.waitShown(t, "a pairing code to the fourth", at(dms[3], codeGiven))
	sc.StrangerSaysDirect(t, 0, "/start")
	r.waitShown(t, "the first stranger told their code ran out", at(dms[0], "ran out without an approval"))
	if n := r.count(at(dms[0], codeGiven)); n != 1 {
		t.Errorf("the first stranger was given %d codes, want 1", n)
	}
}

// A post the service refuses for good is abandoned, not tried forever,
// and does not hold back the next reply; both replies are in the
// transcript.
func postRefusedForGoodDoesNotBlock(t *testing.T, r *run) {
	ctx := context.Background()
	home := r.setup.Home
	const refused = "This one is refused."
	r.svc.(ForGoodRefuser).RefuseForGood(refused)
	r.gw.Model().Push(llmtest.Reply{Text: refused}, llmtest.Reply{Text: "This one arrives."})
	r.svc.Say(t, home, Owner, "first")
	r.svc.Say(t, home, Owner, "second")
	r.waitShown(t, "the second reply", at(home, "This one arrives."))
	if n := r.count(at(home, "refused")); n != 0 {
		t.Errorf("the refused reply was shown %d times", n)
	}
	b, err := r.gw.Store().LookupBinding(ctx, home.Key())
	if err != nil {
		t.Fatal(err)
	}
	msgs := r.settled(t, b.SessionID, "This one arrives.")
	r.waitAllSent(t)
	var said []string
	for _, m := range msgs {
		said = append(said, m.Content)
	}
	if got, want := strings.Join(said, "|"), "first|"+refused+"|second|This one arrives."; got != want {
		t.Errorf("transcript %q, want %q", got, want)
	}
}

// withRefusedCredentials runs the gateway with credentials the service
// refuses.
func withRefusedCredentials(t *testing.T, r *run) {
	adapters, secret := r.svc.(CredentialRefuser).RefusedCredentials()
	r.setup.Adapters, r.setup.NotLive, r.secret = adapters, true, secret
}

// A platform whose credentials the service refuses is never live: its
// error shows in the status, without the secret, and handoffs to it are
// refused.
func refusedCredentialsAreNotLive(t *testing.T, r *run) {
	p := r.waitPlatform(t, "reported an error", func(p control.Platform) bool { return p.Live || p.Error != "" })
	if p.Live {
		t.Fatalf("a platform with refused credentials is reported live: %+v", p)
	}
	if strings.Contains(p.Error, r.secret) {
		t.Errorf("the secret leaked into the status: %q", p.Error)
	}
	sess := r.gw.TerminalSession(t)
	_, err := r.gw.Control().RequestHandoff(testutil.Context(t, 0), control.HandoffRequest{SessionID: sess.ID, From: "cli", To: r.setup.Platform})
	if !errors.Is(err, control.ErrNotLive) {
		t.Fatalf("handoff to a platform that is not live: %v", err)
	}
}

func withoutOptionalMethods(t *testing.T, r *run) { r.svc.(OptionalRefuser).RefuseOptional() }

// Against a service that answers none of its optional methods (threads,
// typing, the command menu, edits), a handoff lands in the home chat and
// completes, and the owner's reply there continues the session.
func handoffWithoutOptionalMethods(t *testing.T, r *run) {
	sess := r.gw.TerminalSession(t)
	r.gw.Model().Push(llmtest.Reply{Text: "Landed in the home chat."})
	dest, _ := r.handOff(t, sess.ID)
	if dest.Key() != r.setup.Home.Key() {
		t.Fatalf("landed at %s, want the home chat %s", dest.Key(), r.setup.Home.Key())
	}
	r.waitShown(t, "the greeting", at(dest, "Landed in the home chat."))
	r.continuesWith(t, dest, sess.ID, "hello again", llmtest.Reply{Text: "Still the same session.", Delay: 50 * time.Millisecond})
}

// The service carries out the handoff's first post (a thread's root, or
// the greeting) but its answer is lost: tried again under the same key,
// it lands once, so one root and one greeting show.
func lostAnswerShowsTheHandoffOnce(t *testing.T, r *run) {
	sess := r.gw.TerminalSession(t)
	r.svc.(Loser).LoseNextPost()
	const greeting = "Hello once."
	r.gw.Model().Push(llmtest.Reply{Text: greeting})
	dest, _ := r.handOff(t, sess.ID)
	r.waitShown(t, "the greeting", at(dest, greeting))
	r.waitAllSent(t)
	if n := r.count(func(s Shown) bool { return strings.Contains(s.Text, greeting) }); n != 1 {
		t.Errorf("the greeting is shown %d times, want once, at %s: %+v", n, dest.Key(), r.svc.Shown())
	}
	if n, want := r.rootsShown(), r.roots(); dest.Key() != r.setup.Home.Key() && n != want {
		t.Errorf("the home chat shows %d thread roots, want %d", n, want)
	}
}

// A message is acknowledged to the service only once it is stored: while
// the store refuses the write, nothing is acknowledged and the service
// hands the message over again; once stored, it is acknowledged and
// answered once.
func messageAckedOnlyOnceStored(t *testing.T, r *run) {
	if testing.Short() {
		t.Skip("waits out SQLite's busy timeout")
	}
	home := r.setup.Home
	release := r.gw.HoldWrites(t)
	const answer = "Stored at last."
	r.gw.Model().Push(llmtest.Reply{Text: answer})
	acked, deliveries := r.svc.(AckWaiter).SayUnacked(t, home, "remember this")
	// The store gives up after its busy timeout; the message, never
	// acknowledged, comes again.
	testutil.Eventually(t, 2*testutil.Patience, func() bool { return deliveries() >= 2 }, "the message handed over again")
	if acked() {
		t.Fatal("the message was acknowledged although it was never stored")
	}
	release()

	r.waitShown(t, "the answer", at(home, answer))
	testutil.Eventually(t, testutil.Patience, acked, "the stored message acknowledged")
	r.waitAllSent(t)
	b, err := r.gw.Store().LookupBinding(context.Background(), home.Key())
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, m := range r.settled(t, b.SessionID, answer) {
		if m.Content == "remember this" {
			n++
		}
	}
	if n != 1 {
		t.Errorf("the message is in the transcript %d times, want once", n)
	}
	if c := r.count(at(home, answer)); c != 1 {
		t.Errorf("answered %d times, want once", c)
	}
}

// withShortGrace: a stop waits little for the turn in flight, so it is
// cut off well before the stream's next edit (Matrix paces them 2 s
// apart) and no edit is cut off mid-request.
func withShortGrace(t *testing.T, r *run) { r.setup.Grace = 300 * time.Millisecond }

// A reply half streamed by edits when the gateway stopped is finished in
// place at the next start: the chat shows the one message, edited into
// the answer, not the half-written one and the answer again below it.
func frozenStreamedReplyFinishedInPlace(t *testing.T, r *run) {
	home := r.setup.Home
	long := make([]string, 80)
	for i := range long {
		long[i] = fmt.Sprintf("word%03d", i)
	}
	// 4 s of writing: past the stop's grace.
	r.gw.Model().Push(llmtest.Reply{Text: "slowly: " + strings.Join(long, " "), Delay: 50 * time.Millisecond})
	r.svc.Say(t, home, Owner, "tell me at length")
	r.waitShown(t, "the reply's first words", at(home, "slowly: word000"))
	r.gw.Stop()

	// The next start writes the answer anew (the gateway's own tests'
	// model then echoes).
	r.again(t)
	const answer = "echo: tell me at length"
	r.waitShown(t, "the answer", at(home, answer))
	r.waitAllSent(t)
	var shown []string
	for _, s := range r.svc.Shown() {
		if samePlace(s.At, home) {
			shown = append(shown, s.Text)
		}
	}
	if len(shown) != 1 || shown[0] != answer {
		t.Errorf("the chat shows %q; want the first message edited into the answer, alone", shown)
	}
}
