package gateway

import (
	"bytes"
	"context"
	"io"
	"strings"

	"github.com/baton-agent/baton/internal/platform"
	"github.com/baton-agent/baton/internal/store"
)

// Voice notes heard before their turn, and answers spoken (the router's;
// internal/voice speaks to the services).

// heardShown bounds the transcript told back to the person.
const heardShown = 300

// hear transcribes the voice notes among files and tells the person, in
// one short line each, what was heard, so a mishearing shows. A note not
// heard (no service set up, or it failed) stays attached as it is: the
// person is told why, the first time in a conversation for a missing
// service.
func (r *router) hear(ctx context.Context, addr platform.Address, sessionID string, files []store.Attachment) []store.Attachment {
	var out []store.Attachment
	for _, a := range files {
		if !a.Voice || a.Transcript != "" {
			out = append(out, a)
			continue
		}
		if r.cfg.transcriber == nil {
			if !r.toldUnheard(ctx, sessionID) {
				r.out.sendNow(ctx, addr, unheard)
			}
			out = append(out, a)
			continue
		}
		text, err := r.cfg.transcriber.Transcribe(ctx, "voice", a.MediaType, func(ctx context.Context) (io.ReadCloser, error) {
			return r.st.OpenFile(ctx, a.SHA256)
		})
		switch {
		case err != nil:
			r.log.Warn("transcribe a voice note", "at", addr.Key(), "err", err)
			r.out.sendNow(ctx, addr, "🎙 I could not hear this voice note ("+err.Error()+"); it is kept, and /retry tries again.")
		case text == "":
			r.out.sendNow(ctx, addr, "🎙 heard nothing in this voice note.")
		default:
			a.Transcript = text
			r.out.sendNow(ctx, addr, "🎙 heard: "+clipRunes(text, heardShown))
		}
		out = append(out, a)
	}
	return out
}

// hearLast transcribes the voice notes of the person's last message that
// were not heard (no service then, or it failed), for /retry to answer
// them; the transcripts are stored with the notes.
func (r *router) hearLast(ctx context.Context, addr platform.Address, sessionID string) {
	if r.cfg.transcriber == nil {
		return
	}
	msgs, err := r.st.Transcript(ctx, sessionID)
	if err != nil {
		return
	}
	for i := len(msgs) - 1; i >= 0; i-- {
		m := msgs[i]
		if m.Role != store.RoleUser || m.Kind != "" {
			continue
		}
		heard := r.hear(ctx, addr, sessionID, m.Attachments)
		for j, a := range heard {
			if a.Transcript != "" && m.Attachments[j].Transcript == "" {
				if err := r.st.SetTranscript(ctx, a.ID, a.Transcript); err != nil {
					r.log.Warn("keep a voice note's transcript", "session", sessionID, "err", err)
				}
			}
		}
		return
	}
}

// unheard tells that voice notes are kept but not transcribed.
const unheard = "🎙 Your voice note is kept, but I cannot hear voice notes yet: set voice: in config.yaml " +
	"(base_url, model, api_key of an OpenAI-compatible transcription service: OpenAI, Groq, a local whisper server), " +
	"or use an OpenAI model. Later notes are heard once it is set."

// toldUnheard reports whether the conversation already has a voice note
// of the person's, and so was told it is not heard.
func (r *router) toldUnheard(ctx context.Context, sessionID string) bool {
	msgs, err := r.st.Transcript(ctx, sessionID)
	if err != nil {
		return false
	}
	for _, m := range msgs {
		for _, a := range m.Attachments {
			if m.Role == store.RoleUser && a.Voice {
				return true
			}
		}
	}
	return false
}

// clipRunes cuts s to n characters, marking the cut.
func clipRunes(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// speak is the answer as a voice note, kept in the store, for a session
// with /voice on; false for none (off, or it could not be made: the text
// goes alone, and the person is told why).
func (r *router) speak(ctx context.Context, addr platform.Address, sessionID, answer string) (store.Attachment, bool) {
	if r.cfg.speaker == nil || strings.TrimSpace(answer) == "" {
		return store.Attachment{}, false
	}
	sess, err := r.st.GetSession(ctx, sessionID)
	if err != nil || !sess.Voice {
		return store.Attachment{}, false
	}
	audio, err := r.cfg.speaker.Speak(ctx, answer)
	if err == nil {
		var a store.Attachment
		if a, err = r.st.PutFile(ctx, bytes.NewReader(audio), "answer.ogg"); err == nil {
			a.Voice = true
			return a, true
		}
	}
	r.log.Warn("speak an answer", "session", sessionID, "err", err)
	r.out.sendNow(ctx, addr, "🎙 I could not speak this answer ("+err.Error()+"); it is in the text.")
	return store.Attachment{}, false
}
