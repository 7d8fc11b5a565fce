package gateway_test

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/agent"
	"github.com/baton-agent/baton/internal/agent/tools"
	"github.com/baton-agent/baton/internal/llm/llmtest"
	"github.com/baton-agent/baton/internal/platform"
	"github.com/baton-agent/baton/internal/platform/signal"
	"github.com/baton-agent/baton/internal/platform/signal/signaltest"
	"github.com/baton-agent/baton/internal/platform/telegram/telegramtest"
	"github.com/baton-agent/baton/internal/platform/web"
	"github.com/baton-agent/baton/internal/platform/whatsapp"
	"github.com/baton-agent/baton/internal/platform/whatsapp/whatsapptest"
	"github.com/baton-agent/baton/internal/store"
	"github.com/baton-agent/baton/internal/testutil"
)

// A photo sent without a caption gets a turn like any other message: it
// is kept in the store before the update is acknowledged, it is part of
// the session's transcript, and the model's request carries it.
func TestPhotoAloneGetsATurnAndReachesTheModel(t *testing.T) {
	fake := telegramtest.New(t, botToken)
	fake.AddChat(telegramtest.Chat{ID: ownerTG, Type: "private"})
	r := telegramRig(t, fake, "telegram:group:-100777")
	photo := llmtest.Photo(64, 48)

	r.model.Push(llmtest.Reply{Text: "A small test photo."})
	fake.PushPhoto(ownerTG, 0, ownerUser, photo, "")
	waitFor(t, "the answer to the photo", fake.Shown, func(m telegramtest.SentMessage) bool { return m.Plain == "A small test photo." })

	reqs := r.model.Requests()
	if len(reqs) == 0 {
		t.Fatal("no model request")
	}
	images := reqs[len(reqs)-1].Images()
	if len(images) != 1 || !bytes.Equal(images[0].Data, photo) {
		t.Fatalf("the model got %d images (want the photo, as sent: it fits the model already)", len(images))
	}
	sess, err := r.st.BoundSession(t.Context(), "telegram:dm:"+itoa(ownerTG))
	if err != nil {
		t.Fatal(err)
	}
	msgs, err := r.st.Transcript(t.Context(), sess.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) == 0 || len(msgs[0].Attachments) != 1 || msgs[0].Attachments[0].MediaType != "image/jpeg" {
		t.Fatalf("the transcript does not keep the photo: %+v", msgs)
	}
}

// A file over the service's download limit is refused in one line, never
// downloaded; its caption is still answered.
func TestFileOverTheLimitIsRefusedInOneLine(t *testing.T) {
	fake := telegramtest.New(t, botToken)
	fake.AddChat(telegramtest.Chat{ID: ownerTG, Type: "private"})
	r := telegramRig(t, fake, "telegram:group:-100777")

	r.model.Push(llmtest.Reply{Text: "About the caption."})
	fake.PushFile(ownerTG, 0, ownerUser, telegramtest.File{Kind: telegramtest.Document, Name: "disk.iso", MimeType: "application/octet-stream",
		Data: []byte("x"), Size: 25 << 20, Caption: "here is the image"})
	waitFor(t, "the refusal", fake.Shown, func(m telegramtest.SentMessage) bool {
		return strings.HasPrefix(m.Plain, "Not kept: ") && strings.Contains(m.Plain, "disk.iso")
	})
	waitFor(t, "the caption's answer", fake.Shown, func(m telegramtest.SentMessage) bool { return m.Plain == "About the caption." })
	if n := fake.Downloads(); n != 0 {
		t.Errorf("%d downloads of a file over the limit", n)
	}
}

// sendFileTools are the built-in tools working in dir, send_file keeping
// files in the rig's store.
func sendFileTools(t *testing.T, dir string) func(st store.Store) *agent.Registry {
	return func(st store.Store) *agent.Registry {
		reg, err := tools.NewRegistry(tools.Config{Dir: dir, Files: st})
		if err != nil {
			t.Fatal(err)
		}
		return reg
	}
}

