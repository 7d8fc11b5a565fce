package device

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"go.mau.fi/whatsmeow"
	"go.mau.fi/whatsmeow/proto/waE2E"
	"go.mau.fi/whatsmeow/types"
	"google.golang.org/protobuf/proto"

	"github.com/baton-agent/baton/internal/platform"
	"github.com/baton-agent/baton/internal/platform/whatsapp"
)

// mediaRef is what a download needs of a media message: where the
// encrypted file is on WhatsApp's media servers, its key and hashes. It
// travels to baton and back as whatsapp.Media.Ref, as the message gave
// it, so a file is only ever fetched from WhatsApp's own media hosts.
type mediaRef struct {
	DirectPath    string              `json:"path"`
	MediaKey      []byte              `json:"key"`
	FileSHA256    []byte              `json:"sha"`
	FileEncSHA256 []byte              `json:"enc"`
	Type          whatsmeow.MediaType `json:"type"`
}

// downloadable is what whatsmeow's media messages have in common.
type downloadable interface {
	GetDirectPath() string
	GetMediaKey() []byte
	GetFileSHA256() []byte
	GetFileEncSHA256() []byte
	GetMimetype() string
	GetFileLength() uint64
}

// mediaOf lists the file a message carries: an image (a photo), a
// document, an audio (a voice message when recorded in the app), or a
// video (a round video note too). Stickers are not files people send to
// be read.
func mediaOf(m *waE2E.Message) []whatsapp.Media {
	var out []whatsapp.Media
	add := func(kind platform.AttachmentKind, name string, d downloadable, t whatsmeow.MediaType) {
		if d == nil || d.GetDirectPath() == "" {
			return
		}
		ref, err := json.Marshal(mediaRef{DirectPath: d.GetDirectPath(), MediaKey: d.GetMediaKey(),
			FileSHA256: d.GetFileSHA256(), FileEncSHA256: d.GetFileEncSHA256(), Type: t})
		if err != nil {
			return
		}
		out = append(out, whatsapp.Media{Kind: kind, Name: name, MediaType: d.GetMimetype(),
			Size: int64(min(d.GetFileLength(), 1<<62)), Hash: hex.EncodeToString(d.GetFileSHA256()), Ref: ref})
	}
	if img := m.GetImageMessage(); img != nil {
		add(platform.KindPhoto, "", img, whatsmeow.MediaImage)
	}
	if doc := m.GetDocumentMessage(); doc != nil {
		add(platform.KindDocument, doc.GetFileName(), doc, whatsmeow.MediaDocument)
	}
	if audio := m.GetAudioMessage(); audio != nil {
		kind := platform.KindAudio
		if audio.GetPTT() {
			kind = platform.KindVoice
		}
		add(kind, "", audio, whatsmeow.MediaAudio)
	}
	if video := m.GetVideoMessage(); video != nil {
		add(platform.KindVideo, "", video, whatsmeow.MediaVideo)
	}
	if note := m.GetPtvMessage(); note != nil {
		add(platform.KindVideo, "", note, whatsmeow.MediaVideo)
	}
	return out
}

// Download fetches and decrypts a file into a temporary file (whatsmeow
// checks its hashes only once it has it whole) and reads it from there;
// Close removes it.
func (w *Whatsmeow) Download(ctx context.Context, m whatsapp.Media) (io.ReadCloser, error) {
	var ref mediaRef
	if err := json.Unmarshal(m.Ref, &ref); err != nil || !strings.HasPrefix(ref.DirectPath, "/") {
		return nil, &whatsapp.ServerError{Code: 400, Text: "not a WhatsApp media reference"}
	}
	tmp, err := os.CreateTemp("", "baton-whatsapp-download-*")
	if err != nil {
		return nil, fmt.Errorf("whatsapp: keep a download: %w", err)
	}
	bounded := &boundedFile{File: tmp, limit: whatsapp.MaxDownload + encryptionOverhead}
	err = w.cli.DownloadMediaWithPathToFile(ctx, ref.DirectPath, ref.FileEncSHA256, ref.FileSHA256, ref.MediaKey, ref.Type, "", false, bounded)
	if err == nil {
		_, err = tmp.Seek(0, io.SeekStart)
	}
	if err != nil {
		discard(tmp)
		return nil, downloadError(err)
	}
	return &tempFile{tmp}, nil
}

// encryptionOverhead is what WhatsApp's media encryption adds to a file:
// a block of padding and the 10-byte MAC.
const encryptionOverhead = 16 + 10

// errTooLarge refuses a download past the bound, whatever size its
// message told.
var errTooLarge = &whatsapp.ServerError{Code: 413, Text: "the media is larger than baton takes"}

// boundedFile is the file a download is written to, refusing to grow
// past limit: the adapter checks the size the message told, this the
// bytes the media server sends.
type boundedFile struct {
	*os.File
	limit int64
}

func (b *boundedFile) Write(p []byte) (int, error) {
	at, err := b.Seek(0, io.SeekCurrent)
	if err != nil {
		return 0, err
	}
	if at+int64(len(p)) > b.limit {
		return 0, errTooLarge
	}
	return b.File.Write(p)
}

