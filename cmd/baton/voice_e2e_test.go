package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/llm/llmtest"
	"github.com/baton-agent/baton/internal/platform/telegram/telegramtest"
	"github.com/baton-agent/baton/internal/store"
)

// TestVoiceNoteTravelsWithTheConversation: a voice note sent to the bot
// (the Telegram fake, a real gateway process, the model's own API for
// transcription) is transcribed from its Ogg bytes, what was heard is
// shown, and the turn answered; handed to the terminal, the replay shows
// "voice note (0:07): …".
func TestVoiceNoteTravelsWithTheConversation(t *testing.T) {
	const forum = -100780
	pr := newPlacesRig(t, "123456:voice-travels", forum)
	fake, owner, srv, st := pr.fake, pr.owner, pr.srv, pr.st
	srv.SetTranscriber(func(llmtest.Transcription) llmtest.Step { return llmtest.Reply{Text: "remind me to water the plants"} })
	note := llmtest.VoiceNote(7 * time.Second)

	fake.PushVoice(forum, 0, owner, note)
	waitSent(t, fake, "what was heard", func(m telegramtest.SentMessage) bool {
		return m.Plain == "🎙 heard: remind me to water the plants"
	})
	waitSent(t, fake, "the answer", func(m telegramtest.SentMessage) bool { return strings.HasPrefix(m.Plain, "echo:") })
	trs := srv.Transcriptions()
	if len(trs) != 1 || !bytes.Equal(trs[0].Data, note) || trs[0].MediaType != "audio/ogg" {
		t.Fatalf("transcription requests: %d, want the note's Ogg bytes once", len(trs))
	}
	ss, err := st.ListSessions(t.Context(), store.SessionFilter{})
	if err != nil || len(ss) != 1 {
		t.Fatalf("sessions %+v %v", ss, err)
	}
	sid := ss[0].ID
	msgs, err := st.Transcript(t.Context(), sid)
	if err != nil || len(msgs) == 0 || len(msgs[0].Attachments) != 1 || msgs[0].Attachments[0].Transcript != "remind me to water the plants" {
		t.Fatalf("the transcript is not kept with the note: %+v %v", msgs, err)
	}

	fake.PushMessage(forum, 0, owner, "/handoff cli")
	waitSent(t, fake, "the handoff", func(m telegramtest.SentMessage) bool { return strings.Contains(m.Plain, "Handing off to the terminal") })
	tm := startTerm(t, pr.env, pr.work, "-r", sid[:8])
	tm.expect("voice note (0:07): remind me to water the plants")
	tm.expect("Brought session " + sid[:8] + " here from Telegram")
	tm.line("/quit")
	if err := tm.wait(); err != nil {
		t.Fatalf("quit: %v\n%s", err, tm.Screen())
	}
}