// The agent's send_file reaches the person where the session is held: a
// picture as a photo with its caption, a PDF as a document, each once,
// before the answer; the files are in the transcript with the call's
// result.
func TestSendFileReachesTheChatOnce(t *testing.T) {
	dir := t.TempDir()
	chart := llmtest.Photo(40, 30)
	pdf := append([]byte("%PDF-1.4\n"), bytes.Repeat([]byte("report\n"), 500)...)
	for name, data := range map[string][]byte{"chart.jpg": chart, "report.pdf": pdf} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	fake := telegramtest.New(t, botToken)
	fake.AddChat(telegramtest.Chat{ID: ownerTG, Type: "private"})
	r := telegramRig(t, fake, "telegram:group:-100777", func(o *rigOpts) {
		o.toolsWith = sendFileTools(t, dir)
		o.allow = []string{"send_file"}
	})
	r.model.Push(
		llmtest.Reply{ToolCalls: []llmtest.Call{
			{Name: "send_file", Args: `{"path":"chart.jpg","caption":"the **chart**"}`},
			{Name: "send_file", Args: `{"path":"report.pdf"}`},
		}},
		llmtest.Reply{Text: "Sent both."},
	)
	fake.PushMessage(ownerTG, 0, ownerUser, "send me the chart and the report")
	waitFor(t, "the answer", fake.Shown, func(m telegramtest.SentMessage) bool { return m.Plain == "Sent both." })

	files := fake.SentFiles()
	if len(files) != 2 {
		t.Fatalf("%d files sent, want 2: %+v", len(files), files)
	}
	if !files[0].Photo() || !bytes.Equal(files[0].Data, chart) || files[0].Caption != "the chart" {
		t.Errorf("the chart arrived as %s %q with %d bytes", files[0].Method, files[0].Caption, len(files[0].Data))
	}
	if files[1].Photo() || files[1].Name != "report.pdf" || !bytes.Equal(files[1].Data, pdf) {
		t.Errorf("the report arrived as %s %q with %d bytes", files[1].Method, files[1].Name, len(files[1].Data))
	}
	sess, err := r.st.BoundSession(t.Context(), "telegram:dm:"+itoa(ownerTG))
	if err != nil {
		t.Fatal(err)
	}
	var kept []string
	for _, m := range settled(t, r, sess.ID, "Sent both.") {
		for _, a := range m.Attachments {
			kept = append(kept, string(m.Role)+":"+a.Name+":"+a.MediaType)
		}
	}
	if want := []string{"tool:chart.jpg:image/jpeg", "tool:report.pdf:application/pdf"}; !slices.Equal(kept, want) {
		t.Errorf("the transcript keeps %v, want %v", kept, want)
	}
}

// A file outside the working directory and tools.paths is refused, even
// allowed by name: send_file sends only from where the file tools act.
func TestSendFileRefusesAFileOutside(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	secret := filepath.Join(outside, "id_ed25519")
	if err := os.WriteFile(secret, []byte("PRIVATE KEY"), 0o600); err != nil {
		t.Fatal(err)
	}
	fake := telegramtest.New(t, botToken)
	fake.AddChat(telegramtest.Chat{ID: ownerTG, Type: "private"})
	r := telegramRig(t, fake, "telegram:group:-100777", func(o *rigOpts) {
		o.toolsWith = sendFileTools(t, dir)
		o.allow = []string{"send_file:" + secret}
	})
	r.model.Push(llmtest.Reply{ToolCalls: []llmtest.Call{{Name: "send_file", Args: `{"path":"` + secret + `"}`}}}, llmtest.Reply{Text: "Could not."})
	fake.PushMessage(ownerTG, 0, ownerUser, "send me my key")
	waitFor(t, "the answer", fake.Shown, func(m telegramtest.SentMessage) bool { return m.Plain == "Could not." })
	if files := fake.SentFiles(); len(files) != 0 {
		t.Fatalf("a file outside was sent: %+v", files)
	}
	reqs := r.model.Requests()
	if last := reqs[len(reqs)-1]; !strings.Contains(fmt.Sprint(last.Messages()), "outside the working directory") {
		t.Errorf("the model was not told why: %v", last.Messages())
	}
}

// A conversation keeps files up to its bound: a file past it is refused
// in one line naming the bound and what to do, and its caption is still
// answered.
func TestSessionFilesBound(t *testing.T) {
	fake := telegramtest.New(t, botToken)
	fake.AddChat(telegramtest.Chat{ID: ownerTG, Type: "private"})
	photo := llmtest.Photo(64, 48)
	r := telegramRig(t, fake, "telegram:group:-100777", func(o *rigOpts) { o.maxSessionFiles = int64(len(photo)) + 10 })
	r.model.Push(llmtest.Reply{Text: "First photo."}, llmtest.Reply{Text: "About the second."})
	fake.PushPhoto(ownerTG, 0, ownerUser, photo, "")
	waitFor(t, "the first answer", fake.Shown, func(m telegramtest.SentMessage) bool { return m.Plain == "First photo." })
	fake.PushPhoto(ownerTG, 0, ownerUser, llmtest.Photo(60, 40), "and this one")
	waitFor(t, "the refusal", fake.Shown, func(m telegramtest.SentMessage) bool {
		return strings.HasPrefix(m.Plain, "Not kept: photo would take this conversation's files past their ") && strings.Contains(m.Plain, "/new")
	})
	waitFor(t, "the caption's answer", fake.Shown, func(m telegramtest.SentMessage) bool { return m.Plain == "About the second." })
	sess, err := r.st.BoundSession(t.Context(), "telegram:dm:"+itoa(ownerTG))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, m := range settled(t, r, sess.ID, "About the second.") {
		n += len(m.Attachments)
	}
	if n != 1 {
		t.Errorf("the session keeps %d files, want the first alone", n)
	}
}