func (b *boundedFile) WriteAt(p []byte, off int64) (int, error) {
	if off+int64(len(p)) > b.limit {
		return 0, errTooLarge
	}
	return b.File.WriteAt(p, off)
}

// WriteString and ReadFrom keep every write on Write (the embedded
// file's would pass it by).
func (b *boundedFile) WriteString(s string) (int, error) { return b.Write([]byte(s)) }

func (b *boundedFile) ReadFrom(r io.Reader) (int64, error) {
	return io.Copy(struct{ io.Writer }{b}, r)
}

// downloadError marks what no retry fixes: media the servers no longer
// have, or whose bytes do not match the message's hashes.
func downloadError(err error) error {
	switch {
	case errors.Is(err, errTooLarge):
		return errTooLarge
	case errors.Is(err, whatsmeow.ErrMediaDownloadFailedWith404), errors.Is(err, whatsmeow.ErrMediaDownloadFailedWith410):
		return fmt.Errorf("%w: %w", &whatsapp.ServerError{Code: 404, Text: "the media is no longer on WhatsApp's servers"}, err)
	case errors.Is(err, whatsmeow.ErrMediaDownloadFailedWith403):
		return fmt.Errorf("%w: %w", &whatsapp.ServerError{Code: 403, Text: "media download refused"}, err)
	case errors.Is(err, whatsmeow.ErrInvalidMediaSHA256), errors.Is(err, whatsmeow.ErrInvalidMediaEncSHA256), errors.Is(err, whatsmeow.ErrInvalidMediaHMAC):
		return fmt.Errorf("%w: %w", &whatsapp.ServerError{Code: 422, Text: "the media does not match its message"}, err)
	}
	return sendError(err)
}

// tempFile is a download kept in a temporary file, removed on Close.
type tempFile struct{ *os.File }

func (t *tempFile) Close() error { discard(t.File); return nil }

func discard(f *os.File) {
	_ = f.Close()
	_ = os.Remove(f.Name())
}

// SendFile uploads the file (encrypted, through a temporary file: body
// itself when it is one it may overwrite) and sends it as an image
// message with its caption, or as a document with its name (in the
// caption's envelope when it has one, as WhatsApp's apps send it), as
// the message with id.
func (w *Whatsmeow) SendFile(ctx context.Context, chat, id string, f whatsapp.Upload, body io.Reader) (string, error) {
	to, err := types.ParseJID(chat)
	if err != nil || to.User == "" {
		return "", fmt.Errorf("%w: %q", whatsapp.ErrBadChat, chat)
	}
	kind := whatsmeow.MediaDocument
	switch {
	case f.Voice:
		kind = whatsmeow.MediaAudio
	case f.Image:
		kind = whatsmeow.MediaImage
	}
	tmp, _ := body.(io.ReadWriteSeeker) // nil: whatsmeow makes its own
	up, err := w.cli.UploadReader(ctx, body, tmp, kind)
	if err != nil {
		return "", sendError(err)
	}
	resp, err := w.cli.SendMessage(ctx, to, fileMessage(f, up), whatsmeow.SendRequestExtra{ID: types.MessageID(id)})
	if err != nil {
		return "", sendError(err)
	}
	return resp.ID, nil
}

// fileMessage is the message carrying an uploaded file.
func fileMessage(f whatsapp.Upload, up whatsmeow.UploadResponse) *waE2E.Message {
	var caption *string
	if strings.TrimSpace(f.Caption) != "" {
		caption = proto.String(f.Caption)
	}
	media := f.MediaType
	if media == "" {
		media = "application/octet-stream"
	}
	if f.Voice {
		return &waE2E.Message{AudioMessage: &waE2E.AudioMessage{
			URL: proto.String(up.URL), DirectPath: proto.String(up.DirectPath), MediaKey: up.MediaKey,
			FileEncSHA256: up.FileEncSHA256, FileSHA256: up.FileSHA256, FileLength: proto.Uint64(up.FileLength),
			Mimetype: proto.String("audio/ogg; codecs=opus"), PTT: proto.Bool(true),
		}}
	}
	if f.Image {
		return &waE2E.Message{ImageMessage: &waE2E.ImageMessage{
			URL: proto.String(up.URL), DirectPath: proto.String(up.DirectPath), MediaKey: up.MediaKey,
			FileEncSHA256: up.FileEncSHA256, FileSHA256: up.FileSHA256, FileLength: proto.Uint64(up.FileLength),
			Mimetype: proto.String(media), Caption: caption,
		}}
	}
	doc := &waE2E.DocumentMessage{
		URL: proto.String(up.URL), DirectPath: proto.String(up.DirectPath), MediaKey: up.MediaKey,
		FileEncSHA256: up.FileEncSHA256, FileSHA256: up.FileSHA256, FileLength: proto.Uint64(up.FileLength),
		Mimetype: proto.String(media), FileName: proto.String(f.Name), Title: proto.String(f.Name), Caption: caption,
	}
	if caption == nil {
		return &waE2E.Message{DocumentMessage: doc}
	}
	return &waE2E.Message{DocumentWithCaptionMessage: &waE2E.FutureProofMessage{Message: &waE2E.Message{DocumentMessage: doc}}}
}
