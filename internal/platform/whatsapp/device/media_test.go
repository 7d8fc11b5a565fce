package device

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"

	"go.mau.fi/whatsmeow"
	"go.mau.fi/whatsmeow/proto/waE2E"
	"google.golang.org/protobuf/proto"

	"github.com/baton-agent/baton/internal/platform"
	"github.com/baton-agent/baton/internal/platform/whatsapp"
)

// Each media message becomes one file with what the sender's app told of
// it and a reference a download can use: images as photos, documents by
// their name (with the caption as the text), voice messages as voice,
// other audio as audio, videos and round video notes as video. A sticker
// is no file; media without a path on the servers is none either.
func TestMediaMapped(t *testing.T) {
	sha, enc, key := []byte{1, 2, 3}, []byte{4, 5}, []byte{6}
	cases := []struct {
		name string
		msg  *waE2E.Message
		text string
		want []whatsapp.Media
		typ  whatsmeow.MediaType
	}{
		{"a photo with a caption", &waE2E.Message{ImageMessage: &waE2E.ImageMessage{Caption: proto.String("the whiteboard"),
			Mimetype: proto.String("image/jpeg"), FileLength: proto.Uint64(2048), DirectPath: proto.String("/v/t62/img"), FileSHA256: sha, FileEncSHA256: enc, MediaKey: key}},
			"the whiteboard", []whatsapp.Media{{Kind: platform.KindPhoto, MediaType: "image/jpeg", Size: 2048}}, whatsmeow.MediaImage},
		{"a document (its caption envelope unwrapped by whatsmeow)", &waE2E.Message{DocumentMessage: &waE2E.DocumentMessage{FileName: proto.String("a.pdf"), Caption: proto.String("read this"),
			Mimetype: proto.String("application/pdf"), FileLength: proto.Uint64(4096), DirectPath: proto.String("/v/t62/doc"), FileSHA256: sha, FileEncSHA256: enc, MediaKey: key}},
			"read this", []whatsapp.Media{{Kind: platform.KindDocument, Name: "a.pdf", MediaType: "application/pdf", Size: 4096}}, whatsmeow.MediaDocument},
		{"a voice message", &waE2E.Message{AudioMessage: &waE2E.AudioMessage{PTT: proto.Bool(true), Mimetype: proto.String("audio/ogg; codecs=opus"),
			DirectPath: proto.String("/v/t62/ptt"), FileSHA256: sha, FileEncSHA256: enc, MediaKey: key}},
			"", []whatsapp.Media{{Kind: platform.KindVoice, MediaType: "audio/ogg; codecs=opus"}}, whatsmeow.MediaAudio},
		{"an audio file", &waE2E.Message{AudioMessage: &waE2E.AudioMessage{Mimetype: proto.String("audio/mpeg"),
			DirectPath: proto.String("/v/t62/mp3"), FileSHA256: sha, FileEncSHA256: enc, MediaKey: key}},
			"", []whatsapp.Media{{Kind: platform.KindAudio, MediaType: "audio/mpeg"}}, whatsmeow.MediaAudio},
		{"a video", &waE2E.Message{VideoMessage: &waE2E.VideoMessage{Caption: proto.String("look"), Mimetype: proto.String("video/mp4"),
			DirectPath: proto.String("/v/t62/vid"), FileSHA256: sha, FileEncSHA256: enc, MediaKey: key}},
			"look", []whatsapp.Media{{Kind: platform.KindVideo, MediaType: "video/mp4"}}, whatsmeow.MediaVideo},
		{"a round video note", &waE2E.Message{PtvMessage: &waE2E.VideoMessage{Mimetype: proto.String("video/mp4"),
			DirectPath: proto.String("/v/t62/ptv"), FileSHA256: sha, FileEncSHA256: enc, MediaKey: key}},
			"", []whatsapp.Media{{Kind: platform.KindVideo, MediaType: "video/mp4"}}, whatsmeow.MediaVideo},
		{"a sticker", &waE2E.Message{StickerMessage: &waE2E.StickerMessage{DirectPath: proto.String("/v/t62/st"), FileSHA256: sha}}, "", nil, ""},
		{"an image not on the servers", &waE2E.Message{ImageMessage: &waE2E.ImageMessage{}}, "", nil, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m, ok := messageOf(recorded(phone, phone, true, c.msg), ownSelf)
			if c.want == nil {
				if ok {
					t.Fatalf("handed over %+v", m)
				}
				return
			}
			if !ok || m.Text != c.text || len(m.Files) != len(c.want) {
				t.Fatalf("mapped to %+v (%v), want text %q and %d files", m, ok, c.text, len(c.want))
			}
			got, want := m.Files[0], c.want[0]
			var ref mediaRef
			if err := json.Unmarshal(got.Ref, &ref); err != nil || ref.Type != c.typ || ref.DirectPath == "" ||
				string(ref.MediaKey) != string(key) || string(ref.FileSHA256) != string(sha) || string(ref.FileEncSHA256) != string(enc) {
				t.Errorf("reference %s (%v), want one to download %s with the message's keys", got.Ref, err, c.typ)
			}
			if got.Hash != hex.EncodeToString(sha) {
				t.Errorf("hash %q", got.Hash)
			}
			got.Ref, got.Hash = nil, ""
			if got.Kind != want.Kind || got.Name != want.Name || got.MediaType != want.MediaType || got.Size != want.Size {
				t.Errorf("file %+v, want %+v", got, want)
			}
		})
	}
}

