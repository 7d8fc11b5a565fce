package gateway_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/baton-agent/baton/internal/llm/llmtest"
	"github.com/baton-agent/baton/internal/platform/telegram/telegramtest"
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
