package gateway_test

import (
	"strings"
	"testing"

	"github.com/baton-agent/baton/internal/llm/llmtest"
	"github.com/baton-agent/baton/internal/platform/discord/discordtest"
	"github.com/baton-agent/baton/internal/platform/matrix/matrixtest"
)

// A handoff to Matrix whose thread root the homeserver took, with the
// answer lost on the way back: the root is tried again under the same
// transaction id (derived from the handoff), so the room shows one root,
// and the first message follows in its thread. (A lost answer to the
// first message itself is the adapter's conformance case LoseSend.)
func TestMatrixHandoffOpensOneThreadWhenTheAnswerIsLost(t *testing.T) {
	m := newMatrixSetup(t)
	r := m.rig(t, nil)
	sess := r.terminalSession(t)
	m.proxy.LoseNext("send") // the thread root
	r.model.Push(llmtest.Reply{Text: "Hello once on Matrix."})
	final := handOff(t, r, sess.ID, "matrix")

	greeting := func(x matrixtest.Message) bool { return strings.Contains(x.Body, "Hello once on Matrix.") }
	root := func(x matrixtest.Message) bool { return x.Thread == "" && strings.Contains(x.Body, "Trip planning") }
	msgs := m.shown(t, "the first message", func(msgs []matrixtest.Message) bool { return len(from(msgs, m.Bot.ID, greeting)) > 0 })
	if n := len(from(msgs, m.Bot.ID, root)); n != 1 {
		t.Errorf("the room shows %d thread roots, want 1", n)
	}
	if got := from(msgs, m.Bot.ID, greeting); len(got) != 1 || !strings.HasSuffix(final.Destination, ":"+got[0].Thread) {
		t.Errorf("the first message is shown %d times (%+v), want once in the thread %s", len(got), got, final.Destination)
	}
	waitAllSent(t, r.st)
}

// A handoff to Discord whose first message Discord made, with the answer
// lost on the way back: it is tried again with the same enforced nonce,
// and Discord gives back the message it made, so it shows once.
func TestDiscordHandoffPostsOnceWhenTheAnswerIsLost(t *testing.T) {
	fake := discordtest.New(t, discordToken)
	r := discordRig(t, fake)
	sess := r.terminalSession(t)
	fake.LoseNext(discordtest.RouteCreateMessage)
	r.model.Push(llmtest.Reply{Text: "Hello once on Discord."})
	handOff(t, r, sess.ID, "discord")
	thread := fake.Threads()[0].ID
	shown(t, fake, "the first message", in(thread, "Hello once on Discord."))
	waitAllSent(t, r.st)
	n := 0
	for _, p := range fake.Shown() {
		if strings.Contains(p.Content, "Hello once on Discord.") {
			n++
		}
	}
	if n != 1 {
		t.Errorf("the first message is shown %d times, want 1", n)
	}
}
