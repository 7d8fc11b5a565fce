package gateway_test

import (
	"strings"
	"testing"

	"github.com/baton-agent/baton/internal/llm/llmtest"
	"github.com/baton-agent/baton/internal/platform/telegram/telegramtest"
)

// Until files reach the model, a photo is not met with silence: the
// person is told, in one line, that baton does not take files yet, and a
// caption is answered as a message.
func TestFilesAreAnsweredUntilTheyAreTaken(t *testing.T) {
	fake := telegramtest.New(t, botToken)
	fake.AddChat(telegramtest.Chat{ID: ownerTG, Type: "private"})
	r := telegramRig(t, fake, "telegram:group:-100777")
	png := []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x02\x00\x00\x00\x90wS\xde")

	fake.PushPhoto(ownerTG, 0, ownerUser, png, "")
	waitFor(t, "the line about the photo", fake.Shown, func(m telegramtest.SentMessage) bool {
		return strings.Contains(m.Plain, "cannot take photos or files yet")
	})
	if n := len(r.model.Requests()); n != 0 {
		t.Errorf("a photo alone ran %d model calls", n)
	}

	r.model.Push(llmtest.Reply{Text: "A nice caption."})
	fake.PushPhoto(ownerTG, 0, ownerUser, png, "what is this?")
	waitFor(t, "the caption's answer", fake.Shown, func(m telegramtest.SentMessage) bool { return m.Plain == "A nice caption." })
	if n := countMatching(fake.Shown(), func(m telegramtest.SentMessage) bool {
		return strings.Contains(m.Plain, "cannot take photos or files yet")
	}); n != 2 {
		t.Errorf("the line about files was shown %d times, want once per message with a file", n)
	}
}