// A picture goes as an image message with its caption; a document with
// its name, inside the caption envelope when it has a caption, as
// WhatsApp's apps send one.
func TestFileMessages(t *testing.T) {
	up := whatsmeow.UploadResponse{URL: "https://mmg.whatsapp.net/x", DirectPath: "/v/x", MediaKey: []byte{1}, FileSHA256: []byte{2}, FileEncSHA256: []byte{3}, FileLength: 9}
	img := fileMessage(whatsapp.Upload{Name: "chart.png", MediaType: "image/png", Caption: "the chart", Image: true}, up)
	if im := img.GetImageMessage(); im == nil || im.GetCaption() != "the chart" || im.GetMimetype() != "image/png" || im.GetDirectPath() != "/v/x" || im.GetFileLength() != 9 {
		t.Errorf("picture as %v", img)
	}
	doc := fileMessage(whatsapp.Upload{Name: "report.pdf", MediaType: "application/pdf"}, up)
	if d := doc.GetDocumentMessage(); d == nil || d.GetFileName() != "report.pdf" || d.Caption != nil || string(d.GetMediaKey()) != "\x01" {
		t.Errorf("document as %v", doc)
	}
	captioned := fileMessage(whatsapp.Upload{Name: "notes.txt", MediaType: "text/plain", Caption: "*read*"}, up)
	if d := captioned.GetDocumentWithCaptionMessage().GetMessage().GetDocumentMessage(); d == nil || d.GetFileName() != "notes.txt" || d.GetCaption() != "*read*" {
		t.Errorf("captioned document as %v", captioned)
	}
	voice := fileMessage(whatsapp.Upload{Name: "answer.ogg", MediaType: "audio/ogg", Voice: true}, up)
	if a := voice.GetAudioMessage(); a == nil || !a.GetPTT() || a.GetMimetype() != "audio/ogg; codecs=opus" || a.GetDirectPath() != "/v/x" {
		t.Errorf("spoken answer as %v", voice)
	}
}

// A download is written to a file that refuses to grow past the bound,
// whatever the message told of its size.
func TestDownloadFileBounded(t *testing.T) {
	tmp, err := os.CreateTemp(t.TempDir(), "dl")
	if err != nil {
		t.Fatal(err)
	}
	defer tmp.Close()
	b := &boundedFile{File: tmp, limit: 10}
	if _, err := io.Copy(b, strings.NewReader("0123456789")); err != nil {
		t.Fatalf("up to the bound: %v", err)
	}
	if _, err := io.Copy(b, strings.NewReader("x")); !errors.Is(err, errTooLarge) {
		t.Errorf("past the bound by Write: %v", err)
	}
	if _, err := b.WriteAt([]byte("xy"), 9); !errors.Is(err, errTooLarge) {
		t.Errorf("past the bound by WriteAt: %v", err)
	}
	// A 4xx from the device is one the adapter never retries.
	var se *whatsapp.ServerError
	if err := downloadError(fmt.Errorf("wrapped: %w", errTooLarge)); !errors.As(err, &se) || se.Code != 413 {
		t.Errorf("a download past the bound fails with %v, want a 413", err)
	}
}