// A voice note is heard: its Ogg bytes go to the transcription service,
// the person sees what was heard, the model reads it, and the transcript
// is kept beside the audio.
func TestVoiceNoteIsHeard(t *testing.T) {
	fake := telegramtest.New(t, botToken)
	fake.AddChat(telegramtest.Chat{ID: ownerTG, Type: "private"})
	r := telegramRig(t, fake, "telegram:group:-100777", func(o *rigOpts) { o.transcribe = true })
	r.model.SetTranscriber(func(llmtest.Transcription) llmtest.Step { return llmtest.Reply{Text: "remind me to buy milk"} })
	note := llmtest.VoiceNote(7 * time.Second)
	r.model.Push(llmtest.Reply{Text: "Noted: milk."})
	fake.PushVoice(ownerTG, 0, ownerUser, note)
	waitFor(t, "what was heard", fake.Shown, func(m telegramtest.SentMessage) bool { return m.Plain == "🎙 heard: remind me to buy milk" })
	waitFor(t, "the answer", fake.Shown, func(m telegramtest.SentMessage) bool { return m.Plain == "Noted: milk." })
	trs := r.model.Transcriptions()
	if len(trs) != 1 || !bytes.Equal(trs[0].Data, note) || trs[0].MediaType != "audio/ogg" {
		t.Fatalf("transcription requests %d (want the note's Ogg bytes once)", len(trs))
	}
	reqs := r.model.Requests()
	if got := fmt.Sprint(reqs[len(reqs)-1].Messages()); !strings.Contains(got, "voice note (0:07): remind me to buy milk") {
		t.Errorf("the model did not read the note: %s", got)
	}
	sess, err := r.st.BoundSession(t.Context(), "telegram:dm:"+itoa(ownerTG))
	if err != nil {
		t.Fatal(err)
	}
	msgs := settled(t, r, sess.ID, "Noted: milk.")
	if a := msgs[0].Attachments; len(a) != 1 || !a[0].Voice || a[0].Transcript != "remind me to buy milk" {
		t.Fatalf("the note is kept as %+v", a)
	}
}

// With no transcription service, a voice note is kept as it is, the model
// is told it was not transcribed, and the person is told once what to set.
func TestVoiceNoteUnheardToldOnce(t *testing.T) {
	fake := telegramtest.New(t, botToken)
	fake.AddChat(telegramtest.Chat{ID: ownerTG, Type: "private"})
	r := telegramRig(t, fake, "telegram:group:-100777")
	r.model.Push(llmtest.Reply{Text: "One."}, llmtest.Reply{Text: "Two."})
	fake.PushVoice(ownerTG, 0, ownerUser, llmtest.VoiceNote(2*time.Second))
	waitFor(t, "the first answer", fake.Shown, func(m telegramtest.SentMessage) bool { return m.Plain == "One." })
	fake.PushVoice(ownerTG, 0, ownerUser, llmtest.VoiceNote(3*time.Second))
	waitFor(t, "the second answer", fake.Shown, func(m telegramtest.SentMessage) bool { return m.Plain == "Two." })
	if n := countMatching(fake.Shown(), func(m telegramtest.SentMessage) bool {
		return strings.Contains(m.Plain, "cannot hear voice notes yet: set voice:")
	}); n != 1 {
		t.Errorf("told %d times that notes are not heard, want once", n)
	}
	reqs := r.model.Requests()
	if got := fmt.Sprint(reqs[len(reqs)-1].Messages()); !strings.Contains(got, "a voice note nobody transcribed") {
		t.Errorf("the model was not told: %s", got)
	}
	if n := len(r.model.Transcriptions()); n != 0 {
		t.Errorf("%d transcription requests with none configured", n)
	}
}

