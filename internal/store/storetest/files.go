package storetest

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"image"
	"image/png"
	"io"
	"strings"
	"testing"

	"github.com/baton-agent/baton/internal/store"
)

// PNG is a w×h PNG image, for tests of attachments.
func PNG(t testing.TB, w, h int) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := png.Encode(&b, image.NewGray(image.Rect(0, 0, w, h))); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// PDF is a small PDF document's bytes (a header is all sniffing needs).
var PDF = []byte("%PDF-1.7\n1 0 obj << /Type /Catalog >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n")

func hexSum(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func readFile(t *testing.T, s store.Store, sha string) ([]byte, error) {
	t.Helper()
	f, err := s.OpenFile(ctx(t), sha)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

// onlyReader hides every method but Read, so the store cannot learn the
// size before reading: the bytes are streamed.
type onlyReader struct{ io.Reader }

var fileTests = map[string]func(*testing.T, store.Store){
	"PutOpenRoundTripSniffsTheBytesNotTheName": func(t *testing.T, s store.Store) {
		img := PNG(t, 3, 2)
		a := must(s.PutFile(ctx(t), onlyReader{bytes.NewReader(img)}, "x.pdf"))
		eq(t, "name", a.Name, "x.pdf")
		eq(t, "media type of a PNG named x.pdf", a.MediaType, "image/png")
		eq(t, "size", a.Size, int64(len(img)))
		eq(t, "sha256", a.SHA256, hexSum(img))
		eq(t, "width", a.Width, 3)
		eq(t, "height", a.Height, 2)
		got := must(readFile(t, s, a.SHA256))
		eq(t, "bytes read back", bytes.Equal(got, img), true)

		doc := must(s.PutFile(ctx(t), bytes.NewReader(PDF), "photo.png"))
		eq(t, "media type of a PDF named photo.png", doc.MediaType, "application/pdf")
		eq(t, "no image size", doc.Width+doc.Height, 0)
		got = must(readFile(t, s, doc.SHA256))
		eq(t, "pdf read back", string(got), string(PDF))
	},
	"OpenUnknownFile": func(t *testing.T, s store.Store) {
		_, err := s.OpenFile(ctx(t), hexSum([]byte("never put")))
		wantErr(t, err, store.ErrNotFound)
		_, err = s.OpenFile(ctx(t), "../../state.db")
		wantErr(t, err, store.ErrInvalid)
	},
	"SameBytesTwiceAreOneFile": func(t *testing.T, s store.Store) {
		a := must(s.PutFile(ctx(t), bytes.NewReader(PDF), "a.pdf"))
		b := must(s.PutFile(ctx(t), onlyReader{bytes.NewReader(PDF)}, "forwarded.pdf"))
		eq(t, "same address", b.SHA256, a.SHA256)
		eq(t, "own name", b.Name, "forwarded.pdf")
		got := must(readFile(t, s, a.SHA256))
		eq(t, "bytes", string(got), string(PDF))
	},
	"TranscriptKeptWithItsAudio": func(t *testing.T, s store.Store) {
		sess := newSession(t, s, "u", "")
		note := must(s.PutFile(ctx(t), bytes.NewReader(append([]byte("OggS"), make([]byte, 300)...)), ""))
		note.Voice, note.Transcript = true, "buy milk"
		must(s.AppendMessages(ctx(t), sess.ID, store.Message{Role: store.RoleUser, Attachments: []store.Attachment{note}}))
		ms := must(s.Transcript(ctx(t), sess.ID))
		eq(t, "messages", len(ms), 1)
		eq(t, "attachments", len(ms[0].Attachments), 1)
		eq(t, "transcript", ms[0].Attachments[0].Transcript, "buy milk")
		eq(t, "voice", ms[0].Attachments[0].Voice, true)
		in, _ := must2(s.AddInbound(ctx(t), store.Inbound{Platform: "telegram", PlatformMsgID: "v1", AddressKey: "telegram:dm:1",
			SenderID: "1", Attachments: []store.Attachment{note}}))
		pending := must(s.PendingInbound(ctx(t), 0, 10))
		eq(t, "pending", len(pending), 1)
		eq(t, "inbound transcript", pending[0].Attachments[0].Transcript, "buy milk")
		eq(t, "inbound voice", pending[0].Attachments[0].Voice, true)
		_ = in

		// Heard later: the transcript is set on the stored note, and the
		// session's transcript reads it.
		later := newSession(t, s, "u", "")
		unheard := note
		unheard.Transcript = ""
		stored := must(s.AppendMessages(ctx(t), later.ID, store.Message{Role: store.RoleUser, Attachments: []store.Attachment{unheard}}))
		eq(t, "before", must(s.Transcript(ctx(t), later.ID))[0].Attachments[0].Transcript, "")
		noErr(t, s.SetTranscript(ctx(t), stored[0].Attachments[0].ID, "call mum"))
		eq(t, "after", must(s.Transcript(ctx(t), later.ID))[0].Attachments[0].Transcript, "call mum")
		wantErr(t, s.SetTranscript(ctx(t), 987654, "x"), store.ErrNotFound)
	},
	"MessageWithAttachmentsRoundTrips": func(t *testing.T, s store.Store) {
		sess := newSession(t, s, "u", "")
		img := must(s.PutFile(ctx(t), bytes.NewReader(PNG(t, 4, 5)), "screen.png"))
		doc := must(s.PutFile(ctx(t), bytes.NewReader(PDF), "report.pdf"))
		appendText(t, s, sess.ID, store.RoleUser, "before")
		stored := must(s.AppendMessages(ctx(t), sess.ID,
			store.Message{Role: store.RoleUser, Content: "look", Attachments: []store.Attachment{img, doc}},
			store.Message{Role: store.RoleAssistant, Content: "seen"}))
		eq(t, "attachments returned", len(stored[0].Attachments), 2)
		check := func(what string, ms []store.Message) {
			t.Helper()
			eqSlice(t, what, contents(ms), []string{"user:before", "user:look", "assistant:seen"})
			eq(t, what+": none on the first", len(ms[0].Attachments), 0)
			eq(t, what+": none on the answer", len(ms[2].Attachments), 0)
			as := ms[1].Attachments
			eq(t, what+": attachments", len(as), 2)
			for i, want := range []store.Attachment{img, doc} {
				got := as[i]
				eq(t, what+": message id", got.MessageID, ms[1].ID)
				eq(t, what+": ordinal", got.Ordinal, i)
				eq(t, what+": id", got.ID != 0, true)
				eq(t, what+": id as returned", got.ID, stored[0].Attachments[i].ID)
				got.ID, got.MessageID, got.Ordinal = 0, 0, 0
				eq(t, what+": metadata", got, want)
			}
		}
		check("transcript", must(s.Transcript(ctx(t), sess.ID)))
		check("turn start", must(s.TurnStart(ctx(t), sess.ID)).Transcript)
		check("history", must(s.History(ctx(t), sess.ID)))
		// A later message is read on top of what was read before.
		appendText(t, s, sess.ID, store.RoleUser, "more")
		ms := must(s.Transcript(ctx(t), sess.ID))
		check("transcript after another append", ms[:3])
	},
	"AttachmentWithoutItsBytesIsRefused": func(t *testing.T, s store.Store) {
		sess := newSession(t, s, "u", "")
		ghost := store.Attachment{Name: "ghost.png", MediaType: "image/png", Size: 3, SHA256: hexSum([]byte("not put"))}
		_, err := s.AppendMessages(ctx(t), sess.ID, store.Message{Role: store.RoleUser, Content: "x", Attachments: []store.Attachment{ghost}})
		wantErr(t, err, store.ErrNotFound)
		eq(t, "nothing stored", len(must(s.Transcript(ctx(t), sess.ID))), 0)
		ghost.SHA256 = "../state.db"
		_, err = s.AppendMessages(ctx(t), sess.ID, store.Message{Role: store.RoleUser, Content: "x", Attachments: []store.Attachment{ghost}})
		wantErr(t, err, store.ErrInvalid)
	},
	"DeleteRemovesBytesNoOtherSessionNames": func(t *testing.T, s store.Store) {
		a, b := newSession(t, s, "u", ""), newSession(t, s, "u", "")
		shared := must(s.PutFile(ctx(t), bytes.NewReader(PDF), "shared.pdf"))
		own := must(s.PutFile(ctx(t), bytes.NewReader(PNG(t, 1, 1)), "own.png"))
		must(s.AppendMessages(ctx(t), a.ID, store.Message{Role: store.RoleUser, Content: "a", Attachments: []store.Attachment{shared, own}}))
		must(s.AppendMessages(ctx(t), b.ID, store.Message{Role: store.RoleUser, Content: "b", Attachments: []store.Attachment{shared}}))
		noErr(t, s.DeleteSession(ctx(t), a.ID))
		_, err := readFile(t, s, own.SHA256)
		wantErr(t, err, store.ErrNotFound)
		got := must(readFile(t, s, shared.SHA256))
		eq(t, "shared bytes kept for the other session", string(got), string(PDF))
		noErr(t, s.DeleteSession(ctx(t), b.ID))
		_, err = readFile(t, s, shared.SHA256)
		wantErr(t, err, store.ErrNotFound)
	},
	"InboundKeepsItsAttachments": func(t *testing.T, s store.Store) {
		img := must(s.PutFile(ctx(t), bytes.NewReader(PNG(t, 2, 3)), "photo.jpg"))
		in, isNew := must2(s.AddInbound(ctx(t), store.Inbound{Platform: "telegram", PlatformMsgID: "9",
			AddressKey: "telegram:dm:5", Attachments: []store.Attachment{img}}))
		eq(t, "new", isNew, true)
		check := func(what string, got store.Inbound) {
			t.Helper()
			eq(t, what+": attachments", len(got.Attachments), 1)
			eq(t, what+": attachment", got.Attachments[0], img)
		}
		check("stored", in)
		again, isNew := must2(s.AddInbound(ctx(t), store.Inbound{Platform: "telegram", PlatformMsgID: "9",
			AddressKey: "telegram:dm:5", Attachments: []store.Attachment{img}}))
		eq(t, "redelivery new", isNew, false)
		check("redelivered", again)
		check("pending", must(s.PendingInbound(ctx(t), 0, 0))[0])
		sess := newSession(t, s, "u", "")
		noErr(t, s.ParkInbound(ctx(t), in.ID, sess.ID, "telegram:dm:5"))
		check("parked", must(s.Parked(ctx(t), "telegram:dm:5"))[0])

		ghost := store.Attachment{Name: "ghost", SHA256: hexSum([]byte("not put"))}
		_, _, err := s.AddInbound(ctx(t), store.Inbound{Platform: "telegram", PlatformMsgID: "10",
			AddressKey: "telegram:dm:5", Attachments: []store.Attachment{ghost}})
		wantErr(t, err, store.ErrNotFound)
	},
	"DeliveryKeepsItsAttachments": func(t *testing.T, s store.Store) {
		doc := must(s.PutFile(ctx(t), bytes.NewReader(PDF), "log.pdf"))
		d := store.Delivery{Key: "file:1", AddressKey: "slack:C1:T1", Text: "here it is", Attachments: []store.Attachment{doc}}
		got := must(s.EnqueueDeliveries(ctx(t), d))
		eq(t, "attachments", len(got[0].Attachments), 1)
		eq(t, "attachment", got[0].Attachments[0], doc)
		again := must(s.EnqueueDeliveries(ctx(t), d))
		eq(t, "same delivery for the same key", again[0].ID, got[0].ID)
		pending := must(s.PendingDeliveries(ctx(t), "slack:C1:T1", 0))
		eq(t, "pending attachment", pending[0].Attachments[0], doc)
		byKey := must(s.DeliveryByKey(ctx(t), "file:1"))
		eq(t, "by key", byKey.Attachments[0], doc)

		ghost := store.Attachment{Name: "ghost", SHA256: hexSum([]byte("not put"))}
		_, err := s.EnqueueDeliveries(ctx(t), store.Delivery{AddressKey: "slack:C1:T1", Attachments: []store.Attachment{ghost}})
		wantErr(t, err, store.ErrNotFound)
	},
	"ExportCarriesTheFiles": func(t *testing.T, s store.Store) {
		sess := newSession(t, s, "u", "")
		img := PNG(t, 2, 2)
		a := must(s.PutFile(ctx(t), bytes.NewReader(img), "a.png"))
		must(s.AppendMessages(ctx(t), sess.ID,
			store.Message{Role: store.RoleUser, Content: "one", Attachments: []store.Attachment{a}},
			store.Message{Role: store.RoleUser, Content: "same again", Attachments: []store.Attachment{a}}))
		e := must(store.ExportSession(ctx(t), s, sess.ID))
		eq(t, "files", len(e.Files), 1)
		eq(t, "sha", e.Files[0].SHA256, a.SHA256)
		eq(t, "type", e.Files[0].MediaType, "image/png")
		eq(t, "bytes", bytes.Equal(e.Files[0].Data, img), true)
		eq(t, "message attachment", e.Messages[1].Attachments[0].SHA256, a.SHA256)
		data := must(store.MarshalExport(e))
		if !bytes.Contains(data, []byte(base64.StdEncoding.EncodeToString(img))) {
			t.Fatal("the JSON does not carry the file's bytes in base64")
		}
	},
	"OverTheBoundIsRefused": func(t *testing.T, s store.Store) {
		over := int64(store.DefaultMaxFileBytes + 1)
		for name, r := range map[string]io.Reader{
			"streamed":   onlyReader{io.LimitReader(zeros{}, over)},
			"known size": bytes.NewReader(make([]byte, over)),
		} {
			_, err := s.PutFile(ctx(t), r, "big.bin")
			var tooLarge *store.FileTooLargeError
			if !errors.Is(err, store.ErrFileTooLarge) || !errors.As(err, &tooLarge) {
				t.Fatalf("%s: error = %v, want ErrFileTooLarge", name, err)
			}
			eq(t, name+": bound", tooLarge.Limit, int64(store.DefaultMaxFileBytes))
			eq(t, name+": size", tooLarge.Size, over)
			if !strings.Contains(err.Error(), "the bound is 25 MB") {
				t.Fatalf("%s: %q does not say the bound", name, err)
			}
		}
		_, err := readFile(t, s, hexSum(make([]byte, over)))
		wantErr(t, err, store.ErrNotFound)
	},
}

// zeros reads as endless zero bytes.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}
