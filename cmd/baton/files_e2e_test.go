package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/baton-agent/baton/internal/llm/llmtest"
	"github.com/baton-agent/baton/internal/platform/telegram/telegramtest"
	"github.com/baton-agent/baton/internal/store"
	"github.com/baton-agent/baton/internal/testutil"
)

// lastImages is the images the model's latest request carried.
func lastImages(srv *llmtest.Server) [][]byte {
	reqs := srv.Requests()
	if len(reqs) == 0 {
		return nil
	}
	var out [][]byte
	for _, p := range reqs[len(reqs)-1].Images() {
		out = append(out, p.Data)
	}
	return out
}

// TestPhotoTravelsWithTheConversation: a photo without a caption sent to
// the bot (the Telegram fake, a real gateway process) gets a turn whose
// model request carries it; /handoff cli, and the terminal's replay
// names the photo with the path it is kept at, and the model still sees
// it in the terminal's next turn; /handoff web, and the page shows its
// thumbnail and the model there sees it too.
func TestPhotoTravelsWithTheConversation(t *testing.T) {
	chromium(t)
	const forum = -100778
	pr := newPlacesRig(t, "123456:photo-travels", forum)
	fake, owner, srv, st := pr.fake, pr.owner, pr.srv, pr.st
	photo := llmtest.Photo(48, 32)

	fake.PushPhoto(forum, 0, owner, photo, "")
	testutil.Eventually(t, hangGuard, func() bool {
		imgs := lastImages(srv)
		return len(imgs) == 1 && bytes.Equal(imgs[0], photo)
	}, "a model request carrying the photo")
	waitSent(t, fake, "the answer to the photo", func(m telegramtest.SentMessage) bool { return strings.HasPrefix(m.Plain, "echo:") })
	ss, err := st.ListSessions(t.Context(), store.SessionFilter{})
	if err != nil || len(ss) != 1 {
		t.Fatalf("sessions %+v %v", ss, err)
	}
	sid := ss[0].ID
	msgs, err := st.Transcript(t.Context(), sid)
	if err != nil || len(msgs) == 0 || len(msgs[0].Attachments) != 1 {
		t.Fatalf("the transcript does not keep the photo: %+v %v", msgs, err)
	}
	kept, err := st.SessionFile(t.Context(), sid, msgs[0].Attachments[0])
	if err != nil {
		t.Fatal(err)
	}

	fake.PushMessage(forum, 0, owner, "/handoff cli")
	waitSent(t, fake, "the handoff", func(m telegramtest.SentMessage) bool { return strings.Contains(m.Plain, "Handing off to the terminal") })
	tm := startTerm(t, pr.env, pr.work, "-r", sid[:8])
	tm.expect("📎 photo (image/jpeg, ")
	tm.expect("kept at " + kept)
	tm.expect("Brought session " + sid[:8] + " here from Telegram")
	tm.expect("Files in this conversation: photo (image/jpeg, ")
	calls := len(srv.Requests())
	tm.line("what was in the photo?")
	tm.expect("echo: what was in the photo?")
	if len(srv.Requests()) == calls {
		t.Fatal("no model call for the terminal's message")
	}
	if imgs := lastImages(srv); len(imgs) != 1 || !bytes.Equal(imgs[0], photo) {
		t.Fatalf("the model at the terminal got %d images, want the photo", len(imgs))
	}
	if h := pr.session(t, sid).Holder; !strings.HasPrefix(h, "cli:") {
		t.Fatalf("holder %q", h)
	}

	// On to the web chat: the page shows the photo's thumbnail, served
	// from the store, and the model there still sees it.
	tm.line("/handoff web")
	tm.expect("continues in the web chat")
	if err := tm.wait(); err != nil { // the terminal detaches
		t.Fatalf("after /handoff web: %v\n%s", err, tm.Screen())
	}
	page := browser(t)
	if err := chromedp.Do(page, chromedp.Navigate(pr.gw.webURL)); err != nil {
		t.Fatal(err)
	}
	pageText(page, t, "Hello, picked up here.")
	wctx, cancel := context.WithTimeout(page, hangGuard)
	defer cancel()
	natural, err := chromedp.Run(wctx, chromedp.Poll[int](`(() => { const i = document.querySelector("#messages img[src^='/file/']"); return i && i.complete ? i.naturalWidth : 0 })()`))
	if err != nil || natural != 48 {
		t.Fatalf("the page shows no thumbnail of the photo (natural width %d): %v", natural, err)
	}
	calls = len(srv.Requests())
	pageSay(page, t, "and on the page?")
	pageText(page, t, "echo: and on the page?")
	if len(srv.Requests()) == calls {
		t.Fatal("no model call for the page's message")
	}
	if imgs := lastImages(srv); len(imgs) != 1 || !bytes.Equal(imgs[0], photo) {
		t.Fatalf("the model at the page got %d images, want the photo", len(imgs))
	}
}