// WhatsApp's voice messages (PTT) and Signal's voice notes (AAC, in Note
// to Self) are heard as Telegram's are: the recording goes to the
// transcription service as it came, the person sees what was heard, and
// the model reads it.
func TestVoiceNotesHeardOnWhatsAppAndSignal(t *testing.T) {
	t.Run("whatsapp", func(t *testing.T) {
		fake := whatsapptest.New(waSelf)
		r := whatsappRig(t, fake, func(o *rigOpts) { o.transcribe = true })
		r.model.SetTranscriber(func(llmtest.Transcription) llmtest.Step { return llmtest.Reply{Text: "call the plumber"} })
		r.model.Push(llmtest.Reply{Text: "I will remind you."})
		note := llmtest.VoiceNote(4 * time.Second)
		fake.PushFile(whatsapp.Message{Chat: waSelf, Sender: waSelf, SenderName: "Owner", FromMe: true},
			whatsapp.Media{Kind: platform.KindVoice, MediaType: "audio/ogg; codecs=opus"}, note)
		shown := func(text string) func() bool {
			return func() bool {
				for _, m := range fake.Shown() {
					if strings.Contains(m.Text, text) {
						return true
					}
				}
				return false
			}
		}
		testutil.Eventually(t, testutil.Patience, shown("heard: call the plumber"), "what was heard")
		testutil.Eventually(t, testutil.Patience, shown("I will remind you."), "the answer")
		if trs := r.model.Transcriptions(); len(trs) != 1 || !bytes.Equal(trs[0].Data, note) || !strings.HasSuffix(trs[0].Filename, ".ogg") {
			t.Fatalf("transcription requests %+v", trs)
		}
		reqs := r.model.Requests()
		if got := fmt.Sprint(reqs[len(reqs)-1].Messages()); !strings.Contains(got, "voice note (0:04): call the plumber") {
			t.Errorf("the model did not read the note: %s", got)
		}
	})
	t.Run("signal", func(t *testing.T) {
		const account = "+4915550001"
		fake := signaltest.New(t, account)
		a, err := signal.New(signal.Config{URL: fake.URL(), Account: account, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		r := newRig(t, rigOpts{personal: []string{"signal"}, extra: []platform.Adapter{a}, transcribe: true,
			owners: map[string][]string{"signal": {account}},
			homes:  map[string]string{"web": web.Home.Key(), "signal": "signal:dm:" + account}})
		r.waitLive(t, "signal")
		testutil.Eventually(t, testutil.Patience, func() bool { return fake.Streams() > 0 }, "the event stream")
		r.model.SetTranscriber(func(llmtest.Transcription) llmtest.Step { return llmtest.Reply{Text: "pick up the kids at five"} })
		r.model.Push(llmtest.Reply{Text: "Five it is."})
		aac := adts(3)
		fake.PushSentFiles(account, "", signaltest.File{ContentType: "audio/aac", Data: aac})
		said := func(text string) func() bool {
			return func() bool {
				for _, m := range fake.Sent() {
					if strings.Contains(m.Message, text) {
						return true
					}
				}
				return false
			}
		}
		testutil.Eventually(t, testutil.Patience, said("heard: pick up the kids at five"), "what was heard")
		testutil.Eventually(t, testutil.Patience, said("Five it is."), "the answer")
		if trs := r.model.Transcriptions(); len(trs) != 1 || !bytes.Equal(trs[0].Data, aac) || trs[0].MediaType != "audio/aac" || !strings.HasSuffix(trs[0].Filename, ".aac") {
			t.Fatalf("transcription requests %+v", trs)
		}
	})
}

// adts is n AAC ADTS frames, as a phone records a voice note.
func adts(n int) []byte {
	var out []byte
	for i := range n {
		f := make([]byte, 200+i)
		l := len(f)
		f[0], f[1], f[2] = 0xFF, 0xF1, 0x50
		f[3] = 0x80 | byte(l>>11)&0x03
		f[4] = byte(l >> 3)
		f[5] = byte(l<<5) | 0x1F
		f[6] = 0xFC
		out = append(out, f...)
	}
	return out
}

// /voice on: the next answer comes as its text and, after it, as a voice
// message (sendVoice), once; /voice off: text only again.
func TestVoiceOnSpeaksAnswers(t *testing.T) {
	fake := telegramtest.New(t, botToken)
	fake.AddChat(telegramtest.Chat{ID: ownerTG, Type: "private"})
	r := telegramRig(t, fake, "telegram:group:-100777", func(o *rigOpts) { o.transcribe = true })
	r.model.Push(llmtest.Reply{Text: "Hello."}, llmtest.Reply{Text: "Here is the **plan**:\n\n```sh\nmake all\n```"}, llmtest.Reply{Text: "Quiet now."})
	fake.PushMessage(ownerTG, 0, ownerUser, "hi")
	waitFor(t, "the first answer", fake.Shown, func(m telegramtest.SentMessage) bool { return m.Plain == "Hello." })
	fake.PushMessage(ownerTG, 0, ownerUser, "/voice on")
	waitFor(t, "voice on", fake.Shown, func(m telegramtest.SentMessage) bool {
		return strings.HasPrefix(m.Plain, "Answers come as a voice note too now")
	})
	fake.PushMessage(ownerTG, 0, ownerUser, "what is the plan?")
	waitFor(t, "the spoken answer's text", fake.Shown, func(m telegramtest.SentMessage) bool { return strings.HasPrefix(m.Plain, "Here is the plan:") })
	testutil.Eventually(t, testutil.Patience, func() bool { return len(fake.SentFiles()) == 1 }, "the voice message")
	f := fake.SentFiles()[0]
	if !f.Voice() || !bytes.Equal(f.Data, llmtest.VoiceNote(time.Second)) {
		t.Fatalf("the spoken answer went as %s with %d bytes", f.Method, len(f.Data))
	}
	sp := r.model.Speeches()
	if len(sp) != 1 || strings.Contains(sp[0].Input, "make all") || !strings.Contains(sp[0].Input, "a code block here") {
		t.Fatalf("speech requests %+v", sp)
	}
	fake.PushMessage(ownerTG, 0, ownerUser, "/voice off")
	waitFor(t, "voice off", fake.Shown, func(m telegramtest.SentMessage) bool { return m.Plain == "Answers are in text only now." })
	fake.PushMessage(ownerTG, 0, ownerUser, "and now?")
	waitFor(t, "the text answer", fake.Shown, func(m telegramtest.SentMessage) bool { return m.Plain == "Quiet now." })
	if n := len(fake.SentFiles()); n != 1 {
		t.Errorf("%d voice messages, want the one while it was on", n)
	}
}

// A place named in voice.spoken starts its conversations with spoken
// answers, as /voice on would.
func TestSpokenPlaceAnswersAloud(t *testing.T) {
	fake := telegramtest.New(t, botToken)
	fake.AddChat(telegramtest.Chat{ID: ownerTG, Type: "private"})
	r := telegramRig(t, fake, "telegram:group:-100777", func(o *rigOpts) { o.transcribe, o.spoken = true, []string{"telegram"} })
	r.model.Push(llmtest.Reply{Text: "Hello, out loud."})
	fake.PushMessage(ownerTG, 0, ownerUser, "hi")
	waitFor(t, "the answer", fake.Shown, func(m telegramtest.SentMessage) bool { return m.Plain == "Hello, out loud." })
	testutil.Eventually(t, testutil.Patience, func() bool { return len(fake.SentFiles()) == 1 }, "the voice message")
	if f := fake.SentFiles()[0]; !f.Voice() {
		t.Errorf("the answer went as %s", f.Method)
	}
}

// A note kept unheard (the service failed) is heard by /retry, which then
// answers it.
func TestRetryHearsTheLastNote(t *testing.T) {
	fake := telegramtest.New(t, botToken)
	fake.AddChat(telegramtest.Chat{ID: ownerTG, Type: "private"})
	r := telegramRig(t, fake, "telegram:group:-100777", func(o *rigOpts) { o.transcribe = true })
	var failing atomic.Bool
	failing.Store(true)
	r.model.SetTranscriber(func(llmtest.Transcription) llmtest.Step {
		if failing.Load() {
			return llmtest.Fail{Status: 400}
		}
		return llmtest.Reply{Text: "book the train"}
	})
	r.model.Push(llmtest.Reply{Text: "I could not hear it."}, llmtest.Reply{Text: "Booking the train."})
	fake.PushVoice(ownerTG, 0, ownerUser, llmtest.VoiceNote(2*time.Second))
	waitFor(t, "the failure", fake.Shown, func(m telegramtest.SentMessage) bool {
		return strings.HasPrefix(m.Plain, "🎙 I could not hear this voice note")
	})
	waitFor(t, "the first answer", fake.Shown, func(m telegramtest.SentMessage) bool { return m.Plain == "I could not hear it." })
	failing.Store(false)
	fake.PushMessage(ownerTG, 0, ownerUser, "/retry")
	waitFor(t, "what was heard", fake.Shown, func(m telegramtest.SentMessage) bool { return m.Plain == "🎙 heard: book the train" })
	waitFor(t, "the retried answer", fake.Shown, func(m telegramtest.SentMessage) bool { return m.Plain == "Booking the train." })
	reqs := r.model.Requests()
	if got := fmt.Sprint(reqs[len(reqs)-1].Messages()); !strings.Contains(got, "voice note (0:02): book the train") {
		t.Errorf("the retry did not read the note: %s", got)
	}
}
